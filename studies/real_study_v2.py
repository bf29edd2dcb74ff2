"""The real-model study, second version (issue 33): SmolLM2-135M-Instruct, clean splits, a two-seed sweep, 10 seeds.

    .venv/bin/python studies/real_study_v2.py --workers 2                 # everything, resumable
    .venv/bin/python studies/real_study_v2.py --render-only               # the files from the cells on disk

Design: ``tagrpo/experiments/declarations/real_v2.py``; phases and flags: ``tagrpo.experiments.run`` (``--help``).
Cells: ``studies/results/real_study_v2_cells`` (committed as they land: a new machine resumes where the last stopped).
"""

import os

from tagrpo.experiments.run import main

if __name__ == "__main__":
    main("real_v2", results=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
