"""The ``crossdyn`` command line.

    crossdyn list
    crossdyn check two-link [--variant V] [--mjcf PATH] [--samples N] [--seed S] [--states FILE] [--out DIR]
    crossdyn check derivation FILE.py:FUNC --mjcf MODEL [--samples N] [--seed S] [--out DIR]
    crossdyn run [NAME ...] [--out DIR] [--short] [--seed S] [--set KEY=VALUE ...]

Exit status: 0 when everything is as expected, 1 when a check or an experiment's
expected outcome fails, 2 for bad input (missing file, malformed model, bad
state, unknown name), always with a one-line message and no traceback.
"""

from __future__ import annotations

import argparse
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
    return parser


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
