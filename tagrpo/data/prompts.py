"""Prompt templates shared by training and evaluation, so both see a question the same way."""

from __future__ import annotations

from tagrpo.common.modes import check_mode

PAPER_INSTRUCTION = (
    "You FIRST think about the reasoning process step by step and then provide the user with the answer. "
    "Please enclose your final answer in the box: \\boxed{}."
)
_BOX = "Answer with the number in \\boxed{}.\n"
_SUM = "Q: What is 2+2?\nA: 2+2=4. \\boxed{4}\n"
_STORY = "Q: Ann has 3 pens and gets 1 more. How many pens does Ann have?\nA: 3+1=4. \\boxed{4}\n"
FEW_SHOT = _BOX + _SUM + _STORY + "Q: {question}\nA:"
ONE_SHOT = _BOX + _STORY + "Q: {question}\nA:"
_TWO_STEP = ("Q: Ann has 3 pens and gets 1 more, then gives 2 away. How many pens does Ann have?\n"
             "A: 3+1=4. 4-2=2. \\boxed{2}\n")
TWO_STEP = _BOX + _TWO_STEP + "Q: {question}\nA:"
_THREE_SUM = ("Q: Ann has 3 pens and gets 1 more, then gets 2 more. How many pens does Ann have?\n"
              "A: 3+1=4. 4+2=6. \\boxed{6}\n")
THREE_SUM = _BOX + _THREE_SUM + "Q: {question}\nA:"
# paper: the paper's instruction, then the question; plain: the question alone; fewshot: two worked arithmetic
# examples with a boxed answer first (what a 135M instruct model needs to box at all); oneshot: the second of them
# only (about 25 fewer prompt tokens: benchmarks/real_throughput.py); twostep: one worked two-step example (a sum,
# then a difference) with its boxed answer; threesum: the same with two sums.
TEMPLATES = {"paper": PAPER_INSTRUCTION + "\n{question}", "plain": "{question}", "fewshot": FEW_SHOT,
             "oneshot": ONE_SHOT, "twostep": TWO_STEP, "threesum": THREE_SUM}


def format_prompt(text: str, template: str = "paper", chat: bool = False, system: str | None = None):
    """The question in ``template``; as a conversation when ``chat`` (TRL applies the chat template): one user
    message, after a system message ``system`` when it is not None (None: the chat template's own default)."""
    check_mode("template", template, tuple(TEMPLATES))
    body = TEMPLATES[template].replace("{question}", text)
    if not chat:
        return body
    return ([] if system is None else [{"role": "system", "content": system}]) + [{"role": "user", "content": body}]


def render_prompt(text: str, tokenizer, template: str = "paper", chat: bool = False, system: str | None = None) -> str:
    """The prompt string an inference engine receives: the chat template applied when ``chat``."""
    prompt = format_prompt(text, template, chat, system)
    if not chat:
        return prompt
    return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
