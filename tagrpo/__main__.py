"""``python -m tagrpo`` (and ``accelerate launch -m tagrpo train ...``)."""

import sys

from tagrpo.cli import main

sys.exit(main())
