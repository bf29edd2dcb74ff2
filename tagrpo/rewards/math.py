"""The math reward: last ``\\boxed{}`` of a response, checked against the reference with math-verify (gold first)."""

from __future__ import annotations

from math_verify import parse, verify


def extract_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (brace-matched) or ``\\boxed x`` in ``text``; None if there is none."""
    start = text.rfind("\\boxed")
    while start != -1:
        rest = text[start + len("\\boxed") :]
        if rest.startswith("{"):
            depth = 0
            for i, ch in enumerate(rest):
                depth += (ch == "{") - (ch == "}")
                if depth == 0:
                    return rest[1:i].strip()
        elif rest[:1] == " " and rest.strip():
            return rest.strip().split()[0].rstrip("$.")
        start = text.rfind("\\boxed", 0, start)
    return None


def _parse(answer: str):
    return parse(f"${answer}$", parsing_timeout=5)


def is_correct(response: str, gold) -> bool:
    """Whether the last boxed answer of ``response`` equals ``gold`` under math-verify."""
    predicted = extract_boxed(response)
    if predicted is None or gold is None:
        return False
    gold_parsed = _parse(str(gold))
    pred_parsed = _parse(predicted)
    if not gold_parsed or not pred_parsed:
        return predicted.strip() == str(gold).strip()
    return bool(verify(gold_parsed, pred_parsed, timeout_seconds=5))


def _text(completion) -> str:
    if isinstance(completion, list):  # conversational: [{"role": "assistant", "content": ...}]
        return completion[-1]["content"]
    return completion


def math_reward(completions, answer, **kwargs) -> list[float]:
    """TRL reward function: 1.0 when the response's last boxed answer matches ``answer``, else 0.0."""
    return [float(is_correct(_text(c), a)) for c, a in zip(completions, answer, strict=True)]
