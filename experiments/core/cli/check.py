"""``crossdyn check two-link`` and ``crossdyn check derivation``."""

from __future__ import annotations

import argparse
from pathlib import Path

from crossdyn.experiments.core.cli import arguments

__all__ = ["add_parser", "load_states"]

DEFAULT_OUT = Path("results")
SAMPLES_MAX = 1_000_000  # random states per check; each costs ~3 + nv mj_inverse calls


def load_states(path: str, nq: int, nv: int):
    """Read states from a ``.npy`` or ``.csv`` file, one row ``[q (nq), qd (nv), qdd (nv)]``.

    Raises:
      StateError: unreadable file, wrong column count, or non-finite entries.
    """
    import numpy as np

    from crossdyn.experiments.core.errors import StateError

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


def _report_check(report, out_dir: Path, title: str, extra: dict) -> int:
    from crossdyn.experiments.core import plots
    from crossdyn.experiments.core.results import write_json

    arguments.make_out_dir(out_dir)
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
    from crossdyn.experiments.core.models import load_model
    from crossdyn.experiments.two_link import check_variant, default_model

    source = args.mjcf or default_model(args.variant)
    model = load_model(source)
    states = load_states(args.states, model.nq, model.nv) if args.states else None
    report, params = check_variant(args.variant, model, samples=args.samples, seed=args.seed, states=states)
    out_dir = Path(args.out) / f"check-two-link-{args.variant}"
    extra = {"variant": args.variant, "model": str(source), "params": params.__dict__}
    return _report_check(report, out_dir, f"two-link variant {args.variant} vs mj_inverse on {source}", extra)


def _cmd_check_derivation(args) -> int:
    from crossdyn.experiments.core.derivation import check_derivation
    from crossdyn.experiments.core.models import load_model

    model = load_model(args.mjcf)
    report = check_derivation(args.derivation, model, samples=args.samples, seed=args.seed)
    file, _, func = args.derivation.rpartition(":")
    out_dir = Path(args.out) / f"check-derivation-{Path(file).stem}-{func}"
    extra = {"derivation": args.derivation, "model": str(args.mjcf)}
    return _report_check(report, out_dir, f"{args.derivation} vs mj_inverse on {args.mjcf}", extra)


def _add_sampling(p: argparse.ArgumentParser) -> None:
    p.add_argument("--samples", type=arguments.count(1, SAMPLES_MAX, "--samples"), default=10_000,
                   help=f"random states (default 10000, at most {SAMPLES_MAX:,})")
    p.add_argument("--seed", type=arguments.seed, default=0,
                   help=f"seed of the random states (default 0; 0 to {arguments.SEED_MAX})")
    p.add_argument("--out", type=arguments.out_dir, default=DEFAULT_OUT, metavar="DIR",
                   help="output folder (default results/)")


def add_parser(sub) -> None:
    """Add ``check`` and its systems to the ``crossdyn`` subcommands."""
    from crossdyn.analytic.two_link import VARIANTS

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
