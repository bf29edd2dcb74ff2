"""Verifiable rewards shared by training and evaluation."""

from tagrpo.rewards.math import extract_boxed, is_correct, math_reward

__all__ = ["extract_boxed", "is_correct", "math_reward"]
