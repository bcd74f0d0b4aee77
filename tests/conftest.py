"""Test-wide settings: headless plotting and rendering."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
# Off-screen rendering through EGL (Mesa's software renderer on a CPU machine);
# set before any test imports mujoco, which picks its GL backend on import.
os.environ.setdefault("MUJOCO_GL", "egl")

# C controllers compile into a scratch cache for the session, never the user's ~/.cache (the test
# processes and the workers they start inherit it); removed when the session's first process ends.
if "CROSSDYN_C_CACHE" not in os.environ:
    import atexit
    import shutil
    import tempfile

    os.environ["CROSSDYN_C_CACHE"] = tempfile.mkdtemp(prefix="crossdyn-c-cache-")
    atexit.register(shutil.rmtree, os.environ["CROSSDYN_C_CACHE"], ignore_errors=True)
