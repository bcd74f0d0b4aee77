"""Wheel-legged biped: the hand models of its derivation (docs/derivations/biped-model.md) against MuJoCo.

Experiments ``linearization``, ``steering``, ``statics``, ``jump-stroke`` and ``errata``
(docs/derivations/errata.md; the five-bar leg is checked by the part checks, in
:mod:`~crossdyn.experiments.biped.derivations`), with parameters read from the MJCF
(:func:`~crossdyn.experiments.biped.model.biped_params`).  Each is a computation returning
a frozen result (no files, e.g. :func:`steering_comparison`), a ``judge_*`` giving the
``Verdict`` and the experiment's metrics (the verdict's keys included), and a
``plot_*`` writing into a folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...analytic.biped.five_bar import STROKE
from ...analytic.biped.jump import Stroke
from ..core import figures
from ..core.errors import ParameterError
from ..core.registry import Param, Verdict, experiment
from ..core.runner import Context
from .measurements import (
    JumpRun,
    drive_and_turn,
    jump_run,
    linearization_point,
    ode_stroke,
    statics_point,
    steering_instant,
    wheel_dynamics_instant,
)
from .model import MJCF, STANCE, BipedParams, biped_params, build

# The gallery's heading for this module's experiments, and the docs/derivations page of what they check.
GALLERY_HEADING = "Wheel-legged biped: the hand models against MuJoCo"
DERIVATION_PAGE = "biped-model"

__all__ = ["STROKE_DEG", "RETRACTION_TIME",
           "LinearizationResult", "linearization_ladder", "ladder_table", "judge_linearization", "plot_linearization",
           "SteeringResult", "steering_comparison", "judge_steering", "plot_steering",
           "StaticsResult", "statics_comparison", "judge_statics", "plot_statics",
           "JumpStrokeResult", "jump_stroke", "judge_jump_stroke", "plot_jump_stroke",
           "ErrataResult", "errata_measurements", "errata_rows", "errata_table", "judge_errata", "plot_errata"]

# crossdyn's default stroke (docs/derivations/biped-model.md), deg.
STROKE_DEG: tuple[float, float] = (float(np.degrees(STROKE[0])), float(np.degrees(STROKE[1])))
RETRACTION_TIME = 0.3  # s, the leg retraction time t the hand model of the jump assumes
STAND_DEG = float(np.degrees(STANCE))  # mid-stroke pose for the single-pose checks, deg

LIN_RTOL = 0.01  # ideal robot, every non-zero entry: only its 1e-4 kg leg links and soft contacts differ
# Steering / statics / wheel dynamics on the ideal robot: the hand models leave
# out only the wheels' yaw inertia (steering, 0.7 %) and the 1e-4 kg leg links.
STEER_RTOL = 0.02
STEER_EXPLAINED_RTOL = 1e-3
STATICS_RTOL = 1e-3
KINEMATIC_RTOL = 1e-3  # mean and yaw acceleration from the wheels against MuJoCo, finite differences at dt^2 level


def _deg(values):
    return np.radians(np.asarray(values, dtype=float))


def _save(fig, axes, out_dir, filename: str, legend_size: float = 8) -> Path:
    """Save ``fig`` as ``out_dir/filename`` once each of its ``axes`` has a light grid and its legend."""
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=legend_size)
    return figures.save(fig, out_dir, filename)


# --------------------------------------------------------------------------- linearization
@dataclass(frozen=True)
class LinearizationResult:
    """``mjd_transitionFD`` of the balancing robot vs the linearized wheeled pendulum at several leg angles.

    Attributes:
      alpha: hip angles, ``(n,)``, rad.
      rows: robot variant (``ideal``: massless legs, ``realistic``, ``com_offset``: CoM 2 cm above the
        hip line) -> one :func:`~crossdyn.experiments.biped.measurements.linearization_point` per angle.
    """

    alpha: np.ndarray
    rows: dict[str, list[dict]]


LADDER_DEG = tuple(float(a) for a in np.linspace(*STROKE_DEG, 7))  # seven heights across the stroke, deg


def linearization_ladder(alpha_deg=LADDER_DEG, mjcf: str = "") -> LinearizationResult:
    """Linearize the three robot variants at each angle in ``alpha_deg`` (deg; no files) of the robot ``mjcf``."""
    alphas = _deg(alpha_deg)
    variants = (("ideal", "massless", (0.0, 0.0)), ("realistic", "realistic", (0.0, 0.0)),
                ("com_offset", "massless", (0.0, 0.02)))  # (name, legs, CoM offset m)
    return LinearizationResult(alphas, {name: [linearization_point(a, legs, offset, mjcf) for a in alphas]
                                        for name, legs, offset in variants})


def ladder_table(result: LinearizationResult) -> dict:
    """The assumption ladder: per angle, each candidate's max relative entry error of (A_d - I, B_d)."""

    def column(variant, candidate):
        return [r["errors"][candidate]["max_rel"] for r in result.rows[variant]]

    return {
        "alpha_deg": np.degrees(result.alpha),
        "l_m": [r["l"] for r in result.rows["ideal"]],
        "ideal: linearized model": column("ideal", "analytic"),
        "ideal: linearized model as printed (2l/r^2)": column("ideal", "printed"),
        "ideal: wheel inertia ignored (I = 0)": column("ideal", "no_wheel_inertia"),
        "realistic legs: linearized model (leg mass ignored)": column("realistic", "analytic"),
        "realistic legs: body and legs lumped": column("realistic", "lumped"),
        "CoM 2 cm above hip line: linearized model (offset ignored)": column("com_offset", "analytic"),
        "CoM 2 cm above hip line: lumped": column("com_offset", "lumped"),
    }


def judge_linearization(result: LinearizationResult) -> tuple[Verdict, dict]:
    """The linearized model within :data:`LIN_RTOL` on the ideal robot at every angle, the printed 2l/r^2
    outside it everywhere, and the lumped model within it on the realistic and offset robots."""
    rows, table = result.rows, ladder_table(result)
    worst = max(table["ideal: linearized model"])
    printed_fails = min(table["ideal: linearized model as printed (2l/r^2)"]) > LIN_RTOL
    lumped = max(table["realistic legs: body and legs lumped"] + table["CoM 2 cm above hip line: lumped"])
    verdict = Verdict(worst <= LIN_RTOL and printed_fails and lumped <= LIN_RTOL,
                      f"ideal max rel {worst:.1e}; leg mass costs up to "
                      f"{max(table['realistic legs: linearized model (leg mass ignored)']):.0%}")
    return verdict, {
        **verdict.as_metrics(),
        "table": table,
        "ideal_entry_errors": {f"{np.degrees(r['alpha']):.0f}deg": r["errors"]["analytic"]["rel"]
                               for r in rows["ideal"]},
        "pole_mujoco_ideal": [r["pole_mujoco"] for r in rows["ideal"]],
        "pole_analytic": [r["pole_analytic"] for r in rows["ideal"]],
        "pole_mujoco_realistic": [r["pole_mujoco"] for r in rows["realistic"]],
        "pole_lumped_realistic": [r["pole_lumped"] for r in rows["realistic"]],
    }


def plot_linearization(result: LinearizationResult, out_dir) -> list[Path]:
    """The unstable pole against leg length and the assumption ladder, into ``out_dir``."""
    rows, table = result.rows, ladder_table(result)
    fig, ax = figures.figure(1, 1, width=6.5, height=3.4)
    for variant, style in (("ideal", "o"), ("realistic", "s"), ("com_offset", "^")):
        ls = [r["l"] for r in rows[variant]]
        ax.plot(ls, [r["pole_mujoco"] for r in rows[variant]], style, mfc="none", label=f"MuJoCo, {variant}")
    ls = [r["l"] for r in rows["ideal"]]
    ax.plot(ls, [r["pole_analytic"] for r in rows["ideal"]], "k-", label="linearized model")
    ax.set(xlabel="leg length l (m)", ylabel="unstable pole (1/s)", title="open-loop unstable pole vs leg length")
    paths = [_save(fig, [ax], out_dir, "unstable_pole.png")]

    fig, axes = figures.figure(1, 1, width=7.5, height=3.4)
    for name in (k for k in table if ":" in k):
        axes.semilogy(table["alpha_deg"], np.maximum(table[name], 1e-12), "o-", ms=3, label=name)
    axes.axhline(LIN_RTOL, color="k", ls="--", lw=0.8)
    axes.set(xlabel="alpha (deg)", ylabel="max rel. error of A_d - I, B_d", title="assumption ladder")
    return paths + [_save(fig, [axes], out_dir, "assumption_ladder.png", legend_size=6)]


@experiment(
    "linearization",
    summary="mjd_transitionFD of the balancing robot vs the linearized wheeled pendulum across the stroke; "
            "assumption ladder",
    expected=f"ideal variant within {LIN_RTOL:.0%} on every non-zero entry; realistic mismatch attributed",
    params={"mjcf": MJCF},
)
def linearization_experiment(ctx: Context) -> dict:
    result = linearization_ladder([190, 220, 250] if ctx.short else np.linspace(*STROKE_DEG, 7), ctx.params["mjcf"])
    plot_linearization(result, ctx.out_dir)
    return judge_linearization(result)[1]


# --------------------------------------------------------------------------- steering
@dataclass(frozen=True)
class SteeringResult:
    """Yaw acceleration for a differential wheel torque, MuJoCo vs the steering model, at mid-stroke.

    Attributes:
      torque: dT, N m (T_L = dT, T_R = -dT).
      variants: ``massless`` / ``realistic`` legs -> their
        :func:`~crossdyn.experiments.biped.measurements.steering_instant`, rad/s^2.
    """

    torque: float
    variants: dict[str, dict]


def steering_comparison(torque: float = 1.0, mjcf: str = "") -> SteeringResult:
    """The yaw response of both leg variants, legs rigid at mid-stroke (no files), of the robot ``mjcf``."""
    alpha = np.radians(STAND_DEG)
    variants = {}
    for legs in ("massless", "realistic"):
        model = build(legs=legs, rigid_alpha=alpha, mjcf=mjcf)
        params = biped_params(model)
        variants[legs] = steering_instant(model, params, alpha, torque)
    return SteeringResult(torque, variants)


def judge_steering(result: SteeringResult) -> tuple[Verdict, dict]:
    """Ideal robot: the steering model within :data:`STEER_RTOL`, within :data:`STEER_EXPLAINED_RTOL` once the
    wheels' yaw inertia is added; realistic legs: within the latter when lumped."""
    out = {}
    for legs, point in result.variants.items():
        out[legs] = {
            **point,
            "rel_error": abs(point["analytic"] - point["mujoco"]) / abs(point["mujoco"]),
            "rel_error_with_wheel_yaw": abs(point["with_wheel_yaw"] - point["mujoco"]) / abs(point["mujoco"]),
            "rel_error_lumped": abs(point["lumped_legs_and_wheel_yaw"] - point["mujoco"]) / abs(point["mujoco"]),
        }
    ideal = out["massless"]
    passed = (ideal["rel_error"] <= STEER_RTOL and ideal["rel_error_with_wheel_yaw"] <= STEER_EXPLAINED_RTOL
              and out["realistic"]["rel_error_lumped"] <= STEER_EXPLAINED_RTOL)
    verdict = Verdict(passed, f"ideal: steering model off by {ideal['rel_error']:.2%}, "
                      f"{ideal['rel_error_with_wheel_yaw']:.1e} "
                      f"with wheel yaw inertia; realistic legs {out['realistic']['rel_error']:.0%} "
                      f"({out['realistic']['rel_error_lumped']:.0e} lumped)")
    return verdict, {**verdict.as_metrics(), "variants": out}


def plot_steering(result: SteeringResult, out_dir) -> list[Path]:
    """Each model's yaw acceleration as bars per leg variant (``steering.png``) into ``out_dir``."""
    fig, ax = figures.figure(1, 1, width=6.0, height=3.0)
    labels = ["MuJoCo", "steering model", "+ wheel yaw", "legs lumped"]
    for k, legs in enumerate(("massless", "realistic")):
        p = result.variants[legs]
        heights = [p["mujoco"], p["analytic"], p["with_wheel_yaw"], p["lumped_legs_and_wheel_yaw"]]
        ax.bar(np.arange(4) + 0.38 * k, heights, width=0.36, label=legs)
    ax.set_xticks(np.arange(4) + 0.19, labels)
    ax.set(ylabel="yaw acceleration (rad/s^2)", title=f"T_L = {result.torque:g}, T_R = {-result.torque:g} N m")
    ax.legend(fontsize=8)
    return [figures.save(fig, out_dir, "steering.png")]


@experiment(
    "steering",
    summary="yaw acceleration for a differential wheel torque, MuJoCo vs the steering model",
    expected=(f"ideal robot within {STEER_RTOL:.0%}; residual = wheels' own yaw inertia; "
              "heavy legs explained by lumping"),
    params={"torque": Param(1.0, "differential wheel torque dT (T_L = dT, T_R = -dT), N m", 0.01, 6.0), "mjcf": MJCF},
)
def steering_experiment(ctx: Context) -> dict:
    result = steering_comparison(float(ctx.params["torque"]), ctx.params["mjcf"])
    plot_steering(result, ctx.out_dir)
    return judge_steering(result)[1]


# --------------------------------------------------------------------------- statics
@dataclass(frozen=True)
class StaticsResult:
    """Wheel normal forces under commanded (F_y, T_x): the support statics corrected and as printed vs MuJoCo.

    Attributes:
      rows: one per (alpha, command): ``alpha_deg`` (deg), ``F_y`` (N), ``T_x`` (N m), and ``corrected`` /
        ``printed``, each a :func:`~crossdyn.experiments.biped.measurements.statics_point`.
    """

    rows: list[dict]


def statics_comparison(alphas_deg=(195.0, 215.0, 235.0, 245.0),
                       commands=((0.0, 0.0), (10.0, 3.0), (-15.0, -2.0), (20.0, 0.0)), mjcf: str = "") -> StaticsResult:
    """Command every (F_y N, T_x N m) of ``commands`` at every angle (deg) with both forms (no files),
    on the robot ``mjcf``."""
    model = build(legs="massless", mjcf=mjcf)
    params = biped_params(model)
    rows = []
    for deg in alphas_deg:
        for F_y, T_x in commands:
            corrected = statics_point(model, params, np.radians(deg), F_y, T_x)
            printed = statics_point(model, params, np.radians(deg), F_y, T_x, printed=True)
            rows.append({"alpha_deg": deg, "F_y": F_y, "T_x": T_x, "corrected": corrected, "printed": printed})
    return StaticsResult(rows)


def judge_statics(result: StaticsResult) -> tuple[Verdict, dict]:
    """Corrected leg forces within :data:`STATICS_RTOL` everywhere; the printed form outside it everywhere."""
    worst = max(r["corrected"]["rel_error"] for r in result.rows)
    printed_best = min(r["printed"]["rel_error"] for r in result.rows)
    verdict = Verdict(worst <= STATICS_RTOL and printed_best > STATICS_RTOL,
                      f"corrected max rel {worst:.1e}; printed min rel {printed_best:.2f}")
    return verdict, {**verdict.as_metrics(), "rows": result.rows, "corrected_max_rel_error": worst,
                     "printed_min_rel_error": printed_best}


def plot_statics(result: StaticsResult, out_dir) -> list[Path]:
    """MuJoCo's wheel forces against each form's prediction (``statics.png``) into ``out_dir``."""
    rows = result.rows
    fig, ax = figures.figure(1, 1, width=6.5, height=3.2)
    pred = [r["corrected"]["predicted"][s] for r in rows for s in ("left", "right")]
    meas = [r["corrected"]["measured"][s] for r in rows for s in ("left", "right")]
    pred_p = [r["printed"]["predicted"][s] for r in rows for s in ("left", "right")]
    meas_p = [r["printed"]["measured"][s] for r in rows for s in ("left", "right")]
    ax.plot(pred, meas, "o", label="leg forces, corrected")
    ax.plot(pred_p, meas_p, "x", label="leg forces, as printed")
    lim = [min(pred + pred_p + meas_p), max(pred + meas)]
    ax.plot(lim, lim, "k--", lw=0.8)
    ax.set(xlabel="predicted wheel normal force (N)", ylabel="MuJoCo wheel normal force (N)", title="support statics")
    return [_save(fig, [ax], out_dir, "statics.png")]


@experiment(
    "statics",
    summary="wheel contact forces under a commanded virtual force F_y and roll torque T_x vs the support statics",
    expected=f"corrected leg forces within {STATICS_RTOL:g}; printed (F_y - M g)/2 fails",
    params={"mjcf": MJCF},
)
def statics_experiment(ctx: Context) -> dict:
    result = statics_comparison([200.0, 235.0] if ctx.short else [195.0, 215.0, 235.0, 245.0],
                                mjcf=ctx.params["mjcf"])
    plot_statics(result, ctx.out_dir)
    return judge_statics(result)[1]


# --------------------------------------------------------------------------- jump stroke
@dataclass(frozen=True)
class JumpStrokeResult:
    """The constant-torque extension stroke: the extension-phase ODE and the full five-bar robot in MuJoCo.

    Attributes:
      tau: torque of each hip motor, N m.
      params: the robot's numbers (body mass ``params.pendulum.M`` kg, gravity m/s^2, legs).
      ode: the extension-phase ODE from alpha 190 to 250 deg (massless legs): take-off speed m/s, times s.
      run: the same stroke simulated in MuJoCo: take-off speed m/s, energies J, closure m.
    """

    tau: float
    params: BipedParams
    ode: Stroke
    run: JumpRun

    @property
    def requirement(self) -> float:
        """The take-off requirement g t for the retraction time t, m/s."""
        return self.ode.requirement(RETRACTION_TIME)


def jump_stroke(tau: float | None = None, duration: float = 0.9, mjcf: str = "") -> JumpStrokeResult:
    """The extension-phase ODE and a MuJoCo run of ``duration`` s at hip torque ``tau`` (N m; None: the motors'
    limit; no files) on the robot ``mjcf``.  ParameterError: ``tau`` above the hip motors' limit."""
    model = build(mjcf=mjcf)
    params = biped_params(model)
    tau = params.hip_torque_limit if tau is None else tau
    if tau > params.hip_torque_limit:
        raise ParameterError(f"tau={tau:g} N m: the hip motors give at most {params.hip_torque_limit:g} N m")
    a0, a1 = _deg(STROKE_DEG)
    return JumpStrokeResult(tau, params, ode_stroke(params, tau, a0, a1),
                            jump_run(model, params, tau, a0, a1, duration=duration))


def judge_jump_stroke(result: JumpStrokeResult) -> tuple[Verdict, dict]:
    """The ODE's take-off speed above g t; MuJoCo's below the ODE's (the legs take a share of the
    work); loop closure within 0.5 mm."""
    ode, run, params, need = result.ode, result.run, result.params, result.requirement
    e = run.energy
    share = e["legs_wheels_kinetic"] / e["hip_work"]
    # What the ODE would give if the body got only what MuJoCo's body got of the work.
    explained = float(np.sqrt(2 * e["body_kinetic"] / params.pendulum.M))
    closure_ok = run.closure_max < 5e-4
    verdict = Verdict(ode.takeoff_velocity > need and closure_ok and run.takeoff_velocity < ode.takeoff_velocity,
                      f"take-off ODE {ode.takeoff_velocity:.2f} m/s, MuJoCo {run.takeoff_velocity:.2f} m/s "
                      f"(legs take {share:.0%} of the work); closure max {run.closure_max * 1e3:.2f} mm")
    return verdict, {
        **verdict.as_metrics(), "requirement_m_s": need, "ode_takeoff_velocity": ode.takeoff_velocity,
        "ode_stroke_time_s": ode.duration, "ode_stroke_height_m": ode.stroke_height,
        "ode_ballistic_rise_m": ode.ballistic_rise, "thesis_apex_h1_plus_h2_m": ode.apex_height(RETRACTION_TIME),
        "mujoco_takeoff_velocity": run.takeoff_velocity, "mujoco_stroke_time_s": run.t_stroke,
        "mujoco_liftoff_com_velocity": run.liftoff_com_velocity, "mujoco_body_apex_rise_m": run.body_apex_rise,
        "mujoco_com_apex_rise_m": run.com_apex_rise,
        "mujoco_com_apex_ballistic_m": run.liftoff_com_velocity**2 / (2 * params.pendulum.g),
        "mujoco_wheel_clearance_m": run.wheel_clearance, "energy_J": e, "legs_wheels_share_of_work": share,
        "velocity_from_body_energy": explained, "closure_max_m": run.closure_max,
    }


def plot_jump_stroke(result: JumpStrokeResult, out_dir) -> list[Path]:
    """Body speed against alpha, ODE and MuJoCo, and the ``g t`` line (``jump_stroke.png``), into ``out_dir``."""
    ode, run = result.ode, result.run
    fig, ax = figures.figure(1, 1, width=6.5, height=3.4)
    ax.plot(np.degrees(ode.alpha), ode.body_velocity, "k-", label="extension ODE (massless legs)")
    ax.plot(np.degrees(run.alpha), run.body_velocity, "-", color="tab:blue", label="MuJoCo, full five-bar")
    ax.axhline(result.requirement, color="tab:red", label=f"g t, t = {RETRACTION_TIME} s")
    ax.set(xlabel="hip angle alpha (deg)", ylabel="body velocity (m/s)",
           title=f"extension stroke, M = {result.params.pendulum.M:g} kg, tau = {result.tau:g} N m")
    return [_save(fig, [ax], out_dir, "jump_stroke.png")]


@experiment(
    "jump-stroke",
    summary="take-off speed of the jump's extension-phase ODE vs g t, and the same constant-torque stroke in MuJoCo",
    expected="ODE take-off speed above g t; MuJoCo's lower by the legs' share of the work; closure < 0.5 mm",
    params={"tau": Param(0.0, "torque of each hip motor, N m (0: the robot's motor limit)", 0.0, 1e4),
            "mjcf": MJCF},
)
def jump_stroke_experiment(ctx: Context) -> dict:
    result = jump_stroke(float(ctx.params["tau"]) or None, 0.35 if ctx.short else 0.9, ctx.params["mjcf"])
    plot_jump_stroke(result, ctx.out_dir)
    return judge_jump_stroke(result)[1]


# --------------------------------------------------------------------------- errata
@dataclass(frozen=True)
class ErrataResult:
    """Each erratum at mid-stroke: MuJoCo and both forms, by :mod:`~crossdyn.experiments.biped.measurements`.

    Attributes:
      wheel: ``wheel_dynamics_instant`` at T = 0.5 N m (the wheel torque each form implies, N m).
      drive: ``drive_and_turn``, 0.1 s at T_L = 0.4, T_R = 0.1 N m (m/s^2, rad/s^2).
      linearization: ``linearization_point`` on the ideal robot.
      statics_corrected, statics_printed: ``statics_point`` at F_y = 10 N, T_x = 3 N m with each form.
    """

    wheel: dict
    drive: dict
    linearization: dict
    statics_corrected: dict
    statics_printed: dict


def errata_measurements(mjcf: str = "") -> ErrataResult:
    """Measure every erratum (docs/derivations/errata.md) in MuJoCo (no files) on the robot ``mjcf``."""
    alpha = np.radians(STAND_DEG)
    ideal = build(legs="massless", rigid_alpha=alpha, mjcf=mjcf)
    params = biped_params(ideal)
    w = wheel_dynamics_instant(ideal, params, alpha, T=0.5)
    # 0.1 s of driving: real wheel speeds and positions, while the unbalanced body pitches only ~1e-3 rad.
    drive = drive_and_turn(ideal, params, alpha, T_L=0.4, T_R=0.1, duration=0.1)
    lin = linearization_point(alpha, legs="massless", mjcf=mjcf)
    jointed = build(legs="massless", mjcf=mjcf)
    jp = biped_params(jointed)
    good = statics_point(jointed, jp, alpha, 10.0, 3.0)
    bad = statics_point(jointed, jp, alpha, 10.0, 3.0, printed=True)
    return ErrataResult(w, drive, lin, good, bad)


_DEMONSTRATED = "printed wrong, corrected right"
# What each erratum's ``where`` is, for the plot's axis.
_ERRATUM_NAMES = {"004 (2.5)/(2.6)": "wheel dynamics", "004 (2.7)": "mean acceleration",
                  "004 (2.19)": "linearized model", "004 (2.21)": "yaw from wheels", "004 (2.27)": "leg forces"}


def errata_rows(result: ErrataResult) -> list[dict]:
    """One row per erratum: both forms' values, their relative errors against MuJoCo, the
    tolerance, and the verdict (``"printed wrong, corrected right"`` or ``"NOT DEMONSTRATED"``)."""
    rows = []

    def row(where, printed_form, corrected_form, mujoco, printed, corrected, tol, unit):
        def rel(v):
            return abs(v - mujoco) / max(abs(mujoco), 1e-12)

        ok = rel(corrected) <= tol and rel(printed) > tol
        rows.append({"where": where, "printed_form": printed_form, "corrected_form": corrected_form,
                     "mujoco": mujoco, "printed": printed, "corrected": corrected, "unit": unit,
                     "printed_rel_error": rel(printed), "corrected_rel_error": rel(corrected), "tol": tol,
                     "verdict": _DEMONSTRATED if ok else "NOT DEMONSTRATED"})

    # ``where`` is a text metric that saved baselines compare, so it keeps the source's equation
    # numbers; the printed and corrected forms beside it say what each equation is.
    w, drive, lin = result.wheel, result.drive, result.linearization
    row("004 (2.5)/(2.6)", "(m + 1/r^2) xdd = T/r - N", "(m + I/r^2) xdd = T/r - N",
        w["applied"], w["printed"], w["corrected"], STATICS_RTOL, "N m (wheel torque implied)")
    row("004 (2.7)", "xdd = (xdd_L + xd_R)/2", "xdd = (xdd_L + xdd_R)/2",
        drive["xdd_mujoco"], drive["xdd_printed"], drive["xdd_corrected"], KINEMATIC_RTOL, "m/s^2")
    row("004 (2.19)", "r (M + 2m + 2l/r^2) xdd = ...", "r (M + 2m + 2I/r^2) xdd = ...",
        0.0, lin["errors"]["printed"]["max_rel"], lin["errors"]["analytic"]["max_rel"], LIN_RTOL,
        "max rel. entry error of (A_d - I, B_d)")
    rows[-1]["mujoco"] = "mjd_transitionFD"
    # For the linearized model the numbers are already errors against MuJoCo; judge them directly.
    rows[-1]["printed_rel_error"], rows[-1]["corrected_rel_error"] = rows[-1]["printed"], rows[-1]["corrected"]
    ok = rows[-1]["corrected"] <= LIN_RTOL < rows[-1]["printed"]
    rows[-1]["verdict"] = _DEMONSTRATED if ok else "NOT DEMONSTRATED"
    row("004 (2.21)", "deltadd = (xd_L - x_R)/D", "deltadd = (xdd_L - xdd_R)/D",
        drive["yaw_acc_mujoco"], drive["yaw_acc_printed"], drive["yaw_acc_corrected"], KINEMATIC_RTOL, "rad/s^2")
    # The leg force each form commands against what MuJoCo's wheel feels under that form's torques.
    good, bad = result.statics_corrected, result.statics_printed
    row("004 (2.27)", "P_L = (F_y - M g)/2 + T_x/D", "P_L = (F_y + M g)/2 + T_x/D",
        good["measured"]["left"], bad["predicted"]["left"], good["predicted"]["left"], STATICS_RTOL,
        "N (left wheel normal force)")
    return rows


def errata_table(rows: list[dict]) -> str:
    """The rows as a markdown table."""
    lines = ["| where | printed | corrected | MuJoCo | printed rel. err | corrected rel. err | verdict |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        m = r["mujoco"] if isinstance(r["mujoco"], str) else f"{r['mujoco']:.6g}"
        lines.append(f"| {r['where']} | {r['printed']:.6g} | {r['corrected']:.6g} | {m} | "
                     f"{r['printed_rel_error']:.2e} | {r['corrected_rel_error']:.2e} | {r['verdict']} |")
    return "\n".join(lines)


def judge_errata(result: ErrataResult) -> tuple[Verdict, dict]:
    """Every printed form outside its tolerance and every corrected form within it."""
    rows = errata_rows(result)
    demonstrated = sum(r["verdict"] == _DEMONSTRATED for r in rows)
    verdict = Verdict(demonstrated == len(rows), f"{demonstrated}/{len(rows)} errata demonstrated")
    return verdict, {**verdict.as_metrics(), "rows": rows, "table_markdown": errata_table(rows)}


def plot_errata(result: ErrataResult, out_dir) -> list[Path]:
    """Both forms' relative errors per erratum (``errata.png``) and the table (``errata.md``) into ``out_dir``."""
    rows = errata_rows(result)
    fig, ax = figures.figure(1, 1, width=7.0, height=3.2)
    x = np.arange(len(rows))
    floor = 1e-17  # exact agreement cannot be drawn on a log axis
    ax.bar(x - 0.2, [max(r["printed_rel_error"], floor) for r in rows], width=0.4, color="tab:red", label="as printed")
    ax.bar(x + 0.2, [max(r["corrected_rel_error"], floor) for r in rows], width=0.4, color="tab:green",
           label="corrected")
    ax.scatter(x, [r["tol"] for r in rows], marker="_", s=600, color="k", label="tolerance", zorder=3)
    ax.set_yscale("log")
    ax.set_xticks(x, [_ERRATUM_NAMES.get(r["where"], r["where"]) for r in rows], fontsize=8)
    ax.set(ylabel="relative error vs MuJoCo", title="errata of the biped thesis chapter")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    table = Path(out_dir) / "errata.md"
    table.write_text(errata_table(rows)
                     + "\n\nThe errata of the robotics lecture are shown by the two-link experiments "
                       "(two-link-lecture-no-link-inertia).\n")
    return [figures.save(fig, out_dir, "errata.png"), table]


@experiment(
    "errata",
    summary="every erratum of the biped derivation (the biped thesis chapter): printed vs corrected vs MuJoCo",
    expected="each printed form fails and each corrected form passes against MuJoCo",
    params={"mjcf": MJCF},
)
def errata_experiment(ctx: Context) -> dict:
    result = errata_measurements(ctx.params["mjcf"])
    plot_errata(result, ctx.out_dir)
    return judge_errata(result)[1]
