"""A command's start-up: registering every experiment imports none of the heavy libraries a run may need.

``crossdyn list`` (and every command, worker and pytest run before its first
experiment) imports every system's module to register its experiments.  SymPy,
python-control, ``mujoco.sysid`` (SciPy's signal and stats) and SciPy's integrate
together cost about 4 s of that on a loaded 2-core machine; they are imported
where they are used.  This test fails when a module imports one at its top again.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("sympy", "control", "mujoco.sysid", "scipy.integrate", "scipy.signal", "scipy.stats")


def test_listing_the_experiments_imports_no_heavy_library():
    code = ("import contextlib, io, json, sys\n"
            "from crossdyn.experiments.core.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['list'])\n    except SystemExit:\n        pass\n"
            f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
            "print(json.dumps(['crossdyn.experiments.lagrange' in sys.modules]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    heavy, registered = (json.loads(line) for line in out.stdout.strip().splitlines()[-2:])
    assert registered == [True]  # the systems' modules were imported (the symbolic arm's among them)
    assert heavy == []
    assert "cart-pole-lqr" not in out.stdout  # the listing itself went to the redirected stream
