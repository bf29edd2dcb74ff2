"""Prompt templates shared by training and evaluation, so both see a question the same way."""

from __future__ import annotations

from tagrpo.modes import check_mode

PAPER_INSTRUCTION = (
    "You FIRST think about the reasoning process step by step and then provide the user with the answer. "
    "Please enclose your final answer in the box: \\boxed{}."
)
FEW_SHOT = (
    "Answer with the number in \\boxed{}.\n"
    "Q: What is 2+2?\nA: 2+2=4. \\boxed{4}\n"
    "Q: Ann has 3 pens and gets 1 more. How many pens does Ann have?\nA: 3+1=4. \\boxed{4}\n"
    "Q: {question}\nA:"
)
# paper: the paper's instruction, then the question; plain: the question alone; fewshot: two worked arithmetic
# examples with a boxed answer first (what a 135M instruct model needs to box at all).
TEMPLATES = {"paper": PAPER_INSTRUCTION + "\n{question}", "plain": "{question}", "fewshot": FEW_SHOT}


def format_prompt(text: str, template: str = "paper", chat: bool = False):
    """The question in ``template``; as a one-message conversation when ``chat`` (TRL applies the chat template)."""
    check_mode("template", template, tuple(TEMPLATES))
    body = TEMPLATES[template].replace("{question}", text)
    return [{"role": "user", "content": body}] if chat else body


def render_prompt(text: str, tokenizer, template: str = "paper", chat: bool = False) -> str:
    """The prompt string an inference engine receives: the chat template applied when ``chat``."""
    prompt = format_prompt(text, template, chat)
    if not chat:
        return prompt
    return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
