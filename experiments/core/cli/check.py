"""``crossdyn check``: derivation, one command per part of a hand derivation, and the systems' own.

Each writes ``metrics.json`` and a plot under ``--out``, prints a report and exits 0 when
the function agrees, 1 when it does not (or drifted from the baseline), 2 on bad input.
Systems add their own (``check two-link``) through :mod:`crossdyn.experiments.core.cli.commands`,
with the helpers shared from here.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from .. import baseline, figures, validate
from ..baseline import DEFAULT_ATOL, DEFAULT_RTOL
from ..checks import linearization
from ..checks.derivation import check_isolated
from ..checks.entry_errors import entry_errors
from ..checks.jacobian import FRAMES
from ..checks.options import ATOL, RTOL, TOLERANCE_REASON
from ..errors import StateError
from ..files import as_stored, make_out_dir, write_json
from ..junit import write_junit
from ..limits import ATOL_MAX, EPS_MAX, RTOL_MAX, SEED_MAX, STATES_MAX, TIMEOUT_MAX
from ..models import load_model
from ..runner import Outcome
from ..truth import DYNAMICS
from . import arguments, commands

__all__ = ["add_parser", "load_states", "load_state_file", "prepare", "report_check", "add_sampling", "add_outputs",
           "add_ranges", "add_timeout", "tolerance", "state_range", "DEFAULT_OUT"]

DEFAULT_OUT = Path("results")
# Random states per check: the one ceiling the Python API refuses beyond too.


def load_states(path: str, nq: int, nv: int):
    """Read states from a ``.npy`` or ``.csv`` file, one row ``[q (nq), qd (nv), qdd (nv)]``.

    A CSV may carry ``#`` comments and a header row naming the coordinates; a ``.npy`` holds a
    2-D array (memory-mapped).  A file that cannot be read as such is a StateError saying what
    is expected.
    """
    return load_state_file(path, (("q", nq), ("qd", nv), ("qdd", nv)))


def load_state_file(path: str, parts: tuple[tuple[str, int], ...]):
    """Read rows ``[part_1, part_2, ...]`` from a ``.npy`` or ``.csv`` file, as :func:`load_states`: one
    ``(N, size)`` array per ``(name, size)`` of ``parts`` (e.g. ``(("q", 7), ("qd", 6))``)."""


    columns = sum(size for _, size in parts)
    layout = ", ".join(f"{name} {size}" for name, size in parts)
    names = ", ".join(name for name, _ in parts)
    expected = f"expected rows of {columns} numbers ({layout})"
    file = Path(path)
    if not file.is_file():
        raise StateError(f"no states file {path!r}")
    try:
        if file.suffix == ".npy":
            rows = np.load(file, mmap_mode="r", allow_pickle=False)
        else:
            header = _csv_header(file, columns, path, expected)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # NumPy warns about an empty file; the message below says it
                rows = np.loadtxt(file, delimiter=",", ndmin=2, comments="#", skiprows=header)
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
        raise StateError(f"{path}: each row needs {columns} numbers ({names}), found {rows.shape[1]}")
    rows = np.asarray(rows, dtype=float)
    out, start = [], 0
    for _, size in parts:
        out.append(rows[:, start : start + size])
        start += size
    return tuple(out)


def _csv_header(file: Path, columns: int, path: str, expected: str) -> int:
    """The lines to skip before a CSV's numbers: through its header row if its first row names the columns."""
    with file.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            cells = [cell.strip() for cell in line.split("#", 1)[0].split(",")]
            if cells == [""]:
                continue  # a blank or comment line
            try:
                [float(cell) for cell in cells]
            except ValueError:
                if any(_is_number(cell) for cell in cells) or "" in cells:
                    return 0  # a row of numbers with a typo: loadtxt names the bad cell
                if len(cells) != columns:
                    shown = ", ".join(cells[:8]) + (", ..." if len(cells) > 8 else "")
                    raise StateError(f"cannot read states from {path}: its first row names {len(cells)} columns "
                                     f"({shown[:200]}); {expected}") from None
                return number
            return 0
    return 0


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def tolerance(what: str, high: float):
    """An argparse type: a tolerance, refused as the Python API refuses it (:func:`validate.tolerance`)."""
    return arguments.validated(what, float, lambda value: validate.tolerance(value, high, what),
                               lambda text: f"{text!r} is not a number")


def state_range(what: str):
    """An argparse type: ``R`` (-R to R) or ``LOW,HIGH`` (give a negative LOW as ``--q-range=-1,2``)."""
    return arguments.validated(what, lambda text: [float(v) for v in text.split(",")],
                               lambda values: validate.interval(values[0] if len(values) == 1 else values, what),
                               lambda text: f"{what} takes R (for -R to R) or LOW,HIGH, got {text!r}")


# The ranges of random states each command draws (the CLI flag, the Python argument, its help).
_RANGE_FLAGS = {
    "q": ("--q-range", "q_range", "hinges without a range in the model, rad (default three turns each way: "
          "-18.85,18.85); joints with a range are drawn in it"),
    "slide": ("--slide-range", "slide_range", "slides without a range in the model, m (default 0.5)"),
    "qd": ("--qd-range", "qd_range", "every velocity, rad/s or m/s (default 30)"),
    "qdd": ("--qdd-range", "qdd_range", "every acceleration, rad/s^2 or m/s^2 (default 100)"),
}


def add_ranges(p: argparse.ArgumentParser, parts: tuple[str, ...] = ("q", "slide", "qd", "qdd")) -> None:
    """``--q-range``, ``--slide-range``, ``--qd-range``, ``--qdd-range``: where random states are drawn."""
    for part in parts:
        flag, _, what = _RANGE_FLAGS[part]
        p.add_argument(flag, type=state_range(flag), metavar="R|LOW,HIGH",
                       help=f"random states: {what}; R for -R to R (the report prints every range)")


def _ranges(args) -> dict:
    """The check's keyword arguments for the ranges given on the command line."""
    return {name: getattr(args, name) for _, name, _ in _RANGE_FLAGS.values() if getattr(args, name, None) is not None}


def add_timeout(p: argparse.ArgumentParser) -> None:
    """``--timeout SECONDS``: the check (import and calls of the user's function included) is stopped after it."""

    p.add_argument("--timeout", type=arguments.number(0.0, TIMEOUT_MAX, "--timeout", low_open=True),
                   metavar="SECONDS",
                   help="stop the check if it has not finished after SECONDS (a function that hangs): one line, "
                        "exit 2, nothing written (default: no limit)")


class _Stopped(Exception):
    """SIGTERM arrived while a check ran."""


def _run_check(args, command) -> int:
    """Run ``command(args)`` with SIGTERM (and Ctrl-C) ending it, and its worker, with one line and nothing written."""
    def stop(signum, frame):
        raise _Stopped

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: leave signals alone
        return command(args)
    try:
        return command(args)
    except _Stopped:
        print("crossdyn: check stopped by SIGTERM before it finished; no report was written", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("crossdyn: check interrupted before it finished; no report was written", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def _function_stem(spec: str) -> str:
    """``file-func`` of ``FILE.py:FUNC`` (the file's stem) or ``module-func`` of ``module:FUNC``."""
    file, _, func = spec.rpartition(":")
    return f"{Path(file).stem if file.endswith('.py') or '/' in file else file}-{func}"


def prepare(args, name: str):
    """Refuse what can be refused before anything runs: the stored baseline, the JUnit and baseline folders."""
    return baseline.load(args.baseline, [name]) if getattr(args, "baseline", None) else None


def _finish(args, name: str, metrics: dict, passed: bool, text: str, figure, figure_name: str, stored,
            expected: str, measured: str, seconds: float) -> int:
    """Write metrics.json and the plot, print the report, JUnit and baselines; the exit status."""
    out_dir = make_out_dir(Path(args.out) / name)
    for folder in (getattr(args, "save_baseline", None), args.junit.parent if getattr(args, "junit", None) else None):
        if folder is not None:
            make_out_dir(folder)
    write_json(out_dir / "metrics.json", metrics)
    figure.savefig(out_dir / figure_name, dpi=110, bbox_inches="tight")
    print(text)
    print(f"  results in {out_dir}")
    comparison = None
    if stored is not None:
        comparison = baseline.compare(name, as_stored(metrics), stored.get(name))
        print(baseline.report([comparison], args.baseline), end="")
    if getattr(args, "save_baseline", None):
        baseline.save(args.save_baseline, {name: as_stored(metrics)})
        print(f"  baseline saved in {args.save_baseline / (name + '.json')}")
    if getattr(args, "junit", None):
        outcome = Outcome(name, expected, measured, passed, seconds, baseline=comparison, metrics=metrics)
        write_junit(args.junit, [outcome], out_dir.parent)
    return 0 if passed and (comparison is None or comparison.passed) else 1


def _conditions(args, **more) -> dict:
    """What a baseline must have been taken under to compare (metrics.json's ``params``)."""
    keys = ("mjcf", "samples", "states", "atol", "rtol", "dynamics", "q_range", "slide_range", "qd_range", "qdd_range")
    return {**{k: getattr(args, k) for k in keys if hasattr(args, k)}, **more}


def report_check(report, args, name: str, title: str, extra: dict, seconds: float) -> int:
    metrics = {**extra, **report.to_dict()}
    figure = figures.term_errors(report, title)
    stored = getattr(args, "_stored", None)
    expected = f"agree with mj_inverse within {report.atol:g} + {report.rtol:g} |tau|"
    return _finish(args, name, metrics, report.passed, report.text(title, verbose=getattr(args, "verbose", False)),
                   figure, "term_errors.png", stored, expected, report.diagnosis, seconds)


def _cmd_check_derivation(args) -> int:
    name = f"check-derivation-{_function_stem(args.derivation)}"
    args._stored = prepare(args, name)
    start = time.perf_counter()
    model = load_model(args.mjcf)
    states = load_states(args.states, model.nq, model.nv) if args.states else None
    # The user's file is imported and called in a worker process: its exit or crash is a one-line error.
    report = check_isolated(args.derivation, args.mjcf, dynamics=args.dynamics, samples=args.samples, seed=args.seed,
                            states=states, atol=args.atol, rtol=args.rtol, timeout=args.timeout, **_ranges(args))
    extra = {"derivation": args.derivation, "model": str(args.mjcf), "states": args.states,
             "params": _conditions(args, function=args.derivation)}
    return report_check(report, args, name, f"{args.derivation} vs mj_inverse ({args.dynamics}) on {args.mjcf}",
                        extra, time.perf_counter() - start)


# The checks the commands run in a worker (module:function, imported there).
_QUANTITY_CHECK = "crossdyn.experiments.core.checks:check"
_LINEARIZATION_CHECK = "crossdyn.experiments.core.checks.linearization:check_linearization"

# The states each quantity's function takes, and the rows of its --states file.
_STATE_PARTS = {
    "kinematics": ("q",), "jacobian": ("q",), "mass-matrix": ("q",), "bias": ("q", "qd"),
    "energy": ("q", "qd"), "forward-dynamics": ("q", "qd", "tau"),
}


def _cmd_check_quantity(args) -> int:
    """Any of kinematics, jacobian, mass-matrix, bias, energy, forward-dynamics."""

    quantity = args.quantity
    name = f"check-{quantity}-{_function_stem(args.function)}"
    args._stored = prepare(args, name)
    start = time.perf_counter()
    model = load_model(args.mjcf)
    parts = ("q",) if quantity == "bias" and args.gravity_only else _STATE_PARTS[quantity]
    sizes = {"q": model.nq, "qd": model.nv, "tau": model.nv}
    states = load_state_file(args.states, tuple((p, sizes[p]) for p in parts)) if args.states else None
    options = {"samples": args.samples, "seed": args.seed, "states": states, "atol": args.atol, "rtol": args.rtol,
               **_ranges(args)}
    specific = {"site": args.site, "body": args.body} if quantity in ("kinematics", "jacobian") else {}
    if quantity == "jacobian":
        specific |= {"frame": args.frame, "coordinates": args.coordinates}
    if quantity == "bias":
        specific["gravity_only"] = args.gravity_only
    if hasattr(args, "dynamics"):
        specific["dynamics"] = args.dynamics
    # The user's file is imported and called in a worker process, as check derivation's.
    report = check_isolated(args.function, args.mjcf, check=_QUANTITY_CHECK, first=(quantity,), timeout=args.timeout,
                            **options, **specific)
    title = f"{quantity}: {args.function} on {args.mjcf}"
    conditions = _conditions(args, function=args.function,
                             **{k: v for k, v in specific.items() if v is not None and k != "dynamics"})
    metrics = {"model": str(args.mjcf), "states": args.states, "params": conditions, **report.to_dict()}
    expected = f"agree with MuJoCo within {report.atol:g} + {report.rtol:g} |MuJoCo's|"
    return _finish(args, name, metrics, report.passed, report.text(title, verbose=args.verbose),
                   entry_errors(report, title), "entry_errors.png", args._stored, expected, report.diagnosis,
                   time.perf_counter() - start)


def add_sampling(p: argparse.ArgumentParser) -> None:
    p.add_argument("--samples", type=arguments.count(1, STATES_MAX, "--samples"), default=10_000,
                   help=f"random states (default 10000, at most {STATES_MAX:,}; streamed in chunks, so memory "
                   "stays the same whatever the count)")
    p.add_argument("--seed", type=arguments.seed, default=0,
                   help=f"seed of the random states (default 0; 0 to {SEED_MAX})")
    p.add_argument("--out", type=arguments.out_dir, default=DEFAULT_OUT, metavar="DIR",
                   help="output folder (default results/)")


def add_outputs(p: argparse.ArgumentParser) -> None:
    """--verbose, --junit and baselines, on every check command."""
    p.add_argument("--verbose", action="store_true",
                   help="list every off entry and each part's largest error (the report otherwise groups them "
                        "and shows the first lines; metrics.json always has them all)")
    p.add_argument("--junit", type=arguments.out_file, metavar="FILE",
                   help="write the check as one JUnit test case to FILE (for CI)")
    p.add_argument("--save-baseline", type=arguments.out_dir, metavar="DIR",
                   help="store this check's numeric metrics in DIR/NAME.json")
    p.add_argument("--baseline", type=Path, metavar="DIR",
                   help="compare every numeric metric with DIR/NAME.json; drift exits 1 (tolerance "
                        f"|now - baseline| <= {DEFAULT_ATOL:g} + {DEFAULT_RTOL:g} |baseline|)")


def _add_tolerances(p: argparse.ArgumentParser, unit: str) -> None:
    p.add_argument("--atol", type=tolerance("--atol", ATOL_MAX), default=ATOL,
                   help=f"absolute tolerance, {unit} (default {ATOL:g}: {TOLERANCE_REASON})")
    p.add_argument("--rtol", type=tolerance("--rtol", RTOL_MAX), default=RTOL,
                   help=f"relative tolerance, of |MuJoCo's value| (default {RTOL:g}); an entry passes if "
                   "|error| <= atol + rtol |MuJoCo's|")


def _add_dynamics(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--dynamics", choices=DYNAMICS, default=DYNAMICS[0],
                   help=f"truth to compare with: rigid-body (default: {what} of the rigid bodies, the model's "
                   "armature, damping, stiffness and gravcomp removed) or as-modeled (kept); contacts, limits, "
                   "equality constraints, frictionloss and fluid forces are off in both")


def _add_target(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--site", metavar="NAME", help="the site whose frame is checked")
    where.add_argument("--body", metavar="NAME", help="the body whose frame (its origin, xpos/xmat) is checked")


# Per quantity: (help line, the function's signature and return in words, the --states row, the tolerance unit).
QUANTITIES = {
    "kinematics": ("your forward kinematics of a site or body: FUNC(q) -> position (3,) or (position, rotation)",
                   "FUNC(q) returns the world position (3,) m, or (position (3,), rotation (3, 3)) with the "
                   "frame's axes as columns (MuJoCo's site_xmat); compared with mj_kinematics' site_xpos/site_xmat "
                   "(xpos/xmat for --body)", "q", "m (rotation entries unitless)"),
    "jacobian": ("your point Jacobian: FUNC(q) -> (6, nv) [linear; angular] or (3, nv)",
                 "FUNC(q) returns (6, nv) (linear rows x, y, z then angular) or (3, nv), per unit qvel; compared "
                 "with mj_jacSite/mj_jacBody, world-aligned (or --frame local)", "q", "m/rad or rad/rad"),
    "mass-matrix": ("your mass matrix: FUNC(q) -> M (nv, nv)",
                    "FUNC(q) returns the joint-space inertia (nv, nv); compared with mj_fullM", "q", "kg m^2 or kg"),
    "bias": ("your bias forces: FUNC(q, qd) -> c + g (nv,), or FUNC(q) -> g with --gravity-only",
             "FUNC(q, qd) returns Coriolis, centrifugal and gravity forces (nv,); compared with qfrc_bias "
             "(minus qfrc_passive as-modeled)", "q, qd", "N m or N"),
    "energy": ("your energies: FUNC(q, qd) -> (kinetic, potential)",
               "FUNC(q, qd) returns (kinetic, potential) in J; compared with MuJoCo's energy, the potential up to "
               "one constant over all states (named in the report)", "q, qd", "J"),
    "forward-dynamics": ("your forward dynamics: FUNC(q, qd, tau) -> qdd (nv,)",
                         "FUNC(q, qd, tau) returns accelerations (nv,); compared with mj_forward's qacc with "
                         "qfrc_applied = tau", "q, qd, tau", "rad/s^2 or m/s^2"),
}


def _add_quantity(checks, quantity: str) -> None:
    help_line, returns, rows, unit = QUANTITIES[quantity]
    p = checks.add_parser(quantity, help=help_line, description=f"{help_line}. {returns}.")
    p.add_argument("function", metavar="FILE.py:FUNC",
                   help="your function (FILE.py:FUNC or module:FUNC), for one state or a batch along the first "
                        "axis, in MuJoCo's coordinates (qpos, qvel)")
    p.add_argument("--mjcf", required=True, metavar="MODEL",
                   help="built-in model name, or an MJCF or URDF path it describes, as it comes")
    if quantity in ("kinematics", "jacobian"):
        _add_target(p)
    if quantity == "jacobian":
        p.add_argument("--frame", choices=FRAMES, default=FRAMES[0],
                       help="world-aligned (default: MuJoCo's mj_jacSite, Pinocchio's LOCAL_WORLD_ALIGNED) or "
                            "local (the point's own axes, Pinocchio's LOCAL)")
        p.add_argument("--coordinates", type=lambda text: [n.strip() for n in text.split(",") if n.strip()],
                       metavar="J1,J2", help="a closed loop's independent joints: the Jacobian per unit velocity "
                       "of these, the others following the model's equality constraints (give closed poses "
                       "with --states)")
    if quantity == "bias":
        p.add_argument("--gravity-only", action="store_true",
                       help="FUNC(q) is the gravity force alone, compared at zero velocity")
    if quantity in ("mass-matrix", "bias", "energy", "forward-dynamics"):
        _add_dynamics(p, {"mass-matrix": "M(q)", "bias": "c + g", "energy": "the energies",
                          "forward-dynamics": "qdd"}[quantity])
    p.add_argument("--states", metavar="FILE",
                   help=f"check at these states (.csv/.npy rows {rows}; q only with --gravity-only)"
                   if quantity == "bias" else f"check at these states (.csv/.npy rows {rows})")
    _add_tolerances(p, unit)
    add_ranges(p, {"q": ("q", "slide"), "q, qd": ("q", "slide", "qd")}.get(rows, ("q", "slide", "qd", "qdd")))
    add_sampling(p)
    add_timeout(p)
    add_outputs(p)
    p.set_defaults(func=lambda args: _run_check(args, _cmd_check_quantity), quantity=quantity)


def _numbers(what: str):
    """An argparse type: comma-separated finite numbers (``0,0.4,0,-1.2``)."""

    def parse(text: str):
        try:
            values = [float(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} takes comma-separated numbers, got {text!r}") from None
        if not values or not all(math.isfinite(v) for v in values):
            raise argparse.ArgumentTypeError(f"{what} takes finite comma-separated numbers, got {text!r}")
        return values

    parse.__name__ = what
    return parse


def _cmd_check_linearization(args) -> int:
    name = f"check-linearization-{_function_stem(args.function)}"
    args._stored = prepare(args, name)
    start = time.perf_counter()
    load_model(args.mjcf)  # a missing or broken model is refused here, before a worker starts
    ctrl = "hold" if args.ctrl == ["hold"] else args.ctrl
    report = check_isolated(args.function, args.mjcf, check=_LINEARIZATION_CHECK, keyframe=args.keyframe,
                            qpos=args.qpos, qvel=args.qvel, ctrl=ctrl, atol=args.atol, rtol=args.rtol,
                            eps=args.eps, timeout=args.timeout)
    title = f"linearization: {args.function} on {args.mjcf}"
    conditions = {"mjcf": args.mjcf, "function": args.function, "keyframe": args.keyframe, "qpos": args.qpos,
                  "qvel": args.qvel, "ctrl": args.ctrl, "atol": args.atol, "rtol": args.rtol, "eps": args.eps}
    metrics = {"model": str(args.mjcf), "params": conditions, **report.to_dict()}
    expected = f"agree with linearize within {report.atol:g} + {report.rtol:g} |MuJoCo's|"
    return _finish(args, name, metrics, report.passed, report.text(title, verbose=args.verbose),
                   entry_errors(report, title), "entry_errors.png", args._stored, expected, report.diagnosis,
                   time.perf_counter() - start)


def _add_linearization(checks) -> None:
    help_line = "your linearization: FUNC(q, qd, u) -> (A, B) at an operating point"
    p = checks.add_parser("linearization", help=help_line, description=(
        f"{help_line}. FUNC is called once with the point's q (nq,), qd (nv,), u (nu,) and returns continuous-time "
        "A (2nv, 2nv) and B (2nv, nu) on the state [dq, dqd] (dq in MuJoCo's tangent space: a free joint has 6 "
        "dofs) and the input ctrl - ctrl_op; compared with crossdyn's linearize of the model as it comes."))
    p.add_argument("function", metavar="FILE.py:FUNC", help="your function (FILE.py:FUNC or module:FUNC)")
    p.add_argument("--mjcf", required=True, metavar="MODEL",
                   help="built-in model name, or an MJCF or URDF path it describes, as it comes")
    p.add_argument("--keyframe", metavar="NAME", help="the operating point: this keyframe's qpos, qvel and ctrl")
    p.add_argument("--qpos", type=_numbers("--qpos"), metavar="Q1,Q2,...",
                   help="the operating pose (nq numbers; overrides the keyframe's)")
    p.add_argument("--qvel", type=_numbers("--qvel"), metavar="V1,V2,...",
                   help="its velocity (nv numbers; default rest)")
    p.add_argument("--ctrl", type=lambda text: ["hold"] if text == "hold" else _numbers("--ctrl")(text),
                   metavar="U1,U2,...|hold",
                   help="its control (nu numbers; default the keyframe's or zero); 'hold': the control that holds "
                        "the pose at rest")
    p.add_argument("--atol", type=tolerance("--atol", ATOL_MAX), default=linearization.ATOL,
                   help=f"absolute tolerance, in A's and B's units (default {linearization.ATOL:g}: "
                        f"{linearization.TOLERANCE_REASON})")
    p.add_argument("--rtol", type=tolerance("--rtol", RTOL_MAX), default=linearization.RTOL,
                   help=f"relative tolerance, of |MuJoCo's entry| (default {linearization.RTOL:g})")
    p.add_argument("--eps", type=arguments.number(0.0, EPS_MAX, "--eps", low_open=True), metavar="STEP",
                   help="the finite-difference step (rad, m, rad/s, control units; default: 1e-6 per direction, cut "
                        "by tenths while it makes or breaks a contact or crosses a limit); the check takes it again "
                        "a tenth as long and says when the answer depends on it")
    p.add_argument("--out", type=arguments.out_dir, default=DEFAULT_OUT, metavar="DIR",
                   help="output folder (default results/)")
    add_timeout(p)
    add_outputs(p)
    p.set_defaults(func=lambda args: _run_check(args, _cmd_check_linearization), quantity="linearization")


def add_parser(sub) -> None:
    """Add ``check`` and its commands to the ``crossdyn`` subcommands."""
    p_check = sub.add_parser("check", help="cross-check a hand derivation, part by part, against MuJoCo")
    checks = p_check.add_subparsers(dest="system", required=True, metavar="WHAT")
    p_der = checks.add_parser("derivation", help="your own inverse dynamics: tau = FUNC(q, qd, qdd) in FILE.py")
    p_der.add_argument("derivation", metavar="FILE.py:FUNC",
                       help="function (FILE.py:FUNC or module:FUNC) taking MuJoCo-layout q, qd, qdd (one state or a "
                            "batch), returning tau")
    p_der.add_argument("--mjcf", required=True, metavar="MODEL",
                       help="built-in model name, or an MJCF or URDF path it describes, as it comes")
    p_der.add_argument("--dynamics", choices=DYNAMICS, default=DYNAMICS[0],
                       help="truth to compare with: rigid-body (default: M(q) qdd + c + g, the model's armature, "
                       "damping, stiffness and gravcomp removed) or as-modeled (kept); contacts, limits, equality "
                       "constraints, frictionloss and fluid forces are off in both")
    p_der.add_argument("--states", metavar="FILE", help="check at these states (.csv/.npy rows q, qd, qdd)")
    p_der.add_argument("--atol", type=tolerance("--atol", ATOL_MAX), default=ATOL,
                       help=f"absolute tolerance, N m or N (default {ATOL:g}: {TOLERANCE_REASON})")
    p_der.add_argument("--rtol", type=tolerance("--rtol", RTOL_MAX), default=RTOL,
                       help=f"relative tolerance, of |mj_inverse| (default {RTOL:g}); an entry passes if "
                       "|error| <= atol + rtol |reference|")
    add_ranges(p_der)
    add_sampling(p_der)
    add_timeout(p_der)
    add_outputs(p_der)
    p_der.set_defaults(func=lambda args: _run_check(args, _cmd_check_derivation))
    for quantity in QUANTITIES:
        _add_quantity(checks, quantity)
    _add_linearization(checks)
    for name, entry in commands.registered_commands("check").items():  # the systems' own (crossdyn check two-link, ...)
        p = checks.add_parser(name, help=commands.summary(entry))
        commands.configure(entry, p)
        command = p.get_default("func")
        if command is not None:  # SIGTERM ends it with one line, as every check
            p.set_defaults(func=lambda args, command=command: _run_check(args, command))
