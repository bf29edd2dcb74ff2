"""TAGRPOTrainer on TRL's GRPOTrainer (single process, or several under ``accelerate launch``); the adaptive pool
modes in the opt-in AdaptiveTAGRPOTrainer."""

from tagrpo.trainer.adaptive import AdaptiveTAGRPOTrainer
from tagrpo.trainer.config import TAGRPOConfig
from tagrpo.trainer.trainer import TAGRPOTrainer

__all__ = ["AdaptiveTAGRPOTrainer", "TAGRPOConfig", "TAGRPOTrainer"]
