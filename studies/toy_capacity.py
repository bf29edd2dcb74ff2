"""The capacity point of issue 32: the regime study's primary arms and both candidates at hard_share 0.6 on a 4x base.

    .venv/bin/python studies/toy_capacity.py --workers 2                 # everything, resumable
    .venv/bin/python studies/toy_capacity.py --render-only               # the files from the cells on disk

Design: ``tagrpo/experiments/declarations/capacity.py``; phases and flags: ``tagrpo.experiments.run`` (``--help``).
Cells: ``studies/results/toy_capacity_cells`` (committed as they land: a new machine resumes where the last stopped).
"""

import os

from tagrpo.experiments.run import main

if __name__ == "__main__":
    main("capacity", results=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
