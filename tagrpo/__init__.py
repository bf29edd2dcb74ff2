"""tagrpo: Transformation-Augmented GRPO (arXiv:2601.22478) for TRL.

Shape alphabet used in every ``# (...)`` comment of the package:

- ``B``: original questions in a batch;  ``N``: rephrasings per question, so ``N+1`` variants (``V`` where
  the variants are an axis; index 0 is the original question ``q0``);  ``G``: samples per variant
  (``num_generations``);
- ``R``: flattened rows, one per sampled response (``B*(N+1)*G`` for whole pools); ``R_all``: the rows of all
  processes;  ``F``: reward functions;
- ``H``: normalisation groups per question (1 for the pool, ``N+1`` per variant);  ``M``: rewards in one
  normalisation group (``(N+1)*G`` or ``G``);
- ``P``: prompt tokens;  ``T``: completion tokens;  ``L``: tokens of a padded pretraining sequence;
- ``Q``: questions of an evaluation;  ``K``: number of ``k`` values in pass@k;
- ``S``: texts (sequences) of a batch outside the RL step (pretraining, embeddings);  ``D``: embedding width.
"""

__version__ = "0.1.0"

from tagrpo.common.registry import declare_plugins  # noqa: E402

# The toy world's benchmark, question source and rephrase backend: imported by the registries on their first use,
# not here, so that importing the package (or tagrpo.core) loads neither the toy world nor the rephraser.
declare_plugins("tagrpo.toy.plugins")
