"""``crossdyn tune EXPERIMENT`` for any registered experiment, and ``crossdyn tune COMMAND`` for an
experiment that declares a :class:`~crossdyn.experiments.core.sweep.tuning.Tuning` with options of its own;
with the helpers every tune shares."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from pathlib import Path

from crossdyn.experiments.core.cli import arguments

__all__ = ["add_parser", "add_engine_options", "tune_engine", "sigterm_interrupts", "interrupted", "DEFAULT_OUT"]

DEFAULT_OUT = Path("results")


def tune_engine(args) -> dict:
    if args.workers is not None and args.scheduler:
        from crossdyn.experiments.core.errors import ParameterError

        raise ParameterError("--workers is for local runs; a Dask cluster's size is set by its workers")
    return {"workers": args.workers or os.cpu_count() or 1, "scheduler": args.scheduler,
            "progress": arguments.progress(args.no_progress)}


@contextlib.contextmanager
def sigterm_interrupts():
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


def interrupted(path: Path) -> int:
    print(f"crossdyn: interrupted; finished samples are kept in {path}; the same command resumes",
          file=sys.stderr)
    return 130


def _cmd_tune(args) -> int:
    """Dispatch ``crossdyn tune WHAT ...``: an experiment's own tuning (by its command), or any experiment."""
    own = _tunings()
    if args.what in own:
        parser = _subparser(f"{args.prog} {args.what}", description=own[args.what].summary)
        own[args.what].tuning.configure(parser)
    else:
        parser = _experiment_parser(args.prog)
    inner = parser.parse_args(args.rest)
    inner.argv, inner.what = args.argv, args.what
    return inner.func(inner)


def add_parser(sub) -> None:
    """Add ``tune`` to the ``crossdyn`` subcommands: ``tune EXPERIMENT`` and ``tune COMMAND`` (a tuning's)."""
    p_tune = sub.add_parser(
        "tune", help="sweep, search or map any experiment's parameters", usage="crossdyn tune EXPERIMENT [options]",
        description="crossdyn tune EXPERIMENT --vary NAME=LO:HI[:log] ... [--minimize METRIC] [--constraint "
                    "METRIC<=VALUE] [--search lhs|grid|optuna]: run any registered experiment over its parameters "
                    "('crossdyn tune EXPERIMENT --help'); crossdyn tune COMMAND [options]: an experiment tuned "
                    "with options of its own ('crossdyn tune COMMAND --help').")
    p_tune.add_argument("what", metavar="EXPERIMENT",
                        help="an experiment's name (see 'crossdyn list'), or the command of an experiment tuned "
                             "with options of its own")
    p_tune.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p_tune.set_defaults(func=_cmd_tune, prog="crossdyn tune")


def inner_parsers(prog: str = "crossdyn tune") -> list[tuple[str, str, argparse.ArgumentParser]]:
    """``(name, help, parser)`` of what ``tune`` parses after its first word, for the CLI reference
    (``tune`` builds these parsers only once it knows that word, so its ``--help`` cannot list them)."""
    parsers = [("EXPERIMENT", "tune any registered experiment over its parameters", _experiment_parser(prog))]
    for name, exp in _tunings().items():
        parser = _subparser(f"{prog} {name}", description=exp.summary)
        exp.tuning.configure(parser)
        parsers.append((name, exp.summary, parser))
    return parsers


def _tunings() -> dict:
    """The registered experiments with a tune of their own, by the word after ``crossdyn tune``."""
    from crossdyn.experiments.core.registry import tunings

    return {exp.tuning.command: exp for exp in tunings().values()}


def _subparser(prog: str, **kwargs) -> argparse.ArgumentParser:
    from crossdyn.experiments.core.cli import _Parser

    return _Parser(prog=prog, **kwargs)


def _experiment_parser(prog: str) -> argparse.ArgumentParser:
    from crossdyn.experiments.core.sweep.experiment import SAMPLERS
    from crossdyn.experiments.core.sweep.space import SAMPLES_MAX, SEARCHES

    p = _subparser(f"{prog} EXPERIMENT", formatter_class=argparse.RawDescriptionHelpFormatter,
                   description="Run a registered experiment (crossdyn's, an installed package's, or one of --from) "
                               "over its parameters: a Latin hypercube, a grid (with two parameters, a map of where "
                               "it passes) or an Optuna search; sample 0 is always its defaults.",
                   epilog="""\
Example:
  crossdyn tune cart-pole-lqr --vary q_angle=1:1000:log --vary r=0.01:10:log \\
      --minimize settling_time_s --constraint 'max_force_N<=20' --search optuna --samples 48
  crossdyn tune pendulum-pd --from ci/experiments.py --vary kp=10:200 --vary target_deg=-60:60 \\
      --search grid --samples 36          # a 6 x 6 map of where it passes
Writes DIR/samples.csv (one row per run: its parameters, verdict and every numeric metric),
DIR/best.json (the passing run with the lowest --minimize metric meeting every --constraint: its parameters
and every metric, beside the defaults'),
DIR/objective.png, and for a search progress.png, for a 2-parameter grid map.png and map.json.
Rerun the same command to resume: only the missing runs run.
""")
    p.add_argument("--from", dest="sources", action="append", default=[], metavar="FILE.py|MODULE",
                   help="load the experiments a Python file or module registers (repeatable)")
    p.add_argument("--vary", action="append", default=[], metavar="NAME=LO:HI[:log]", required=True,
                   help="a numeric parameter and its range, within the parameter's own bounds (repeatable)")
    p.add_argument("--minimize", metavar="METRIC", help="the metric to minimize (dotted for nested metrics)")
    p.add_argument("--constraint", action="append", default=[], metavar="METRIC<=VALUE",
                   help="a bound on a metric, METRIC<=VALUE or METRIC>=VALUE (repeatable)")
    p.add_argument("--search", choices=SEARCHES, default="lhs",
                   help="lhs (default): a Latin hypercube; grid: k values per parameter, k^d <= --samples; "
                        "optuna: a sampler chooses each batch from the runs made (needs --minimize)")
    p.add_argument("--sampler", choices=SAMPLERS, default=None,
                   help="the sampler of --search optuna: gp (default, Gaussian-process expected improvement among "
                        "runs meeting the constraints) or tpe (Optuna's TPE)")
    p.add_argument("--samples", "--trials", dest="samples", type=arguments.count(1, SAMPLES_MAX, "--samples"),
                   default=32, metavar="N", help=f"runs after the defaults, whatever the search (default 32, at most "
                                                 f"{SAMPLES_MAX:,}; --trials is the same)")
    p.add_argument("--set", type=arguments.key_value, action="append", default=[], metavar="KEY=VALUE",
                   help="fix another parameter for every run (repeatable)")
    p.add_argument("--seed", type=arguments.seed, default=0,
                   help=f"seed of the plan or the search, and the experiment's (default 0; 0 to {arguments.SEED_MAX})")
    p.add_argument("--vary-from", metavar="DIR/identified.json",
                   help="also draw the model's identified parameters (what 'crossdyn identify' wrote) uniformly "
                        "within their 95 %% intervals for every run, into the run's own copy of the experiment's "
                        "'mjcf' model; the defaults run gets the identified values (columns of samples.csv)")
    p.add_argument("--short", action="store_true", help="the experiment's reduced runs")
    add_engine_options(p, None, "tune-EXPERIMENT")
    p.set_defaults(func=_cmd_tune_experiment)
    return p


def add_engine_options(p: argparse.ArgumentParser, out: Path | None, name: str) -> None:
    """Add the options every tune command takes for where it runs and writes: ``--timeout``, ``--workers``,
    ``--scheduler``, ``--out`` (default ``out``, shown as ``results/NAME``) and ``--no-progress``."""
    p.add_argument("--timeout", type=arguments.number(0.0, 1e7, "--timeout", low_open=True), metavar="SECONDS",
                   help="each run's time limit: a run over it is stopped and recorded 'timed out' (every run goes "
                        "to a worker process, where a crash or an exit is a row too)")
    p.add_argument("--workers", type=arguments.count(1, arguments.WORKERS_MAX, "--workers"), metavar="K",
                   help="local worker processes (default: all cores)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on this Dask distributed scheduler instead")
    p.add_argument("--out", type=arguments.out_dir, default=out, metavar="DIR",
                   help=f"output folder; rerun to resume (default results/{name})")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (on a terminal) nor a line per finished batch of runs (elsewhere)")


def _cmd_tune_experiment(args) -> int:
    from crossdyn.experiments.core.errors import ParameterError
    from crossdyn.experiments.core.sweep.experiment import tune

    if args.sampler is not None and args.search != "optuna":
        raise ParameterError("--sampler is for --search optuna; a Latin hypercube or a grid draws blindly")
    if args.what.startswith("-"):
        raise ParameterError(f"expected an experiment's name after 'crossdyn tune', got {args.what!r}")
    if args.sources:
        from crossdyn.experiments.core import cli

        cli.USER_CODE_LOADED = True  # its atexit handlers and threads must not decide crossdyn's exit
    out = Path(args.out) if args.out is not None else DEFAULT_OUT / f"tune-{args.what}"
    arguments.out_dir(str(out))
    engine = tune_engine(args)
    try:
        with sigterm_interrupts():
            result = tune(args.what, out, vary=args.vary, minimize=args.minimize, constraints=args.constraint,
                          search=args.search, sampler=args.sampler or "gp", samples=args.samples, seed=args.seed,
                          fixed=dict(args.set), short=args.short, sources=tuple(args.sources), timeout=args.timeout,
                          vary_from=args.vary_from, **engine)
    except KeyboardInterrupt:
        return interrupted(out / "samples.csv")
    names = ", ".join(v.name for v in result.space)
    how = {"lhs": "Latin-hypercube", "grid": "grid", "optuna": f"Optuna {args.sampler or 'gp'}"}[args.search]
    print(f"tune {args.what}: {len(result.rows)} runs ({len(result.rows) - 1} {how} over {names} + the defaults); "
          f"{result.computed} run in {result.seconds:.1f} s, {result.resumed} resumed from {result.csv}")
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
    if metric is not None and best is None:
        print("  no run passed and met every constraint: nothing to recommend")
        return 1
    if metric is not None and best is not None:
        better = "the defaults stay" if best["sample"] == "0" else f"sample {best['sample']}"
        print(f"  best      {_params(best, result.space)}: {_metrics(best, metric, limits)} "
              f"[{_mark(best, limits)}] ({better})")
    print(f"  results in {out} (samples.csv, best.json{''.join(', ' + f for f in result.files)}; timings.csv)")
    return 0


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
    from crossdyn.experiments.core.sweep.experiment import _meets

    broken = [f"{m}{op}{v:g}" for m, op, v in limits if not _meets(row, [(m, op, v)])]
    return row["outcome"] + (f"; breaks {', '.join(broken)}" if broken else "")


def _params(row: dict, space) -> str:
    return " ".join(f"{v.name}={float(row[v.name]):.4g}" for v in space)
