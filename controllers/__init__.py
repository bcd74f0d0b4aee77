"""Control design and control laws (python-control/NumPy; never imports mujoco).

Controllers take arrays and return arrays; ``experiments/`` closes the loop in
MuJoCo.  :mod:`.lqr` is the generic design (continuous, discrete, gain schedules
and their C export); one robot's control laws live in its own package
(:mod:`.biped`).
"""
