"""The ``crossdyn`` command line.

    crossdyn list
    crossdyn check two-link [--variant V] [--mjcf PATH] [--samples N] [--seed S] [--states FILE] [--out DIR]
    crossdyn check derivation FILE.py:FUNC --mjcf MODEL [--samples N] [--seed S] [--out DIR]
    crossdyn run [NAME ...] [--out DIR] [--short] [--seed S] [--set KEY=VALUE ...]
    crossdyn tune balance [--samples N | --grid NAME=VALUES ...] [--workers K] [--seed S] [--scheduler ADDR] [--out DIR]
    crossdyn tune robustness [--weight NAME=VALUE ... | --weights-from DIR] [--axis NAME=VALUES ...] [--out DIR]

Exit status: 0 when everything is as expected, 1 when a check or an experiment's
expected outcome fails, 2 for bad input (missing file, malformed model, bad
state, unknown name), always with a one-line message and no traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

__all__ = ["main", "build_parser"]

DEFAULT_OUT = Path("results")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def load_states(path: str, nq: int, nv: int):
    """Read states from a ``.npy`` or ``.csv`` file, one row ``[q (nq), qd (nv), qdd (nv)]``.

    Raises:
      StateError: unreadable file, wrong column count, or non-finite entries.
    """
    import numpy as np

    from experiments.errors import StateError

    file = Path(path)
    if not file.is_file():
        raise StateError(f"no states file {path!r}")
    try:
        rows = np.load(file) if file.suffix == ".npy" else np.loadtxt(file, delimiter=",", ndmin=2, comments="#")
    except ValueError as exc:
        raise StateError(f"cannot read states from {path}: {exc}") from None
    rows = np.atleast_2d(np.asarray(rows, dtype=float))
    if rows.shape[1] != nq + 2 * nv:
        raise StateError(f"{path}: each row needs {nq + 2 * nv} numbers (q, qd, qdd), found {rows.shape[1]}")
    return rows[:, :nq], rows[:, nq : nq + nv], rows[:, nq + nv :]


def _cmd_list(args) -> int:
    from experiments.registry import experiments

    registry = experiments()
    width = max(len(name) for name in registry)
    for name, exp in registry.items():
        print(f"{name:<{width}}  {exp.summary}")
        print(f"{'':<{width}}  expected: {exp.expected}")
        for key, p in exp.params.items():
            print(f"{'':<{width}}  --set {key}={p.default}  ({p.help})")
    return 0


def _report_check(report, out_dir: Path, title: str, extra: dict) -> int:
    from experiments import plots
    from experiments.results import write_json

    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "metrics.json", {**extra, **report.to_dict()})
    plots.term_errors(report, title).savefig(out_dir / "term_errors.png", dpi=110, bbox_inches="tight")
    status = "PASS" if report.passed else "MISMATCH"
    print(f"{status}: {title}")
    print(f"  {report.diagnosis}")
    for row in report.per_joint:
        print(f"  {row['name']:>12}: max |error| {row['max_abs_error']:.3e}  (relative {row['max_rel_error']:.2e})")
    print(f"  results in {out_dir}")
    return 0 if report.passed else 1


def _cmd_check_two_link(args) -> int:
    from experiments.truth import load_model
    from experiments.two_link import check_variant, default_model

    source = args.mjcf or default_model(args.variant)
    model = load_model(source)
    states = load_states(args.states, model.nq, model.nv) if args.states else None
    report, params = check_variant(args.variant, model, samples=args.samples, seed=args.seed, states=states)
    out_dir = Path(args.out) / f"check-two-link-{args.variant}"
    extra = {"variant": args.variant, "model": str(source), "params": params.__dict__}
    return _report_check(report, out_dir, f"two-link variant {args.variant} vs mj_inverse on {source}", extra)


def _cmd_check_derivation(args) -> int:
    from experiments.derivation import check_derivation
    from experiments.truth import load_model

    model = load_model(args.mjcf)
    report = check_derivation(args.derivation, model, samples=args.samples, seed=args.seed)
    file, _, func = args.derivation.rpartition(":")
    out_dir = Path(args.out) / f"check-derivation-{Path(file).stem}-{func}"
    extra = {"derivation": args.derivation, "model": str(args.mjcf)}
    return _report_check(report, out_dir, f"{args.derivation} vs mj_inverse on {args.mjcf}", extra)


def _cmd_run(args) -> int:
    from experiments.registry import experiments, get
    from experiments.results import run_experiments, summary_table

    selected = [get(name) for name in args.names] if args.names else list(experiments().values())
    outcomes = run_experiments(
        selected,
        Path(args.out),
        short=args.short,
        seed=args.seed,
        overrides=dict(args.set),
        video=args.video,
        progress=sys.stderr.isatty(),
    )
    print(summary_table(outcomes), end="")
    failed = [o for o in outcomes if not o.passed]
    for o in failed:
        if o.error:
            print(f"{o.name}: {o.error}", file=sys.stderr)
    print(f"{len(outcomes) - len(failed)}/{len(outcomes)} as expected; results in {args.out}")
    return 0 if not failed else 1


def _fmt_weights(weights: dict) -> str:
    return " ".join(f"{k}={v:.4g}" for k, v in weights.items())


def _fmt_metrics(s: dict) -> str:
    n = {k: float(v) for k, v in s.items() if k not in ("weights", "gains_at_stance", "outcome")}  # "inf" from JSON
    return (f"settle {n['settling_time_s']:.2f} s, effort {n['effort_N2m2s']:.3f} (N m)^2 s, "
            f"overshoot {n['overshoot_deg']:.2f} deg, max |T| {n['max_wheel_torque']:.2f} N m [{s['outcome']}]")


def _tune_engine(args) -> dict:
    if args.workers is not None and args.scheduler:
        from experiments.errors import ParameterError

        raise ParameterError("--workers is for local runs; a Dask cluster's size is set by its workers")
    return {"workers": args.workers or os.cpu_count() or 1, "scheduler": args.scheduler,
            "progress": sys.stderr.isatty() and not args.no_progress}


def _tune_interrupted(path: Path) -> int:
    print(f"crossdyn: interrupted; finished samples are kept in {path}; the same command resumes",
          file=sys.stderr)
    return 130


def _cmd_tune_balance(args) -> int:
    from experiments import tune

    grid = tune.parse_values(args.grid) if args.grid else None
    samples = args.samples if args.samples is not None or grid is not None else 32
    out = Path(args.out)
    try:
        result = tune.sweep(out, samples=samples, grid=grid, seed=args.seed, ranges=tune.parse_range(args.range),
                            duration=args.duration, initial_tilt_deg=args.tilt, push_check=args.push,
                            **_tune_engine(args))
    except KeyboardInterrupt:
        return _tune_interrupted(out / "samples.csv")
    how = f"grid of {len(result.rows) - 1}" if grid else f"{samples} Latin-hypercube (seed {args.seed})"
    print(f"tune balance: {len(result.rows)} samples ({how} + the defaults); {result.computed} run in "
          f"{result.seconds:.1f} s, {result.resumed} resumed from {result.csv}")
    print("  outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(result.counts().items())))
    best = json.loads((out / "best.json").read_text())
    default, chosen = best["defaults"], best["chosen"]
    print(f"  defaults  {_fmt_weights(default['weights'])}: {_fmt_metrics(default)}")
    if chosen is None:
        print("  no sample balanced without saturating: nothing to recommend")
        return 1
    print(f"  best      {_fmt_weights(chosen['weights'])}: {_fmt_metrics(chosen)}")
    print("            gains at stance K = [" + ", ".join(f"{k:.3f}" for k in chosen["gains_at_stance"]) + "]")
    if chosen["sample"] == 0:
        print("  no sample settles sooner with no more effort: the defaults stay")
    elif default["outcome"] == "ok":
        dt = default["settling_time_s"] - chosen["settling_time_s"]
        de = 100 * (1 - chosen["effort_N2m2s"] / default["effort_N2m2s"])
        verdict = "at least as good as" if dt >= 0 and de >= 0 else "not better on both counts than"
        print(f"  best settles {dt:.2f} s sooner with {de:.1f} % less effort: {verdict} the defaults")
    pngs = ", ".join(sorted(p.name for p in out.glob("*.png")))
    print(f"  results in {out} (samples.csv, best.json, {pngs}; timings.csv)")
    return 0


def _cmd_tune_robustness(args) -> int:
    from experiments import tune

    weights = tune.weights_from(args.weights_from) if args.weights_from else {}
    weights.update({k: float(v) for k, vs in tune.parse_values(args.weight).items() for v in vs[:1]})
    if any(len(v) != 1 for v in tune.parse_values(args.weight).values()):
        from experiments.errors import ParameterError

        raise ParameterError("--weight takes one value per weight (NAME=VALUE)")
    axes = tune.parse_values(args.axis, kind="perturbation") if args.axis else None
    out = Path(args.out)
    try:
        result = tune.robustness(out, weights=weights, axes=axes, duration=args.duration, **_tune_engine(args))
    except KeyboardInterrupt:
        return _tune_interrupted(out / "robustness.csv")
    summary = json.loads((out / "robustness.json").read_text())
    held = sum(r["held"] == "true" for r in result.rows)
    print(f"tune robustness: {_fmt_weights(summary['weights'])}")
    print(f"  holds in {held}/{len(result.rows)} cells of " + " x ".join(summary["axes"]) + f"; {result.computed} run "
          f"in {result.seconds:.1f} s, {result.resumed} resumed")
    print("  outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(result.counts().items())))
    print(f"  results in {out} (robustness.csv, robustness.png, robustness.json; timings.csv)")
    return 0


_GRID_HELP = """\
Weights: q_x (1/m^2), q_xd (s^2/m^2), q_theta (1/rad^2), q_thetad (s^2/rad^2) on
the LQR state [x, xd, theta, thetad], and r (1/(N m)^2) on the total wheel torque.
Defaults q_x=20 q_xd=10 q_theta=100 q_thetad=1 r=1.

  --grid NAME=V1,V2,...   these values of one weight (repeat for more weights;
  --grid NAME=LO:HI:N     every combination is run; N evenly spaced values)
  --range NAME=LO:HI      Latin-hypercube bounds (log-uniform) instead of the
                          built-in ones (q_x 1:1000, q_xd 0.1:300,
                          q_theta 10:3000, q_thetad 0.1:30, r 0.1:10)

Example: crossdyn tune balance --grid q_theta=10,100,1000 --grid r=0.1,1,10
Sample 0 is always the defaults, the reference the best is compared with.
Dask: start 'dask scheduler' and 'dask worker tcp://HOST:8786' on machines that
have crossdyn installed, then add --scheduler tcp://HOST:8786.
"""


def build_parser() -> argparse.ArgumentParser:
    from analytic.two_link import VARIANTS

    parser = argparse.ArgumentParser(
        prog="crossdyn",
        description="Cross-check hand-derived robot dynamics and controllers against MuJoCo.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p_list = sub.add_parser("list", help="list the registered experiments")
    p_list.set_defaults(func=_cmd_list)

    p_check = sub.add_parser("check", help="cross-check a derivation against mj_inverse")
    checks = p_check.add_subparsers(dest="system", required=True, metavar="SYSTEM")
    p_two = checks.add_parser("two-link", help="a two-link planar arm variant (SPEC §1)")
    p_two.add_argument("--variant", choices=list(VARIANTS), default="lagrange")
    p_two.add_argument("--mjcf", metavar="PATH", help="your own two-link MJCF (default: the built-in arm)")
    p_two.add_argument("--states", metavar="FILE", help="check at these states (.csv/.npy rows q, qd, qdd)")
    _add_sampling(p_two)
    p_two.set_defaults(func=_cmd_check_two_link)
    p_der = checks.add_parser("derivation", help="your own inverse dynamics: tau = FUNC(q, qd, qdd) in FILE.py")
    p_der.add_argument("derivation", metavar="FILE.py:FUNC",
                       help="function taking MuJoCo-layout q, qd, qdd (one state or a batch), returning tau")
    p_der.add_argument("--mjcf", required=True, metavar="MODEL", help="built-in model name or MJCF path it describes")
    _add_sampling(p_der)
    p_der.set_defaults(func=_cmd_check_derivation)

    p_run = sub.add_parser("run", help="run registered experiments (all by default) and summarize")
    p_run.add_argument("names", nargs="*", metavar="NAME", help="experiments to run (see 'crossdyn list')")
    p_run.add_argument("--out", default=str(DEFAULT_OUT), metavar="DIR", help="output folder (default results/)")
    p_run.add_argument("--short", action="store_true", help="reduced runs (as the test suite does)")
    p_run.add_argument("--seed", type=int, default=0, help="seed for every random draw (default 0)")
    p_run.add_argument("--set", type=_key_value, action="append", default=[], metavar="KEY=VALUE",
                       help="set an experiment parameter (repeatable; see 'crossdyn list')")
    p_run.add_argument("--video", action="store_true", help="render MP4s where supported (MUJOCO_GL=egl)")
    p_run.set_defaults(func=_cmd_run)

    p_tune = sub.add_parser("tune", help="tune controller gains: weight sweeps and robustness maps")
    tunes = p_tune.add_subparsers(dest="what", required=True, metavar="WHAT")
    p_bal = tunes.add_parser("balance", help="sweep the balance LQR weights over balance-recovery runs",
                             formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_GRID_HELP)
    how = p_bal.add_mutually_exclusive_group()
    how.add_argument("--samples", type=_positive_int, help="Latin-hypercube samples (default 32)")
    how.add_argument("--grid", type=_key_value, action="append", default=[], metavar="NAME=VALUES",
                     help="grid values of one weight (repeatable; see below)")
    p_bal.add_argument("--range", type=_key_value, action="append", default=[], metavar="NAME=LO:HI",
                       help="Latin-hypercube bounds of one weight (repeatable)")
    p_bal.add_argument("--tilt", type=float, default=10.0, metavar="DEG", help="initial tilt, deg (default 10)")
    p_bal.add_argument("--push", type=float, default=0.0, metavar="NS",
                       help="also require recovery from this push, N s over 0.1 s (default: no push run)")
    _add_tune_common(p_bal, "tune-balance", duration=4.0)
    p_bal.set_defaults(func=_cmd_tune_balance)
    p_rob = tunes.add_parser("robustness", help="success map over two perturbation axes for given weights")
    p_rob.add_argument("--weight", type=_key_value, action="append", default=[], metavar="NAME=VALUE",
                       help="an LQR weight (repeatable; others default)")
    p_rob.add_argument("--weights-from", metavar="DIR", help="the chosen weights of a sweep (its folder or best.json)")
    p_rob.add_argument("--axis", type=_key_value, action="append", default=[], metavar="NAME=VALUES",
                       help="a perturbation axis, two needed: body_mass_scale, com_offset_x (m), initial_tilt_deg, "
                            "push_impulse_Ns; values V1,V2,... or LO:HI:N "
                            "(default com_offset_x=-0.04:0.04:5 push_impulse_Ns=5:30:6; a push map starts upright)")
    _add_tune_common(p_rob, "tune-robustness", duration=6.0)
    p_rob.set_defaults(func=_cmd_tune_robustness)
    return parser


def _add_tune_common(p: argparse.ArgumentParser, name: str, duration: float) -> None:
    p.add_argument("--duration", type=float, default=duration, metavar="S",
                   help=f"simulated time per run, s (default {duration:g})")
    p.add_argument("--seed", type=int, default=0, help="seed of the Latin hypercube (default 0)")
    p.add_argument("--workers", type=_positive_int, metavar="K", help="local worker processes (default: all cores)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on this Dask distributed scheduler instead")
    p.add_argument("--out", default=str(DEFAULT_OUT / name), metavar="DIR",
                   help=f"output folder; rerun to resume (default results/{name})")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _add_sampling(p: argparse.ArgumentParser) -> None:
    p.add_argument("--samples", type=_positive_int, default=10_000, help="random states (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random states (default 0)")
    p.add_argument("--out", default=str(DEFAULT_OUT), metavar="DIR", help="output folder (default results/)")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``crossdyn`` console script; returns the exit status."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    if argv is None:
        argv = sys.argv[1:]
    if "--video" in argv:
        os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; must precede importing mujoco
    from experiments.errors import CrossdynError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except CrossdynError as exc:
        print(f"crossdyn: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("crossdyn: interrupted; finished experiments' results are kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
