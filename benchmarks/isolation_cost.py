"""What running user code in worker processes costs (experiments.core.isolation).

Prints, each the best of a few repeats (on a shared machine other load only adds time):

  1. a worker's start: a fork of this process (crossdyn imported) loading the
     registry; paid once per run (and once more after each crash or timeout);
  2. per experiment: the cost of one more trivial experiment (runs of N and 4N),
     in a worker vs in this process (pickling, the pipe, the parent's bookkeeping);
  3. a real short experiment (two-link-lagrange), whole run, isolated vs in-process;
  4. per check: ``check derivation`` of a correct two-link derivation in a fresh
     worker vs in this process (the worker's start is the whole difference).

    python benchmarks/isolation_cost.py [--repeats R] [--count N]
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
from pathlib import Path

from timing import best_time

TRIVIAL = """\
from crossdyn import experiment

for i in range({count}):
    experiment(f"trivial-{{i}}", summary="nothing", expected="pass")(
        lambda ctx: {{"passed": True, "measured": "ok", "value": 1.0}})
"""

DERIVATION = """\
from crossdyn.experiments.core.checks.derivation import tree_from_model
from crossdyn.experiments.core.models import load_model
from crossdyn.analytic.rnea import rnea

TREE = tree_from_model(load_model("two_link_arm"))

def tau(q, qd, qdd):
    return rnea(TREE, q, qd, qdd)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--count", type=int, default=80, help="trivial experiments in the longer run")
    args = parser.parse_args()

    from crossdyn.experiments.core import isolation
    from crossdyn.experiments.core.checks.derivation import check_derivation, check_isolated
    from crossdyn.experiments.core.registry import experiments, get
    from crossdyn.experiments.core.runner import experiment_pool, run_experiments

    work = Path(tempfile.mkdtemp(prefix="crossdyn-isolation-"))
    source = work / "trivial.py"
    source.write_text(TRIVIAL.format(count=args.count))
    sources = (str(source),)
    registry = experiments(sources)
    trivial = [registry[f"trivial-{i}"] for i in range(args.count)]

    def start_worker():
        pool = experiment_pool(1, sources)
        pool.start()
        pool.close()

    start, _ = best_time(start_worker, args.repeats)
    print(f"worker start (a fork of this process, load the registry): {start:.2f} s, once per run")

    def trivial_run(isolate: bool, count: int):
        def run():
            run_experiments(trivial[:count], work / f"trivial-{isolate}", sources=sources, isolate=isolate)
        return run

    slopes = {}
    for isolate in (False, True):
        few, _ = best_time(trivial_run(isolate, args.count // 4), args.repeats)
        many, _ = best_time(trivial_run(isolate, args.count), args.repeats)
        slopes[isolate] = (many - few) / (args.count - args.count // 4)
    print(f"one more trivial experiment: in this process {1e3 * slopes[False]:.1f} ms, in a worker "
          f"{1e3 * slopes[True]:.1f} ms ({1e3 * (slopes[True] - slopes[False]):+.1f} ms per experiment)")

    real = [get("two-link-lagrange")]

    def real_run(isolate: bool):
        return lambda: run_experiments(real, work / f"real-{isolate}", short=True, isolate=isolate)

    real_inline, _ = best_time(real_run(False), args.repeats)
    real_isolated, _ = best_time(real_run(True), args.repeats)
    print(f"two-link-lagrange --short, whole run: in this process {real_inline:.2f} s, isolated "
          f"{real_isolated:.2f} s (x{real_isolated / real_inline:.2f}, +{real_isolated - real_inline:.2f} s)")

    (work / "derivation.py").write_text(DERIVATION)
    spec = f"{work / 'derivation.py'}:tau"
    for samples in (10, 10_000):
        check_derivation(spec, "two_link_arm", samples=samples)  # warm: imports and compiled code
        inline, report = best_time(functools.partial(check_derivation, spec, "two_link_arm", samples=samples),
                                   args.repeats)
        isolated, report_iso = best_time(functools.partial(check_isolated, spec, "two_link_arm", samples=samples),
                                         args.repeats)
        assert report.passed and report_iso.passed and report.max_abs_error == report_iso.max_abs_error
        print(f"check derivation, {samples:>6,} states: in this process {inline:.2f} s, in a worker "
              f"{isolated:.2f} s (+{isolated - inline:.2f} s per check)")
    bare, _ = best_time(lambda: isolation.call(len, ()), args.repeats)
    print(f"a bare worker (started, ready, one trivial task, gone): {bare:.2f} s")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
