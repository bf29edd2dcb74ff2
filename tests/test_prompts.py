"""Prompt templates and the chat conversation ``format_prompt`` builds (with or without a system message)."""

from __future__ import annotations

from tagrpo.data.prompts import TEMPLATES, format_prompt


def test_chat_prompt_is_one_user_message_unless_a_system_message_is_given():
    assert format_prompt("What is 2+3?", "plain", chat=True) == [{"role": "user", "content": "What is 2+3?"}]
    assert format_prompt("What is 2+3?", "plain", chat=True, system="") == [
        {"role": "system", "content": ""}, {"role": "user", "content": "What is 2+3?"}]
    assert format_prompt("What is 2+3?", "plain", chat=False, system="ignored") == "What is 2+3?"


def test_oneshot_is_fewshot_without_its_first_example():
    one, few = TEMPLATES["oneshot"], TEMPLATES["fewshot"]
    assert few.replace("Q: What is 2+2?\nA: 2+2=4. \\boxed{4}\n", "") == one
    assert one.endswith("Q: {question}\nA:") and one.count("\\boxed{4}") == 1
