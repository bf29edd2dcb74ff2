"""LoRA through PEFT for ``tagrpo train``: the job keys and the ``peft.LoraConfig`` they make.

The keys keep TRL's names and defaults (``trl.ModelConfig``): ``use_peft``, ``lora_r`` (16), ``lora_alpha`` (32),
``lora_dropout`` (0.05) and ``lora_target_modules`` (unset: PEFT's default modules for the architecture; one
name such as ``all-linear`` is passed as a string, as TRL does). ``tagrpo.trainer.run.run_train`` hands the config
to the trainer as ``peft_config``, where TRL wraps the model with ``peft.get_peft_model``.

Nothing of TA-GRPO changes with an adapter. TRL computes the reference log-probs with the adapter disabled (the base
model) and the old log-probs with it enabled, both on the ``prompt_ids`` that ``TAGRPOTrainer._generate`` returns,
i.e. on q0 under ``anchor="original"`` (``tests/test_lora.py`` checks it against a separately loaded base model;
``tagrpo.trainer.contract`` names the clause). Checkpoints and ``output_dir/final`` then hold the adapter only
(``adapter_config.json``, ``adapter_model.safetensors``), which ``tagrpo eval --model`` reads with its base.
"""

from __future__ import annotations

from tagrpo.common.errors import InputError

LORA_KEYS = ("lora_r", "lora_alpha", "lora_dropout", "lora_target_modules")


def check_lora_keys(values: dict) -> None:
    """Refuse LoRA keys given without ``use_peft``: full-parameter training would ignore them silently."""
    given = [k for k in LORA_KEYS if k in values]
    if given and values.get("use_peft") is not True:
        raise InputError(f"{', '.join(given)} given without use_peft=true, which trains a LoRA adapter")


def lora_config(job):
    """The ``peft.LoraConfig`` of ``job`` (a ``TrainJob``), or None when ``use_peft`` is false."""
    if not job.use_peft:
        return None
    if job.lora_r < 1:
        raise InputError(f"lora_r must be >= 1, got {job.lora_r}")
    if job.lora_alpha <= 0:
        raise InputError(f"lora_alpha must be > 0, got {job.lora_alpha}")
    if not 0 <= job.lora_dropout < 1:
        raise InputError(f"lora_dropout must be in [0, 1), got {job.lora_dropout}")
    try:
        from peft import LoraConfig
    except ImportError as err:
        raise InputError("use_peft=true needs peft: pip install 'tagrpo[peft]'") from err
    targets = job.lora_target_modules
    if isinstance(targets, list | tuple) and len(targets) == 1:
        targets = targets[0]  # `all-linear` and regular expressions are strings to PEFT
    return LoraConfig(
        task_type="CAUSAL_LM", r=job.lora_r, lora_alpha=job.lora_alpha, lora_dropout=job.lora_dropout,
        target_modules=targets, bias="none",
    )
