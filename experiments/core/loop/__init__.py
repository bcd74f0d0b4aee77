"""The closed loop: a controller reading sensors and commanding actuators, stepped in MuJoCo.

- :mod:`.simulate`: one run (:func:`~.simulate.simulate`), in Python or, for a compiled
  controller, in C (:mod:`~crossdyn.experiments.core.loop.compiled`), the same rows bit for bit;
- :mod:`.batch`: many runs of one model in lockstep on MuJoCo's thread pool
  (:func:`~.batch.simulate_batch`), each the run ``simulate`` makes;
- :mod:`.setup`: the one set-up every run shares (model, control period, imperfections,
  initial state, the checks of a controller's return);
- :mod:`.kinds`: what a controller is, declared (``typing.Protocol``): plain, writing its
  command, compiled;
- :mod:`.trace`: what a controller observes and what a run returns;
- :mod:`.control_rate`: the control period in effect, for designs made before the run.
"""
