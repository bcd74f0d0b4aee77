"""Control design and control laws (python-control/NumPy; never imports mujoco).

Controllers take arrays and return arrays; ``experiments/`` closes the loop in
MuJoCo.
"""
