"""The regime map, second version (issue 32): every arm's rate swept at every knob, the cause-separating arms.

    .venv/bin/python studies/toy_regime_v2.py --workers 2                 # everything, resumable
    .venv/bin/python studies/toy_regime_v2.py --render-only               # the files from the cells on disk

Design: ``tagrpo/experiments/declarations/embedded_v2.py``; phases and flags: ``tagrpo.experiments.run`` (``--help``).
Cells: ``studies/results/toy_regime_v2_cells`` (committed as they land: a new machine resumes where the last stopped).
"""

import os

from tagrpo.experiments.run import main

if __name__ == "__main__":
    main("embedded_v2", results=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
