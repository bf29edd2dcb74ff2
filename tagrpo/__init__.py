"""tagrpo: Transformation-Augmented GRPO (arXiv:2601.22478) for TRL.

Shape alphabet used in every ``# (...)`` comment of the package:

- ``B``: original questions in a batch;  ``N``: rephrasings per question, so ``N+1`` variants
  (index 0 is the original question ``q0``);  ``G``: samples per variant (``num_generations``);
- ``R``: flattened rows, one per sampled response (``B*(N+1)*G`` for whole pools);
- ``P``: prompt tokens;  ``T``: completion tokens;  ``K``: number of ``k`` values in pass@k.
"""

__version__ = "0.1.0"
