"""Train rows shared by the trainer tests of every tier (no heavy imports: the verl and vLLM tiers use it too)."""

from __future__ import annotations


def pool_rows(num_questions=4, num_rephrasings=3):
    """Rows whose prompt text names the question and the variant: 'Q2 v0: ...' is q0 of question 2."""
    return [
        {
            "id": f"q{i}",
            "prompt": f"Q{i} v0: what is {i}+1?",
            "answer": str(i + 1),
            "rephrasings": [f"Q{i} v{n}: add {i} and 1" for n in range(1, num_rephrasings + 1)],
        }
        for i in range(num_questions)
    ]
