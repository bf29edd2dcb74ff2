"""TAGRPOTrainer on TRL's GRPOTrainer (single process, or several under ``accelerate launch``)."""

from tagrpo.trainer.config import TAGRPOConfig
from tagrpo.trainer.trainer import TAGRPOTrainer

__all__ = ["TAGRPOConfig", "TAGRPOTrainer"]
