"""Prompt templates shared by training and evaluation, so both see a question the same way."""

from __future__ import annotations

from tagrpo.modes import check_mode

PAPER_INSTRUCTION = (
    "You FIRST think about the reasoning process step by step and then provide the user with the answer. "
    "Please enclose your final answer in the box: \\boxed{}."
)
TEMPLATES = {"paper": PAPER_INSTRUCTION + "\n{question}", "plain": "{question}"}


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
