"""Sweeps and searches over any experiment's parameters: planning, running at scale, resuming, choosing.

- :mod:`.engine`: where runs execute (inline, a local process pool, a Dask cluster);
- :mod:`.table`: the CSV table a sweep appends to and resumes from;
- :mod:`.run`: a planned sweep run with resume and a progress bar;
- :mod:`.space`: the parameters a sweep varies (``--vary NAME=LO:HI[:log]``) and its plan
  (the defaults, then a Latin hypercube or a grid);
- :mod:`.space`'s explicit values too (``a,b,c`` or ``lo:hi:n`` per name: a grid or a map) and a
  log-uniform Latin hypercube within named bounds;
- :mod:`.search`: an Optuna search of one metric or a front of two (Gaussian-process
  epsilon-constraint steps or TPE), LQR weights drawn as ratios, resumable;
- :mod:`.choice`: the Pareto front of two metrics and the best run within the defaults' budget;
- :mod:`.experiment`: ``crossdyn tune EXPERIMENT``: any registered experiment swept,
  searched or mapped, its best run chosen and plotted.
"""
