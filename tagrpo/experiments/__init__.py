"""The experiment harness on the embedded world: the arms (:mod:`~tagrpo.experiments.arms`), the demo that trains
and evaluates them (:mod:`~tagrpo.experiments.demo`, ``tagrpo demo``), its report and plots
(:mod:`~tagrpo.experiments.report`), the verdicts (:mod:`~tagrpo.experiments.verdicts`) and the regime study's
declared design (:mod:`~tagrpo.experiments.study`). The world and its tiny model are in :mod:`tagrpo.toy`."""
