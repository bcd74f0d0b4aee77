"""Hand-derived dynamics models (NumPy/SciPy/SymPy only; never imports mujoco).

Each module models one system or one algorithm and names its source equation;
``experiments/`` fills their parameter objects from compiled MJCF models and
compares them with MuJoCo.
"""
