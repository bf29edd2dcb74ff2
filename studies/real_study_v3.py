"""The real-model study, third version (issue 45): SmolLM2-135M-Instruct in three regimes (natural, model-made,
reasoning), 10 seeds, Holm over the six primary contrasts.

    .venv/bin/python studies/real_study_v3.py --settings natural --workers 2   # one regime, resumable
    .venv/bin/python studies/real_study_v3.py --render-only                    # the files from the cells on disk

Design: ``tagrpo/experiments/declarations/real_v3.py``; phases and flags: ``tagrpo.experiments.run`` (``--help``).
Cells: ``studies/results/real_study_v3_cells`` (committed as they land: a new machine resumes where the last stopped).
"""

import os

from tagrpo.experiments.run import main

if __name__ == "__main__":
    main("real_v3", results=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
