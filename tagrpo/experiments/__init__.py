"""The experiment harness. The demo (``tagrpo demo``): the arms (:mod:`~tagrpo.experiments.arms`), the run that trains
and evaluates them (:mod:`~tagrpo.experiments.demo`), its report and plots (:mod:`~tagrpo.experiments.report`).
The studies: a study is a declaration (:mod:`~tagrpo.experiments.study`, one per study in
:mod:`~tagrpo.experiments.declarations`) on a task (:mod:`~tagrpo.experiments.tasks`), run by one phase runner
(:mod:`~tagrpo.experiments.run`) over one cell runner (:mod:`~tagrpo.experiments.cells`), judged by one verdict
engine (:mod:`~tagrpo.experiments.judge`) and drawn by one renderer (:mod:`~tagrpo.experiments.render`). The world
and its tiny model are in :mod:`tagrpo.toy`."""
