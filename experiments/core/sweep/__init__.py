"""Sweeps and searches over any experiment's parameters: planning (:mod:`.space`), running where
(:mod:`.engine`) with resume (:mod:`.run`, :mod:`.table`), Optuna searches (:mod:`.search`),
choosing (:mod:`.choice`), and ``crossdyn tune EXPERIMENT`` itself (:mod:`.experiment`, :mod:`.tuning`)."""
