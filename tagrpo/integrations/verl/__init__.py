"""TA-GRPO as an add-on to an unmodified verl release (``docs/verl.md``).

- ``advantage``: the estimators ``ta_grpo`` / ``ta_grpo_variant``, registered with verl on import;
- ``expand``: each sampled question becomes its N+1 prompts inside the step (pool and variant kept in the uid);
- ``anchor``: rows rebuilt as ``[q0's prompt | response]`` before the old log-probs (``anchor=original``);
- ``trainer``: ``TAGRPORayTrainer`` (a narrow ``RayPPOTrainer`` subclass) and its Ray task runner;
- ``main``: ``python -m tagrpo.integrations.verl.main`` (Hydra, on verl's ``ppo_trainer`` configuration);
- ``convert``: rephrased questions to verl's parquet rows;  ``reward``: ``compute_score`` with the math reward.

``expand``, ``anchor``, ``advantage``'s functions, ``convert``, ``reward`` and ``settings`` import without verl;
``trainer`` and ``main`` need it (``pip install verl==0.9.1`` in its own environment, see the docs).
"""

from tagrpo.integrations.verl.settings import TAGRPOSettings

__all__ = ["TAGRPOSettings"]
