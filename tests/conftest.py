"""Test-wide settings: headless plotting and rendering."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
# Off-screen rendering through EGL (Mesa's software renderer on a CPU machine);
# set before any test imports mujoco, which picks its GL backend on import.
os.environ.setdefault("MUJOCO_GL", "egl")
