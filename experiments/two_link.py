"""Two-link arm: every hand derivation of the closed form (docs/derivations/two-link.md) against MuJoCo.

``two-link-<variant>`` checks each of ``analytic.two_link.VARIANTS`` against ``mj_inverse`` term by term at
seeded random states and along a smooth trajectory (a printed erratum must fail in exactly its own term);
``two-link-scope`` draws the torques along a 5 s trajectory and replays the analytic torque as feedforward;
``derivation-attribution`` checks four derivations, three of them wrong, and the checker must blame the right
term (:data:`FAULTS`).  Each is a computation returning a frozen result, a ``judge_*`` and a ``plot_*``.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from pathlib import Path

import mujoco
import numpy as np
from matplotlib.figure import Figure

from ..analytic import two_link
from ..analytic.two_link import VARIANTS, TwoLinkParams
from .common.two_link_arm import two_link_params
from .core import figures
from .core.checks.common import sample_states
from .core.checks.inverse_dynamics import check
from .core.checks.report import CheckReport
from .core.cli.check import add_outputs, add_sampling, load_states, prepare, report_check
from .core.errors import ParameterError
from .core.models import load_model, with_options
from .core.registry import Param, Verdict, experiment
from .core.runner import Context
from .core.truth import inverse_dynamics

# The gallery's heading for this module's experiments, and the docs/derivations page of what they check.
GALLERY_HEADING = "Two-link arm"
DERIVATION_PAGE = "two-link"

__all__ = ["default_model", "check_variant", "trajectory", "feedforward_drift", "FAULTS", "faulty_two_link",
           "VariantCheck", "crosscheck_variant", "judge_variant", "plot_variant", "ScopeResult", "scope_traces",
           "judge_scope", "plot_scope", "AttributionResult", "attribute_faults", "judge_attribution",
           "plot_attribution"]

# Exact variants must agree with mj_inverse to round-off: torques here are at most
# ~2 N m, so double-precision round-off is ~1e-15 N m; 1e-10 N m leaves 5 orders.
ATOL = 1e-10
SAMPLES, SHORT_SAMPLES = 10_000, 500

OFFSET_TOL = 1e-12  # the printed form's mass-matrix offsets vs the missing inertias: sums of the same few doubles


def default_model(variant: str) -> str:
    """The built-in model a variant is exact on (the point-mass arm for the textbook)."""
    return "two_link_arm_point_mass" if variant == "point-mass" else "two_link_arm"


def check_variant(
    variant: str,
    model: mujoco.MjModel,
    samples: int = SAMPLES,
    seed: int = 0,
    atol: float = ATOL,
    states: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[CheckReport, TwoLinkParams]:
    """Cross-check one analytic variant against ``mj_inverse`` on ``model`` (a user's own two-link MJCF too:
    the parameters are read from it); ``states`` replaces the random states with given ``(q, qd, qdd)`` rows.

    Raises:
      ParameterError: unknown variant.
      ModelError: the model is not a planar two-link arm.
    """
    if variant not in VARIANTS:
        raise ParameterError(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
    params = two_link_params(model)
    tau_fn = functools.partial(VARIANTS[variant], params)
    report = check(tau_fn, model, samples=samples, seed=seed, atol=atol, rtol=0.0, states=states,
                   label=f"variant {variant}")
    return report, params


# A smooth, bounded 5 s excursion through large angles: per joint, sums of
# a sin(2 pi f t + phase) with (a rad, f Hz, phase rad).
_TRAJECTORY = (
    ((1.2, 0.30, 0.0), (0.5, 0.85, 0.7)),
    ((1.5, 0.45, 1.0), (0.4, 1.30, -0.4)),
)
DURATION = 5.0  # s, as in the scope plot of the Newton-Euler article
ORDER_WINDOW = 1.0  # s, horizon over which the start-hold drift's order is measured
MIDPOINT_DRIFT_MAX = 1e-2  # rad over 5 s at dt = 1 ms: an order above the second-order hold's drift


def trajectory(t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reference trajectory: ``q, qd, qdd``, each ``(len(t), 2)``."""
    t = np.asarray(t, dtype=float)[:, None]
    q, qd, qdd = (np.zeros((t.shape[0], 2)) for _ in range(3))
    for j, terms in enumerate(_TRAJECTORY):
        for a, f, phase in terms:
            w = 2 * np.pi * f
            arg = w * t[:, 0] + phase
            q[:, j] += a * np.sin(arg)
            qd[:, j] += a * w * np.cos(arg)
            qdd[:, j] += -a * w**2 * np.sin(arg)
    return q, qd, qdd


def feedforward_drift(model: mujoco.MjModel, tau_fn, timestep: float, midpoint: bool) -> np.ndarray:
    """Replay analytic torques open loop in MuJoCo (RK4); return ``q_sim - q_ref``, ``(steps+1, 2)``, rad.

    The torque is held over each step: sampled at the step's start that is first order in dt, at its
    midpoint second order; the chaotic arm then amplifies any error.
    """
    model = with_options(model, timestep=timestep, integrator=mujoco.mjtIntegrator.mjINT_RK4)
    data = mujoco.MjData(model)
    steps = int(round(DURATION / timestep))
    t = np.arange(steps + 1) * timestep
    q_ref, qd_ref, _ = trajectory(t)
    data.qpos[:], data.qvel[:] = q_ref[0], qd_ref[0]
    t_ctrl = t[:-1] + (0.5 * timestep if midpoint else 0.0)
    tau = tau_fn(*trajectory(t_ctrl))
    error = np.zeros((steps + 1, 2))
    for k in range(steps):
        data.ctrl[:] = tau[k]
        mujoco.mj_step(model, data)
        error[k + 1] = data.qpos - q_ref[k + 1]
    return error


# --- two-link-<variant>: one variant against mj_inverse ------------------------------


@dataclasses.dataclass(frozen=True)
class VariantCheck:
    """One analytic variant against ``mj_inverse``: random states and a trajectory.

    Attributes:
      variant, model: the name in ``VARIANTS`` and the MJCF it was checked on.
      params: the arm's parameters, read from that model.
      report: the term-wise check at the random states (torques in N m).
      trajectory_max_abs_error: max |variant - mj_inverse| along :func:`trajectory` (501 samples), N m.
      attribution: for a printed erratum (:data:`EXPECTED_MISMATCH`), the numbers that locate its error.
    """

    variant: str
    model: str
    params: TwoLinkParams
    report: CheckReport
    trajectory_max_abs_error: float
    attribution: dict = dataclasses.field(default_factory=dict)


def crosscheck_variant(variant: str, samples: int = SAMPLES, seed: int = 0) -> VariantCheck:
    """Check one variant on its built-in model at seeded random states and along the trajectory (no files)."""
    model = load_model(default_model(variant))
    report, params = check_variant(variant, model, samples=samples, seed=seed)
    q, qd, qdd = trajectory(np.linspace(0.0, DURATION, 501))
    along = float(np.abs(VARIANTS[variant](params, q, qd, qdd) - inverse_dynamics(model, q, qd, qdd)).max())
    attribution = (EXPECTED_MISMATCH[variant][1](params, report, model, samples, seed)
                   if variant in EXPECTED_MISMATCH else {})
    return VariantCheck(variant, default_model(variant), params, report, along, attribution)


def _mass_matrix_offsets(params: TwoLinkParams, report: CheckReport, model, samples: int, seed: int) -> dict:
    """The lecture as printed: how far the mean mass-matrix error is from the missing inertias, kg m^2."""
    missing = np.array([[params.i1 + params.i2, params.i2], [params.i2, params.i2]])
    offset_error = float(np.abs(np.array(report.terms["mass_matrix"].mean_error) + missing).max())
    return {"expected_offsets": (-missing).tolist(), "offset_error": offset_error}


def _judge_mass_matrix_offsets(result: VariantCheck) -> Verdict:
    """The error must be the missing inertias, constant, in M only."""
    found = result.report.failing_terms == ["mass_matrix"] and result.attribution["offset_error"] <= OFFSET_TOL
    return Verdict(found, f"mass matrix only; offsets match I1+I2, I2 to {result.attribution['offset_error']:.0e}"
                   if found else f"not attributed as expected: {result.report.diagnosis}")


def _missing_centrifugal(params: TwoLinkParams, report: CheckReport, model, samples: int, seed: int) -> dict:
    """The printed matrix form's velocity-term error per joint, and joint 2's with ``h qd1^2`` put back, N m."""
    q, qd, _ = sample_states(model, samples, seed)  # the states check() drew
    zero = np.zeros_like(q)
    variant = VARIANTS["lecture-matrix-form"]
    error = (variant(params, q, qd, zero) - variant(params, q, zero, zero)) - (
        inverse_dynamics(model, q, qd, zero) - inverse_dynamics(model, q, zero, zero))
    h = params.m2 * params.l1 * params.p2 * np.sin(q[:, 1])
    return {
        "velocity_error_joint1": float(np.abs(error[:, 0]).max()),
        "velocity_error_joint2_max": float(np.abs(error[:, 1]).max()),
        "residual_after_h_qd1_squared": float(np.abs(error[:, 1] + h * qd[:, 0] ** 2).max()),
    }


def _judge_missing_centrifugal(result: VariantCheck) -> Verdict:
    """Velocity terms only, joint 2 only, equal to -h qd1^2."""
    a = result.attribution
    found = (result.report.failing_terms == ["velocity"] and a["velocity_error_joint1"] <= ATOL
             and a["residual_after_h_qd1_squared"] <= ATOL)
    residual = a["residual_after_h_qd1_squared"]
    return Verdict(found, f"velocity terms of joint 2 only; error is -h qd1^2 to {residual:.0e}"
                   if found else f"not attributed as expected: {result.report.diagnosis}")


# Printed errata pass when the checker finds exactly their error (docs/derivations/errata.md):
# variant -> (expected outcome, measure(params, report, model, samples, seed) -> numbers, judge)
EXPECTED_MISMATCH = {
    "lecture-no-link-inertia": ("mismatch, in the mass matrix only: offsets -(I1+I2, I2, I2)", _mass_matrix_offsets,
                         _judge_mass_matrix_offsets),
    "lecture-matrix-form": ("mismatch, in the velocity terms of joint 2 only: the missing h qd1^2",
                                _missing_centrifugal, _judge_missing_centrifugal),
}


def judge_variant(result: VariantCheck) -> tuple[Verdict, dict]:
    """An exact variant agrees to :data:`ATOL` at the states and along the trajectory; a printed erratum fails
    in exactly its own term.  Returns the verdict and the metrics."""
    report = result.report
    metrics = {"variant": result.variant, "model": result.model, **report.to_dict(),
               "trajectory_max_abs_error": result.trajectory_max_abs_error}
    if result.variant in EXPECTED_MISMATCH:
        verdict = EXPECTED_MISMATCH[result.variant][2](result)
        metrics.update({"checker_passed": report.passed, "passed": bool(verdict.passed), **result.attribution,
                        "measured": verdict.measured})
    else:
        along = result.trajectory_max_abs_error
        verdict = Verdict(report.passed and along <= ATOL, f"max |error| {max(report.max_abs_error, along):.1e} N m")
        metrics.update(verdict.as_metrics())
    return verdict, metrics


def plot_variant(result: VariantCheck, out_dir) -> list[Path]:
    """Each term's per-sample error with the tolerance (``term_errors.png``) into ``out_dir``."""
    title = f"{result.variant} vs mj_inverse ({result.report.samples} states)"
    return [figures.save(figures.term_errors(result.report, title), out_dir, "term_errors.png")]


def _crosscheck_experiment(variant: str):
    """Register the cross-check experiment of one variant (one function, a parameter)."""
    expected = (EXPECTED_MISMATCH[variant][0] if variant in EXPECTED_MISMATCH
                else f"agree with mj_inverse to {ATOL:g} N m")

    @experiment(
        f"two-link-{variant}",
        summary=f"two-link arm, variant {variant!r} vs mj_inverse at random states and along a trajectory",
        expected=expected,
        params={"samples": Param(SAMPLES, "number of random states", 1, 10_000_000)},
    )
    def run(ctx: Context) -> dict:
        result = crosscheck_variant(variant, SHORT_SAMPLES if ctx.short else int(ctx.params["samples"]), ctx.seed)
        plot_variant(result, ctx.out_dir)
        return judge_variant(result)[1]

    return run


for _variant in VARIANTS:
    _crosscheck_experiment(_variant)


# --- two-link-scope: the scope plot of the Newton-Euler article and a feedforward replay ---------

# (time step s, torque held from the step's midpoint?) of the four replays
_REPLAYS = ((1e-3, False), (5e-4, False), (1e-3, True), (5e-4, True))


@dataclasses.dataclass(frozen=True)
class ScopeResult:
    """Torques along the 5 s trajectory and the analytic torque replayed open loop.

    Attributes:
      t: sample times, ``(1001,)``, s.
      tau_mujoco: ``mj_inverse`` along the trajectory, ``(1001, 2)``, N m.
      tau: variant -> its torque along the trajectory, ``(1001, 2)``, N m.
      drift: replay (``"start_dt1ms"``, ``"midpoint_dt0.5ms"``, ...) -> :func:`feedforward_drift` of ``lagrange``.
      drift_timestep: replay -> its time step, s.
    """

    t: np.ndarray
    tau_mujoco: np.ndarray
    tau: dict[str, np.ndarray]
    drift: dict[str, np.ndarray]
    drift_timestep: dict[str, float]


def scope_traces(model: mujoco.MjModel | None = None) -> ScopeResult:
    """Every variant's torque along the trajectory, and four feedforward replays (no files)."""
    model = model or load_model("two_link_arm")
    params = two_link_params(model)
    t = np.linspace(0.0, DURATION, 1001)
    q, qd, qdd = trajectory(t)
    # Two time steps and two hold points measure the replay error's order instead of asserting a number.
    tau_fn = functools.partial(VARIANTS["lagrange"], params)
    keys = {(dt, mid): f"{'midpoint' if mid else 'start'}_dt{dt * 1e3:g}ms" for dt, mid in _REPLAYS}
    return ScopeResult(t, inverse_dynamics(model, q, qd, qdd),
                       {name: fn(params, q, qd, qdd) for name, fn in VARIANTS.items()},
                       {key: feedforward_drift(model, tau_fn, dt, mid) for (dt, mid), key in keys.items()},
                       {key: dt for (dt, _), key in keys.items()})


def judge_scope(result: ScopeResult) -> tuple[Verdict, dict]:
    """The exact variants within :data:`ATOL`; the replay's drift first (start hold) and second order
    (midpoint), +-0.3; the midpoint replay within :data:`MIDPOINT_DRIFT_MAX`.  Returns the verdict and the metrics.
    """
    diff = {name: np.abs(v - result.tau_mujoco).max() for name, v in result.tau.items()}
    drift = {key: float(np.abs(e).max()) for key, e in result.drift.items()}
    # The start hold lets the chaotic arm leave the reference within 5 s: its order is measured in the first second.
    early = {k: float(np.abs(e[: int(round(ORDER_WINDOW / result.drift_timestep[k])) + 1]).max())
             for k, e in result.drift.items()}
    order_start = np.log2(early["start_dt1ms"] / early["start_dt0.5ms"])
    order_mid = np.log2(drift["midpoint_dt1ms"] / drift["midpoint_dt0.5ms"])
    exact_ok = diff["lagrange"] <= ATOL and diff["newton-euler"] <= ATOL
    # +-0.3: the chaotic amplification is not exactly the same at both step sizes.
    orders_ok = abs(order_start - 1.0) < 0.3 and abs(order_mid - 2.0) < 0.3
    tracks = drift["midpoint_dt1ms"] <= MIDPOINT_DRIFT_MAX
    verdict = Verdict(exact_ok and orders_ok and tracks,
                      f"replay drift {drift['midpoint_dt1ms']:.1e} rad (order {order_mid:.2f}); "
                      f"start-hold order {order_start:.2f}")
    return verdict, {
        **verdict.as_metrics(),
        "max_abs_error": float(max(diff["lagrange"], diff["newton-euler"])),
        "trajectory_error": {k: float(v) for k, v in diff.items()},
        "feedforward_drift_rad": drift,
        "feedforward_drift_first_second_rad": early,
        "drift_order_start_hold": float(order_start),
        "drift_order_midpoint_hold": float(order_mid),
        "explanation": (
            "The analytic torque equals mj_inverse to round-off, so the replay's drift is the "
            "integration of a torque held constant over each RK4 step: first order in dt when "
            "sampled at the step start, second order at the midpoint, then amplified open loop "
            "by the double pendulum's sensitivity. Held at the step start the error grows until "
            "the arm leaves the reference (radians within 5 s); held at the midpoint it stays "
            "below a milliradian."
        ),
    }


def plot_scope(result: ScopeResult, out_dir) -> list[Path]:
    """The scope plot (``scope.png``) and the replays' drift (``feedforward_drift.png``) into ``out_dir``."""
    return [figures.save(_plot_scope_torques(result), out_dir, "scope.png"),
            figures.save(_plot_feedforward_drift(result), out_dir, "feedforward_drift.png")]


def _plot_scope_torques(result: ScopeResult) -> Figure:
    t, tau, tau_mj = result.t, result.tau, result.tau_mujoco
    fig, axes = figures.figure(3, 2, width=11.0, height=2.6, sharex=True)
    for j in range(2):
        ax = axes[0, j]
        ax.plot(t, tau_mj[:, j], "k", lw=2.5, label="MuJoCo mj_inverse")
        for name, v in tau.items():
            ax.plot(t, v[:, j], lw=1, label=name)
        ax.set_title(f"joint {j + 1} torque (N m)")
        for name in ("lagrange", "newton-euler"):  # round-off: dots, not a zig-zag line
            axes[1, j].semilogy(t, np.maximum(np.abs(tau[name][:, j] - tau_mj[:, j]), 1e-18), ".", ms=2, label=name)
        axes[1, j].set_title("|exact variant - MuJoCo| (N m)")
        for name in ("lecture-no-link-inertia", "lecture-matrix-form", "point-mass"):
            axes[2, j].plot(t, tau[name][:, j] - tau_mj[:, j], label=name)
        axes[2, j].set_title("approximate variant - MuJoCo (N m)")
        axes[2, j].set_xlabel("t (s)")
    for ax in axes[:, 0]:
        ax.legend(fontsize=7)
    return fig


def _plot_feedforward_drift(result: ScopeResult) -> Figure:
    fig, ax = figures.figure(1, 1, width=7.0, height=3.2)
    for key, err in result.drift.items():
        ts = np.arange(err.shape[0]) * result.drift_timestep[key]
        ax.semilogy(ts, np.maximum(np.abs(err).max(axis=1), 1e-18), label=key)
    ax.set_xlabel("t (s)")
    ax.set_ylabel("max |q_sim - q_ref| (rad)")
    ax.set_title("analytic torque replayed open loop in MuJoCo (RK4)")
    ax.legend(fontsize=7)
    return fig


@experiment(
    "two-link-scope",
    summary=("scope plot of the Newton-Euler article: torque along a 5 s trajectory, MuJoCo vs each variant; "
             "feedforward replay"),
    expected="exact variants agree along the path; feedforward drift shrinks O(dt) / O(dt^2)",
)
def scope(ctx: Context) -> dict:
    result = scope_traces()
    plot_scope(result, ctx.out_dir)
    return judge_scope(result)[1]


# --- Wrong derivations of the two-link arm, for the attribution showcase ----------


def _gravity_flipped(params, q, qd, qdd):
    # Potential energy written with the wrong sign of g.
    return two_link.lagrange(dataclasses.replace(params, g=-params.g), q, qd, qdd)


def _coriolis_dropped(params, q, qd, qdd):
    # The closed form with tau1's Coriolis term -2 h qd1 qd2 forgotten.
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    h = params.m2 * params.l1 * params.p2 * np.sin(q[..., 1])
    tau = two_link.lagrange(params, q, qd, qdd)
    tau[..., 0] += 2 * h * qd[..., 0] * qd[..., 1]
    return tau


# fault -> (derivation(params, q, qd, qdd), the term the checker must blame or None)
FAULTS: dict[str, tuple[Callable, str | None]] = {
    "correct": (two_link.lagrange, None),
    "lecture-no-link-inertia": (two_link.lecture_no_link_inertia, "mass_matrix"),
    "gravity-sign-flipped": (_gravity_flipped, "gravity"),
    "coriolis-dropped": (_coriolis_dropped, "velocity"),
}


def faulty_two_link(fault: str, params: two_link.TwoLinkParams) -> Callable:
    """A two-link derivation ``tau(q, qd, qdd)`` with a known fault (``FAULTS``)."""
    return functools.partial(FAULTS[fault][0], params)


@dataclasses.dataclass(frozen=True)
class AttributionResult:
    """Each derivation of :data:`FAULTS` checked against ``mj_inverse`` on ``two_link_arm``: fault -> report."""

    reports: dict[str, CheckReport]


def attribute_faults(samples: int = 1000, seed: int = 0) -> AttributionResult:
    """Check every derivation of :data:`FAULTS` at the same seeded states (no files)."""
    model = load_model("two_link_arm")
    params = two_link_params(model)
    return AttributionResult({fault: check(faulty_two_link(fault, params), model, samples=samples, seed=seed,
                                           label=fault) for fault in FAULTS})


def judge_attribution(result: AttributionResult) -> tuple[Verdict, dict]:
    """The correct derivation passes; each faulty one fails in exactly the term :data:`FAULTS` names.
    Returns the verdict and the metrics."""
    cases: dict[str, dict] = {}
    for fault, report in result.reports.items():
        blamed = FAULTS[fault][1]
        expected = [] if blamed is None else [blamed]
        ok = report.failing_terms == expected and report.passed == (blamed is None)
        cases[fault] = {"expected_failing_terms": expected, "failing_terms": report.failing_terms,
                        "as_expected": bool(ok), "diagnosis": report.diagnosis,
                        "max_abs_error": report.max_abs_error}
    verdict = Verdict(all(c["as_expected"] for c in cases.values()),
                      "; ".join(f"{k}: {','.join(v['failing_terms']) or 'pass'}" for k, v in cases.items()))
    return verdict, {**verdict.as_metrics(), "cases": cases}


def plot_attribution(result: AttributionResult, out_dir) -> list[Path]:
    """One term-error plot per derivation, ``FAULT.png``, into ``out_dir``."""
    return [figures.save(figures.term_errors(report, f"two-link derivation '{fault}' vs mj_inverse"), out_dir,
                       f"{fault}.png") for fault, report in result.reports.items()]


@experiment(
    "derivation-attribution",
    summary="check derivation on four two-link derivations: correct, lecture-no-link-inertia, "
    "gravity flipped, Coriolis dropped",
    expected="correct passes; the others fail in exactly mass matrix / gravity / velocity",
    params={"samples": Param(1000, "number of random states", 1, 1_000_000)},
)
def derivation_attribution(ctx: Context) -> dict:
    result = attribute_faults(200 if ctx.short else int(ctx.params["samples"]), ctx.seed)
    plot_attribution(result, ctx.out_dir)
    return judge_attribution(result)[1]


# --------------------------------------------------------------------------- crossdyn check two-link


def configure_check(parser) -> None:
    """cross-check a two-link planar arm variant against mj_inverse (on the built-in arm or your own)"""
    parser.add_argument("--variant", choices=list(VARIANTS), default="lagrange", metavar="VARIANT",
                        help="the derivation to check (default lagrange): " + "; ".join(
                            f"{name}: {(fn.__doc__ or '').strip().splitlines()[0].rstrip('.')}"
                            for name, fn in VARIANTS.items()))
    parser.add_argument("--mjcf", metavar="PATH", help="your own two-link MJCF (default: the built-in arm)")
    parser.add_argument("--states", metavar="FILE", help="check at these states (.csv/.npy rows q, qd, qdd)")
    add_sampling(parser)
    add_outputs(parser)
    parser.set_defaults(func=_cmd_check_two_link)


def _cmd_check_two_link(args) -> int:
    name = f"check-two-link-{args.variant}"
    args._stored = prepare(args, name)
    start = time.perf_counter()
    source = args.mjcf or default_model(args.variant)
    model = load_model(source)
    states = load_states(args.states, model.nq, model.nv) if args.states else None
    report, params = check_variant(args.variant, model, samples=args.samples, seed=args.seed, states=states)
    extra = {"variant": args.variant, "model": str(source), "params": params.__dict__}
    return report_check(report, args, name, f"two-link variant {args.variant} vs mj_inverse on {source}", extra,
                        time.perf_counter() - start)
