"""What crossdyn's pytest plugin costs a test suite that does not use it.

Writes a small suite (one module of 50 trivial tests, a few with ``tmp_path``)
in a temporary folder outside crossdyn and runs ``python -m pytest -q`` on it,
alternating with and without ``-p no:crossdyn`` (the plugin off), each in a fresh
interpreter, start-up included.  Prints the best wall time of each (the minimum:
on a shared machine other load only adds time), their ratio (aim: 1.00 within
the noise), the time of importing the plugin module alone, and checks that the
two runs print the same apart from pytest's own header and timings.

    python benchmarks/pytest_plugin_overhead.py [--repeats N]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUITE = """
import pytest


@pytest.mark.parametrize("x", range(40))
def test_arithmetic(x):
    assert x + x == 2 * x


@pytest.mark.parametrize("n", range(10))
def test_files(tmp_path, n):
    (tmp_path / "f.txt").write_text(str(n))
    assert (tmp_path / "f.txt").read_text() == str(n)
"""


def _run(folder: Path, *extra: str) -> tuple[float, str]:
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra]
    start = time.perf_counter()
    done = subprocess.run(args, cwd=folder, capture_output=True, text=True, env={**os.environ, "MPLBACKEND": "Agg"})
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"pytest failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return seconds, re.sub(r"in \d+\.\d+s", "in Ts", done.stdout + done.stderr)


def _import_time() -> float:
    """Seconds to import crossdyn.testing.plugin in a fresh interpreter that has imported pytest already."""
    code = ("import time, pytest\nt = time.perf_counter()\nimport crossdyn.testing.plugin\n"
            "print(time.perf_counter() - t)")
    return min(float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
               for _ in range(5))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="runs of each (default 15)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "pytest.ini").write_text("[pytest]\n")
        (folder / "test_small.py").write_text(SUITE)
        on, off = [], []
        for _ in range(args.repeats):  # alternate, so slow spells of the machine hit both alike
            seconds, out_on = _run(folder)
            on.append(seconds)
            seconds, out_off = _run(folder, "-p", "no:crossdyn")
            off.append(seconds)
    same = out_on == out_off
    print(f"pytest on 50 trivial tests, best of {args.repeats} fresh runs each:")
    print(f"  plugin on (as installed):   {min(on):.3f} s")
    print(f"  plugin off (-p no:crossdyn): {min(off):.3f} s")
    median = sorted(on)[len(on) // 2] / sorted(off)[len(off) // 2]
    print(f"  ratio on/off: {min(on) / min(off):.3f}   (median of runs: {median:.3f})")
    print(f"  importing crossdyn.testing.plugin alone: {1000 * _import_time():.1f} ms")
    print(f"  output identical: {'yes' if same else 'NO'}")
    if not same:
        sys.exit(f"outputs differ:\n--- on\n{out_on}\n--- off\n{out_off}")


if __name__ == "__main__":
    main()
