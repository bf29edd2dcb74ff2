"""Add-ons that run TA-GRPO inside other training frameworks, without forking them.

- ``tagrpo.integrations.verl``: an advantage estimator, a trainer subclass, a data converter and a reward function
  for an unmodified verl release (see ``docs/verl.md``).
"""
