"""At an equal budget of runs, the Optuna search's best gains vs the Latin hypercube's best.

For each seed: ``crossdyn tune biped-balance-tune --samples N-1`` (its declared
tune: a Latin hypercube) and ``--search optuna --trials N-1 --sampler S`` for each
sampler S (each plus the defaults: N runs), all choosing by the same rule (the
fastest-settling passing run, ``ok``, with no more effort than the defaults).  Prints every seed, including any
the search loses: both bests' settling time and effort, whether the search's
best settles sooner, and the search's front at the hypercube best's effort (its
fastest-settling ``ok`` trial using no more effort than the hypercube's best:
does the front dominate that point?).  Ends with each sampler's tally and its
wall per run, the sampler's own time included.

    python benchmarks/search_vs_lhs.py [--runs 64] [--seeds 0 1 2 3 4 5] [--samplers gp tpe] [--workers 2]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from crossdyn.experiments.biped.tune import BALANCE
from crossdyn.experiments.core.sweep.engine import TuneEngine
from crossdyn.experiments.core.sweep.experiment import tune
from crossdyn.experiments.core.sweep.search import SAMPLERS


def _best(result) -> tuple[float, float]:
    best = result.best
    if best is None:
        return float("inf"), float("inf")
    return float(best["settling_time_s"]), float(best["effort_N2m2s"])


def _front_at(result, effort: float) -> float:
    """Settling time of the fastest passing (``ok``) trial using no more than ``effort``, s (inf: none)."""
    settles = [float(r["settling_time_s"]) for r in result.rows
               if r["outcome"] == "pass" and float(r["effort_N2m2s"]) <= effort]
    return min(settles, default=float("inf"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=64, help="runs per method, the defaults included")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4, 5])
    parser.add_argument("--samplers", nargs="+", choices=list(SAMPLERS), default=list(SAMPLERS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--duration", type=float, default=4.0)
    args = parser.parse_args()
    rows: dict[str, list[tuple]] = {s: [] for s in args.samplers}
    seconds = {s: [0.0] for s in ["lhs", *args.samplers]}  # wall of each method over all seeds
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            common = dict(seed=seed, samples=args.runs - 1, fixed={"duration_s": repr(args.duration)}, plots=False,
                          engine=TuneEngine(workers=args.workers))
            start = time.perf_counter()
            lhs = tune(BALANCE, Path(tmp) / f"lhs{seed}", **common)
            seconds["lhs"][0] += time.perf_counter() - start
            default = float(lhs.rows[0]["settling_time_s"]), float(lhs.rows[0]["effort_N2m2s"])
            for sampler in args.samplers:
                start = time.perf_counter()
                found = tune(BALANCE, Path(tmp) / f"{sampler}{seed}", search="optuna", sampler=sampler, **common)
                seconds[sampler][0] += time.perf_counter() - start
                rows[sampler].append((seed, default, _best(lhs), _best(found), _front_at(found, _best(lhs)[1])))
            print(f"seed {seed} done", flush=True)
    print(f"\n{args.runs} runs per method ({args.duration:g} s balance recovery from 10 deg); best = fastest-settling "
          "passing ('ok') run with no more effort than the defaults; effort in (N m)^2 s")
    for sampler in args.samplers:
        print(f"\nsampler {sampler} ({SAMPLERS[sampler]})")
        print(f"{'seed':>4}  {'defaults settle/effort':>22}  {'LHS best settle/effort':>22}  "
              f"{'search best settle/effort':>25}  {'sooner':>6}  {'sooner, effort <= LHS':>21}  "
              f"{'search front at LHS effort':>26}")
        wins = fronts = 0
        for seed, (ds, de), (ls, le), (ss, se), fs in rows[sampler]:
            sooner = ss < ls
            wins += sooner
            fronts += fs < ls
            print(f"{seed:>4}  {ds:>10.3f} s {de:>8.3f}  {ls:>10.3f} s {le:>8.3f}  {ss:>13.3f} s {se:>8.3f}  "
                  f"{'yes' if sooner else 'NO':>6}  {'yes' if sooner and se <= le else 'no':>21}  "
                  f"{fs:>12.3f} s ({'sooner' if fs < ls else 'NOT sooner'})")
        n = len(rows[sampler])
        print(f"{sampler}: the search's best settles sooner than the hypercube's in {wins} of {n} seeds; its front "
              f"beats the hypercube's best at no more effort in {fronts} of {n}")
    per = len(args.seeds) * args.runs
    print("\nwall per run, the sampler included: " + ", ".join(
        f"{name} {1e3 * wall / per:.0f} ms" for name, (wall,) in seconds.items())
          + f" ({args.workers} workers)")


if __name__ == "__main__":
    main()
