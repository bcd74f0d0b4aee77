"""``crossdyn check two-link`` and ``crossdyn check derivation``."""

from __future__ import annotations

import argparse
from pathlib import Path

from crossdyn.experiments.core.cli import arguments

__all__ = ["add_parser", "load_states"]

DEFAULT_OUT = Path("results")
# Random states per check.  States stream through in chunks (bounded memory,
# experiments.core.crosscheck.CHUNK), so the cap only bounds the time: each state
# costs ~4 + nv mj_inverse calls, 1e9 states are days of work.
SAMPLES_MAX = 1_000_000_000


def load_states(path: str, nq: int, nv: int):
    """Read states from a ``.npy`` or ``.csv`` file, one row ``[q (nq), qd (nv), qdd (nv)]``.

    A CSV may carry ``#`` comments; a ``.npy`` must hold a 2-D array of numbers
    (it is memory-mapped, so a large file is not read at once).

    Raises:
      StateError: unreadable file, no rows, not a table of real numbers, wrong
        column count, or non-finite entries; each message says what was found
        and what is expected.
    """
    import warnings

    import numpy as np

    from crossdyn.experiments.core.errors import StateError

    columns = nq + 2 * nv
    expected = f"expected rows of {columns} numbers (q {nq}, qd {nv}, qdd {nv})"
    file = Path(path)
    if not file.is_file():
        raise StateError(f"no states file {path!r}")
    try:
        if file.suffix == ".npy":
            rows = np.load(file, mmap_mode="r", allow_pickle=False)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # NumPy warns about an empty file; the message below says it
                rows = np.loadtxt(file, delimiter=",", ndmin=2, comments="#")
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        detail = " ".join(str(exc).split())
        raise StateError(f"cannot read states from {path}: {detail}; {expected}") from None
    if rows.dtype.kind not in "iuf":
        raise StateError(f"{path} holds {rows.dtype.name} values, not real numbers; {expected}")
    if rows.ndim == 1:  # one state saved as a flat array
        rows = rows[None, :]
    if rows.ndim != 2:
        raise StateError(f"{path} holds a {rows.ndim}-D array of shape {rows.shape}; {expected}, a 2-D table")
    if rows.shape[0] == 0:
        raise StateError(f"{path} has no rows; {expected}")
    if rows.shape[1] != columns:
        raise StateError(f"{path}: each row needs {columns} numbers (q, qd, qdd), found {rows.shape[1]}")
    rows = np.asarray(rows, dtype=float)
    return rows[:, :nq], rows[:, nq : nq + nv], rows[:, nq + nv :]


def _report_check(report, out_dir: Path, title: str, extra: dict) -> int:
    from crossdyn.experiments.core import plots
    from crossdyn.experiments.core.results import write_json

    from crossdyn.experiments.core.report import text

    arguments.make_out_dir(out_dir)
    write_json(out_dir / "metrics.json", {**extra, **report.to_dict()})
    plots.term_errors(report, title).savefig(out_dir / "term_errors.png", dpi=110, bbox_inches="tight")
    print(text(report, title))
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
    from crossdyn.experiments.core.derivation import check_isolated
    from crossdyn.experiments.core.models import load_model

    model = load_model(args.mjcf)
    states = load_states(args.states, model.nq, model.nv) if args.states else None
    # The user's file is imported and called in a worker process: its exit or crash is a one-line error.
    report = check_isolated(args.derivation, args.mjcf, dynamics=args.dynamics, samples=args.samples, seed=args.seed,
                            states=states, atol=args.atol, rtol=args.rtol)
    file, _, func = args.derivation.rpartition(":")
    out_dir = Path(args.out) / f"check-derivation-{Path(file).stem}-{func}"
    extra = {"derivation": args.derivation, "model": str(args.mjcf), "states": args.states}
    return _report_check(report, out_dir, f"{args.derivation} vs mj_inverse ({args.dynamics}) on {args.mjcf}",
                         extra)


def _add_sampling(p: argparse.ArgumentParser) -> None:
    p.add_argument("--samples", type=arguments.count(1, SAMPLES_MAX, "--samples"), default=10_000,
                   help=f"random states (default 10000, at most {SAMPLES_MAX:,}; streamed in chunks, so memory "
                   "stays the same whatever the count)")
    p.add_argument("--seed", type=arguments.seed, default=0,
                   help=f"seed of the random states (default 0; 0 to {arguments.SEED_MAX})")
    p.add_argument("--out", type=arguments.out_dir, default=DEFAULT_OUT, metavar="DIR",
                   help="output folder (default results/)")


def add_parser(sub) -> None:
    """Add ``check`` and its systems to the ``crossdyn`` subcommands."""
    from crossdyn.analytic.two_link import VARIANTS
    from crossdyn.experiments.core.crosscheck import ATOL, RTOL, TOLERANCE_REASON
    from crossdyn.experiments.core.truth import DYNAMICS

    p_check = sub.add_parser("check", help="cross-check a derivation against mj_inverse")
    checks = p_check.add_subparsers(dest="system", required=True, metavar="SYSTEM")
    p_two = checks.add_parser("two-link", help="a two-link planar arm variant (README 'Check a two-link arm derivation')")
    p_two.add_argument("--variant", choices=list(VARIANTS), default="lagrange")
    p_two.add_argument("--mjcf", metavar="PATH", help="your own two-link MJCF (default: the built-in arm)")
    p_two.add_argument("--states", metavar="FILE", help="check at these states (.csv/.npy rows q, qd, qdd)")
    _add_sampling(p_two)
    p_two.set_defaults(func=_cmd_check_two_link)
    p_der = checks.add_parser("derivation", help="your own inverse dynamics: tau = FUNC(q, qd, qdd) in FILE.py")
    p_der.add_argument("derivation", metavar="FILE.py:FUNC",
                       help="function taking MuJoCo-layout q, qd, qdd (one state or a batch), returning tau")
    p_der.add_argument("--mjcf", required=True, metavar="MODEL",
                       help="built-in model name, or an MJCF or URDF path it describes, as it comes")
    p_der.add_argument("--dynamics", choices=DYNAMICS, default=DYNAMICS[0],
                       help="truth to compare with: rigid-body (default: M(q) qdd + c + g, the model's armature, "
                       "damping, stiffness and gravcomp removed) or as-modeled (kept); contacts, limits, equality "
                       "constraints, frictionloss and fluid forces are off in both")
    p_der.add_argument("--states", metavar="FILE", help="check at these states (.csv/.npy rows q, qd, qdd)")
    p_der.add_argument("--atol", type=arguments.number(0.0, 1e6, "--atol"), default=ATOL,
                       help=f"absolute tolerance, N m or N (default {ATOL:g}: {TOLERANCE_REASON})")
    p_der.add_argument("--rtol", type=arguments.number(0.0, 1.0, "--rtol"), default=RTOL,
                       help=f"relative tolerance, of |mj_inverse| (default {RTOL:g}); an entry passes if "
                       "|error| <= atol + rtol |reference|")
    _add_sampling(p_der)
    p_der.set_defaults(func=_cmd_check_derivation)
