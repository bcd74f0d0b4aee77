"""``crossdyn tune EXPERIMENT``: any registered experiment swept, searched or mapped over its parameters."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
from pathlib import Path

from .. import user_code
from ..errors import ParameterError
from ..limits import RUNS_MAX, SEED_MAX, WORKERS_MAX
from ..sweep.choice import meets
from ..sweep.engine import TuneEngine
from ..sweep.experiment import best_params, tune
from ..sweep.search import SAMPLERS
from ..sweep.space import DEFAULTS, SEARCHES
from . import arguments

__all__ = ["add_parser"]

DEFAULT_OUT = Path("results")


def add_parser(sub) -> None:
    """Add ``tune`` to the ``crossdyn`` subcommands."""
    p = sub.add_parser(
        "tune", help="sweep, search or map any experiment's parameters", usage="crossdyn tune EXPERIMENT [options]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run a registered experiment (crossdyn's, an installed package's, or one of --from) over its "
                    "parameters: a Latin hypercube, a grid (with two parameters, a map of where it passes) or an "
                    "Optuna search; sample 0 is always its defaults. Without --vary, the tune the experiment declares "
                    "runs (its ranges, search and fixed values; its --minimize and --constraint apply whatever is "
                    "varied unless given).",
        epilog=f"""\
Example:
  crossdyn tune cart-pole-lqr --vary q_angle=1:1000:log --vary r=0.01:10:log \\
      --minimize settling_time_s --constraint 'max_force_N<=20' --search optuna --samples 48
  crossdyn tune pendulum-pd --from ci/experiments.py --vary kp=10:200 --vary target_deg=-60:60 \\
      --search grid --samples 36          # a 6 x 6 map of where it passes
  crossdyn tune biped-robustness-map --vary slope_deg=0,5,10 --vary friction=0.3,0.7 --search grid
Writes DIR/samples.csv (one row per run: its parameters, verdict and every numeric metric),
DIR/best.json (the passing run with the lowest --minimize metric meeting every --constraint: its parameters
and every metric, beside the defaults'), DIR/objective.png, with a --constraint pareto.png, for a search
progress.png, for a 2-parameter grid map.png and map.json.  A bound 'METRIC<={DEFAULTS}' is the defaults
run's own value; --set-from DIR fixes the parameters of the best run a tune into DIR chose.
Rerun the same command to resume: only the missing runs run.
""")
    p.add_argument("experiment", metavar="EXPERIMENT", help="a registered experiment's name (see 'crossdyn list')")
    p.add_argument("--from", dest="sources", action="append", default=[], metavar="FILE.py|MODULE",
                   help="load the experiments a Python file or module registers (repeatable)")
    p.add_argument("--vary", action="append", default=[], metavar="NAME=LO:HI[:log]|NAME=V1,V2,...",
                   help="a numeric parameter and its range, within the parameter's own bounds, or a list of its "
                        "values (a grid's axis) (repeatable; default: the experiment's declared tune)")
    p.add_argument("--minimize", metavar="METRIC[:log]",
                   help="the metric to minimize (dotted for nested metrics); METRIC:log: the gp search models its "
                        "logarithm (a positive metric over orders of magnitude, such as a time)")
    p.add_argument("--constraint", action="append", default=[], metavar="METRIC<=VALUE",
                   help=f"a bound on a metric, METRIC<=VALUE or METRIC>=VALUE, VALUE a number or '{DEFAULTS}' "
                        "(the defaults run's own) (repeatable)")
    p.add_argument("--search", choices=SEARCHES, default=None,
                   help="lhs (default): a Latin hypercube; grid: the listed values, and k values per range with "
                        "k^d <= --samples; optuna: a sampler chooses each batch from the runs made (needs --minimize)")
    p.add_argument("--sampler", choices=SAMPLERS, default=None,
                   help="the sampler of --search optuna: gp (default, Gaussian-process expected improvement among "
                        "runs meeting the constraints; below a bound by the defaults, the front at 1, 0.8 and 0.6 of "
                        "it in turn) or tpe (Optuna's TPE)")
    p.add_argument("--ratios-to", metavar="NAME",
                   help="the search draws the other varied parameters as ratios to this one (every one a :log range; "
                        "for LQR weights: the gain is the same when Q and R scale together)")
    p.add_argument("--samples", "--trials", dest="samples", type=arguments.count(1, RUNS_MAX, "--samples"),
                   default=32, metavar="N", help=f"runs after the defaults, whatever the search (default 32, at most "
                                                 f"{RUNS_MAX:,}; --trials is the same)")
    p.add_argument("--set", type=arguments.key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="fix another parameter for every run (repeatable; it also leaves the declared tune's "
                        "range of it out)")
    p.add_argument("--set-from", metavar="DIR", help="fix the parameters of the best run another tune chose (its "
                                                     "folder or best.json); --set overrides them")
    p.add_argument("--seed", type=arguments.seed, default=0,
                   help=f"seed of the plan or the search, and the experiment's (default 0; 0 to {SEED_MAX})")
    p.add_argument("--vary-from", metavar="DIR/identified.json",
                   help="also draw the model's identified parameters (what 'crossdyn identify' wrote) uniformly "
                        "within their 95 %% intervals for every run, into the run's own copy of the experiment's "
                        "'mjcf' model; the defaults run gets the identified values (columns of samples.csv)")
    p.add_argument("--short", action="store_true", help="the experiment's reduced runs")
    p.add_argument("--timeout", type=arguments.number(0.0, 1e7, "--timeout", low_open=True), metavar="SECONDS",
                   help="each run's time limit: a run over it is stopped and recorded 'timed out' (every run goes "
                        "to a worker process, where a crash or an exit is a row too)")
    p.add_argument("--workers", type=arguments.count(1, WORKERS_MAX, "--workers"), metavar="K",
                   help="local worker processes (default: all cores)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on this Dask distributed scheduler instead")
    p.add_argument("--out", type=arguments.out_dir, default=None, metavar="DIR",
                   help="output folder; rerun to resume (default results/tune-EXPERIMENT)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (on a terminal) nor a line per finished batch of runs (elsewhere)")
    p.set_defaults(func=_cmd_tune)


@contextlib.contextmanager
def _sigterm_interrupts():
    """SIGTERM ends a sweep as Ctrl-C does: local workers are shut down, finished samples kept."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _cmd_tune(args) -> int:
    for given, flag in ((args.sampler, "--sampler"), (args.ratios_to, "--ratios-to")):
        if given is not None and args.search != "optuna":
            raise ParameterError(f"{flag} is for --search optuna; a Latin hypercube or a grid draws blindly")
    if args.workers is not None and args.scheduler:
        raise ParameterError("--workers is for local runs; a Dask cluster's size is set by its workers")
    if args.sources:
        user_code.LOADED_HERE = True  # its atexit handlers and threads must not decide crossdyn's exit
    out = Path(args.out) if args.out is not None else DEFAULT_OUT / f"tune-{args.experiment}"
    arguments.out_dir(str(out))
    fixed = {**(best_params(args.set_from) if args.set_from else {}), **dict(args.set)}
    engine = TuneEngine(workers=args.workers or os.cpu_count() or 1, scheduler=args.scheduler, timeout=args.timeout,
                        progress=arguments.progress(args.no_progress))
    try:
        with _sigterm_interrupts():
            result = tune(args.experiment, out, vary=args.vary, minimize=args.minimize, constraints=args.constraint,
                          search=args.search, sampler=args.sampler or "gp", samples=args.samples, seed=args.seed,
                          fixed=fixed, short=args.short, sources=tuple(args.sources), vary_from=args.vary_from,
                          ratios_to=args.ratios_to, engine=engine)
    except KeyboardInterrupt:
        print(f"crossdyn: interrupted; finished samples are kept in {out / 'samples.csv'}; the same command resumes",
              file=sys.stderr)
        return 130
    return _report(args, out, result)


def _report(args, out: Path, result) -> int:
    """Print what a tune found; 1 when it has something to minimize and no run to recommend."""
    names = ", ".join(v.name for v in result.space)
    how = {"lhs": "Latin-hypercube", "grid": "grid", "optuna": f"Optuna {args.sampler or 'gp'}"}[result.search]
    print(f"tune {args.experiment}: {len(result.rows)} runs ({len(result.rows) - 1} {how} over {names} + the "
          f"defaults); {result.computed} run in {result.seconds:.1f} s, {result.resumed} resumed from {result.csv}")
    print("  outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(result.counts().items())))
    if result.model_columns:
        print(f"  every run's model drew {', '.join(result.model_columns)} uniformly within the identified "
              f"intervals of {args.vary_from} (the defaults run: the identified values)")
        for note in result.notes:
            print(f"  skipped {note}")
    metric, defaults, limits, best = result.minimize, result.rows[0], result.constraints, result.best
    if metric is not None or limits:
        print(f"  defaults  {_params(defaults, result.space)}: {_metrics(defaults, metric, limits)} "
              f"[{_mark(defaults, limits)}]")
    if "map.json" in result.files:
        _print_map(json.loads((out / "map.json").read_text()))
    if metric is not None and best is None:
        print("  no run passed and met every constraint: nothing to recommend")
        return 1
    if metric is not None and best is not None:
        better = "the defaults stay" if best["sample"] == "0" else f"sample {best['sample']}"
        print(f"  best      {_params(best, result.space)}: {_metrics(best, metric, limits)} "
              f"[{_mark(best, limits)}] ({better})")
    print(f"  results in {out} (samples.csv, best.json{''.join(', ' + f for f in result.files)}; timings.csv)")
    return 0


def _print_map(summary: dict) -> None:
    """Where a map passes, per value of its first axis: the second axis's span."""
    region = summary["holding_region"]
    a, b = region["by"], next(name for name in summary["axes"] if name != region["by"])
    for row in region["rows"]:
        span = "nowhere" if row["span"] is None else f"{row['span'][0]:g}..{row['span'][1]:g}"
        print(f"  {a}={row[a]:g}: passes for {b} {span}" + ("" if row["contiguous"] else " (with gaps)"))


def _number(text: str) -> str:
    """A table cell as printed: a number to four significant digits (the table keeps all of them)."""
    try:
        return f"{float(text):.4g}"
    except ValueError:
        return text


def _metrics(row: dict, minimize: str | None, limits: list) -> str:
    """The minimized metric's value, then each constrained metric's: ``settle_s 0.42, peak_torque 14.2``."""
    names = ([minimize] if minimize else []) + [m for m, _, _ in limits if m != minimize]
    return ", ".join(f"{name} {_number(row.get(name, ''))}" for name in dict.fromkeys(names))


def _mark(row: dict, limits: list) -> str:
    """The run's outcome, and the constraints it breaks: ``pass; breaks peak_torque<=0.3``."""
    broken = [f"{m}{op}{v:g}" for m, op, v in limits if not meets(row, [(m, op, v)])]
    return row["outcome"] + (f"; breaks {', '.join(broken)}" if broken else "")


def _params(row: dict, space) -> str:
    return " ".join(f"{v.name}={float(row[v.name]):.4g}" for v in space)
