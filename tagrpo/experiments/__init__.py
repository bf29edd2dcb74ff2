"""The study framework: a study is a declaration (:mod:`~tagrpo.experiments.study`, one per study in
:mod:`~tagrpo.experiments.declarations`) on a task (:mod:`~tagrpo.experiments.tasks`), run by one phase runner
(:mod:`~tagrpo.experiments.run`) over one cell runner (:mod:`~tagrpo.experiments.cells`), judged by one verdict
engine (:mod:`~tagrpo.experiments.judge`) and drawn by one renderer (:mod:`~tagrpo.experiments.render`). The embedded
world's tasks train their arms with ``tagrpo demo``'s run (:mod:`tagrpo.demo`); the worlds and their tiny models are
in :mod:`tagrpo.toy`, the real model's sum problems in :mod:`tagrpo.data.sum_problems`."""
