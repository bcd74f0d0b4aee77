"""``crossdyn list`` and ``crossdyn run``."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from .. import baseline, user_code
from ..baseline import DEFAULT_ATOL, DEFAULT_RTOL
from ..errors import ParameterError
from ..files import make_out_dir
from ..junit import write_junit
from ..limits import SEED_MAX, TIMEOUT_MAX, WORKERS_MAX
from ..registry import experiments, get
from ..runner import experiment_pool, pool_with_sources_imported, run_experiments, summary_table
from ..safe_text import one_line
from . import arguments

__all__ = ["add_parser", "add_list_parser"]

DEFAULT_OUT = Path("results")


def _load(sources, workers: int = 1, timeout: float | None = None):
    """The registry with users' ``sources``, and the run's pool of up to ``workers`` worker processes.

    A user's file is imported in a worker first, so one that ends the process or hangs
    while being imported is one line; only then is it imported here, where the run
    needs its experiments' names, parameters and tolerances.
    """
    if not sources:
        pool = experiment_pool(workers)
        pool.start(wait=False)  # a first worker starts (imports MuJoCo, the registry) while this process does
    else:
        pool = pool_with_sources_imported(sources, workers, timeout=timeout)
        user_code.LOADED_HERE = True  # its atexit handlers and threads must not decide crossdyn's exit
    try:
        return experiments(sources), pool
    except BaseException:
        pool.terminate()
        raise


def _cmd_list(args) -> int:
    if args.sources:  # users' files: imported in a worker first (see _load)
        registry, pool = _load(args.sources)
        pool.terminate()
    else:
        registry = experiments()
    width = max(len(name) for name in registry)
    for name, exp in registry.items():
        print(f"{name:<{width}}  {one_line(exp.summary)}")
        print(f"{'':<{width}}  expected: {one_line(exp.expected_for({k: p.default for k, p in exp.params.items()}))}")
        for key, p in exp.params.items():
            print(f"{'':<{width}}  --set {one_line(key)}={one_line(p.default)}  ({one_line(p.help)})")
    return 0


def _cmd_run(args) -> int:
    registry, pool = _load(args.sources, args.workers, args.timeout)
    try:
        selected = [get(name) for name in args.names] if args.names else list(registry.values())
        if args.mjcf is not None:
            _take_mjcf(args, selected)
        stored = (baseline.load(args.baseline, [e.name for e in selected], allow_new=args.allow_new)
                  if args.baseline else None)
        out = make_out_dir(args.out)
        for folder in (args.save_baseline, args.junit.parent if args.junit else None):
            if folder is not None:
                make_out_dir(folder)
        outcomes = run_experiments(
            selected, out, short=args.short, seed=args.seed, overrides=dict(args.set), video=args.video,
            progress=arguments.progress(), workers=args.workers, sources=args.sources, baseline=stored,
            allow_new=args.allow_new, command=shlex.join(["crossdyn", *getattr(args, "argv", sys.argv[1:])]),
            timeout=args.timeout, pool=pool)
    finally:
        pool.terminate()  # nothing left to do if the run closed it
    print(summary_table(outcomes), end="")
    for o in outcomes:
        if o.error:
            print(f"{o.name}: {one_line(o.error, 500)}", file=sys.stderr)
    if stored is not None:
        # Given baselines, run_experiments compares every outcome: each carries its Comparison.
        report = baseline.report([o.baseline for o in outcomes if o.baseline is not None], args.baseline)
        print("".join(one_line(line, 500) + "\n" for line in report.splitlines()), end="")
    if args.save_baseline:
        _save_baseline(args.save_baseline, outcomes)
    if args.junit:
        write_junit(args.junit, outcomes)
    failed = [o for o in outcomes if not o.passed]
    drifted = [o for o in outcomes if o.baseline is not None and not o.baseline.passed]
    tail = f"; {len(drifted)} drifted from the baseline" if stored is not None else ""
    print(f"{len(outcomes) - len(failed)}/{len(outcomes)} as expected{tail}; results in {args.out} "
          f"(open {Path(args.out) / 'index.html'})")
    return 0 if all(o.ok for o in outcomes) else 1


def _take_mjcf(args, selected) -> None:
    """``--mjcf PATH``: the ``mjcf`` parameter of every selected experiment that takes a model.

    Raises:
      ParameterError: no selected experiment takes one, or ``--set mjcf=`` is given too.
    """
    takers = [e.name for e in selected if "mjcf" in e.params]
    if not takers:
        raise ParameterError("--mjcf: none of the selected experiments takes a model (an 'mjcf' parameter)")
    if any(key == "mjcf" for key, _ in args.set):
        raise ParameterError("give the model once: --mjcf PATH or --set mjcf=PATH")
    args.set.append(("mjcf", args.mjcf))
    if args.names:
        others = [e.name for e in selected if "mjcf" not in e.params]
        if others:
            raise ParameterError(f"--mjcf: {', '.join(others)} take(s) no model; run them apart")
    else:  # every experiment: only those that take a model
        selected[:] = [e for e in selected if "mjcf" in e.params]


def _save_baseline(folder: Path, outcomes) -> None:
    """Store the metrics of every experiment that ran to the end (a crash is no baseline), from memory."""
    kept = [o for o in outcomes if o.error is None]
    baseline.save(folder, {o.name: o.metrics for o in kept})
    skipped = [o.name for o in outcomes if o.error is not None]
    note = f" (not {', '.join(skipped)}: they did not finish)" if skipped else ""
    print(f"baseline of {len(kept)} experiments saved in {folder}{note}")


def _add_sources(parser) -> None:
    parser.add_argument("--from", dest="sources", action="append", default=[], metavar="FILE.py|MODULE",
                        help="also load the experiments registered in a Python file or an importable module "
                             "(repeatable; installed packages' 'crossdyn.experiments' entry points load always)")


def add_list_parser(sub) -> None:
    p_list = sub.add_parser("list", help="list the registered experiments")
    _add_sources(p_list)
    p_list.set_defaults(func=_cmd_list)


def add_parser(sub) -> None:
    """Add ``run`` to the ``crossdyn`` subcommands."""
    p_run = sub.add_parser("run", help="run registered experiments (all by default) and summarize")
    p_run.add_argument("names", nargs="*", metavar="NAME", help="experiments to run (see 'crossdyn list')")
    p_run.add_argument("--out", type=arguments.out_dir, default=DEFAULT_OUT, metavar="DIR",
                       help="output folder (default results/); the report is DIR/index.html")
    p_run.add_argument("--short", action="store_true", help="reduced runs (as the test suite does)")
    p_run.add_argument("--seed", type=arguments.seed, default=0,
                       help=f"seed for every random draw (default 0; 0 to {SEED_MAX})")
    p_run.add_argument("--set", type=arguments.key_value, action="append", default=[], metavar="KEY=VALUE",
                       help="set an experiment parameter (repeatable; see 'crossdyn list')")
    p_run.add_argument("--video", action="store_true", help="render MP4s where supported (MUJOCO_GL=egl)")
    p_run.add_argument("--mjcf", metavar="PATH", help="the model for every selected experiment that takes one (the "
                       "same as --set mjcf=PATH; with no NAME, runs only the experiments that take a model)")
    _add_sources(p_run)
    p_run.add_argument("--save-baseline", type=arguments.out_dir, metavar="DIR",
                       help="store every experiment's metrics (numbers, booleans, text) in DIR/NAME.json")
    p_run.add_argument("--baseline", type=Path, metavar="DIR",
                       help="compare every metric with the baseline in DIR; drift exits 1, and so does an "
                            "experiment without a baseline (see --allow-new). Numbers within "
                            f"|now - baseline| <= {DEFAULT_ATOL:g} + {DEFAULT_RTOL:g} |baseline| unless the "
                            "experiment declares its own tolerance; booleans and text exactly")
    p_run.add_argument("--allow-new", action="store_true",
                       help="with --baseline: an experiment with no baseline file, or an empty one, passes "
                            "(its metrics are reported as new)")
    p_run.add_argument("--junit", type=arguments.out_file, metavar="FILE",
                       help="write JUnit XML: one test case per experiment (missed expectation, drift, crash, "
                            "timeout)")
    p_run.add_argument("--workers", type=arguments.count(1, WORKERS_MAX, "--workers"), default=1,
                       metavar="K", help="run experiments in K worker processes at once (default 1; same "
                                         f"metrics whatever K; at most {WORKERS_MAX})")
    p_run.add_argument("--timeout", type=arguments.number(0.0, TIMEOUT_MAX, "--timeout", low_open=True),
                       metavar="SECONDS", help="stop an experiment that runs longer than this and record it as "
                                               "'timed out' (the others go on; default: no limit); a --from file still "
                                               "importing after it plus a minute is an error")
    p_run.set_defaults(func=_cmd_run)
