"""``tagrpo demo``: the arms (:mod:`~tagrpo.demo.arms`) trained from one pretrained base on an embedded world, its
settings (:mod:`~tagrpo.demo.config`, no torch, so ``--help`` is quick), the run that trains and evaluates them
(:mod:`~tagrpo.demo.run`), its numbers by name (:mod:`~tagrpo.demo.metrics`) and its report and plots
(:mod:`~tagrpo.demo.report`). The studies of :mod:`tagrpo.experiments` train their embedded-world arms with this
run."""
