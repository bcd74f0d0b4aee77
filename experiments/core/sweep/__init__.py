"""Sweeps and searches over any experiment's parameters, ``crossdyn tune EXPERIMENT`` (:mod:`.experiment`):
planning (:mod:`.space`), running where (:mod:`.engine`) with resume (:mod:`.run`, :mod:`.table`), Optuna
searches (:mod:`.search`), choosing (:mod:`.choice`) and plotting (:mod:`.plots`)."""
