"""Every study, declared before its cells ran: one module per study, each with its ``STUDY``
(``tagrpo.experiments.study.Study``). ``tagrpo.experiments.study.declared(name)`` finds one by name."""
