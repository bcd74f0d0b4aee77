"""Wall time of the full ``crossdyn run``: serial vs ``--workers 2``.

Runs every registered experiment three times, each as a user would (a fresh
``crossdyn run`` process, start-up included), and prints

  1. 2 workers in a fresh output folder (run order) vs serial: speed-up, aim >= 1.6x;
  2. 2 workers where the serial run's timing.json files are (longest first);
  3. the bound for 2 workers: max(total / 2, longest experiment);

and checks that all three wrote byte-identical metrics.  The machine is shared,
so the ratios are of single runs on whatever load there is; repeat to be sure.

    python benchmarks/run_speed.py [--short] [--workers K]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _timed_run(out: Path, workers: int, short: bool) -> float:
    args = [sys.executable, "-m", "crossdyn.experiments", "run", "--out", str(out), "--workers", str(workers)]
    start = time.perf_counter()
    done = subprocess.run(args + (["--short"] if short else []), capture_output=True, text=True,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: some experiment missed its expectation, still a full run
        sys.exit(f"crossdyn run failed ({done.returncode}): {done.stderr.strip()}")
    return seconds


def _metrics(out: Path) -> dict[str, bytes]:
    return {p.parent.name: p.read_bytes() for p in sorted(out.glob("*/metrics.json"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="the reduced experiments the test suite runs")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        serial = _timed_run(tmp / "serial", 1, args.short)
        fresh = _timed_run(tmp / "fresh", args.workers, args.short)
        shutil.copytree(tmp / "serial", tmp / "timed", ignore=shutil.ignore_patterns("metrics.json", "*.png",
                                                                                    "*.md", "*.mp4"))
        timed = _timed_run(tmp / "timed", args.workers, args.short)
        walls = [json.loads(p.read_text())["wall_time_s"] for p in (tmp / "serial").glob("*/timing.json")]
        runs = {name: _metrics(tmp / name) for name in ("serial", "fresh", "timed")}
        differ = sorted({exp for exp, data in runs["serial"].items()
                         if any(runs[other].get(exp) != data for other in ("fresh", "timed"))})
        count = len(runs["serial"])
    bound = max(sum(walls) / args.workers, max(walls))
    print(f"crossdyn run{' --short' if args.short else ''}: {count} experiments, {os.cpu_count()} cores")
    print(f"  serial                          {serial:7.1f} s  (experiments alone {sum(walls):.1f} s, "
          f"longest {max(walls):.1f} s)")
    print(f"  --workers {args.workers}, fresh folder       {fresh:7.1f} s  speed-up {serial / fresh:.2f}x "
          f"(aim >= 1.6x)")
    print(f"  --workers {args.workers}, longest first      {timed:7.1f} s  speed-up {serial / timed:.2f}x")
    print(f"  bound max(total/{args.workers}, longest)       {bound:7.1f} s  speed-up {serial / bound:.2f}x at most")
    print(f"  metrics identical across the three runs: {not differ}" + (f" (differ: {', '.join(differ)})"
                                                                         if differ else ""))


if __name__ == "__main__":
    main()
