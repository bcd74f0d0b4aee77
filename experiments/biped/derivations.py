"""The biped's own derivations as users of the part checks (``crossdyn check kinematics/jacobian/linearization``).

- ``five-bar``: the leg checked once, at poses closed by MuJoCo's own kinematics: its
  kinematics and Jacobian (``analytic.biped.five_bar``, the Jacobian the virtual-model
  controller's ``J^T F`` stands on) against the MJCF's closed loop at symmetric and asymmetric
  poses; a Jacobian taking the rear motor about the front's axis must fail with the rear
  column named; the height formula and the virtual-work hip torque against MuJoCo's height and
  statics; the virtual-model torques must equal ``-J_z^T P``.
- ``pendulum-linearization``: the linearized wheeled pendulum's ``(A, B)`` against
  ``linearize`` of the rigid-leg robot at several leg heights, reduced to ``[x, xd, theta, thd]``
  and ``T``; the printed ``2 l / r^2`` must fail.

Each is a computation returning a frozen result, a ``judge_*`` and a ``plot_*``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from ...analytic.biped import five_bar
from ...analytic.biped import wheeled_pendulum as wp
from ...controllers.biped.virtual_model import hip_torques
from ..core import figures
from ..core.checks.entry_errors import draw_part
from ..core.checks.jacobian import check_jacobian
from ..core.checks.kinematics import check_kinematics
from ..core.checks.linearization import check_linearization
from ..core.checks.report import CheckReport
from ..core.reduction import Reduction
from ..core.registry import Param, Verdict, experiment
from ..core.runner import Context
from .checks import STROKE_DEG
from .measurements import leg_statics, pendulum_maps, solve_closure
from .model import MJCF, balance_pose, biped_params, build

# The gallery's heading for this module's experiments, and the docs/derivations page of what they check.
GALLERY_HEADING = "Wheel-legged biped: the hand models against MuJoCo"
DERIVATION_PAGE = "biped-model"

__all__ = ["closed_poses", "leg_derivation", "FiveBarLeg", "five_bar_leg", "judge_five_bar_leg", "plot_five_bar_leg",
           "HEIGHT_RTOL", "TORQUE_RTOL", "PendulumLinearization", "pendulum_linearization",
           "judge_pendulum_linearization", "plot_pendulum_linearization", "PENDULUM_ATOL", "PENDULUM_RTOL"]

LEG = ("left_front_hip", "left_rear_hip")
# The hand pendulum rolls rigidly on massless legs; the robot's 1e-4 kg legs and soft wheel contacts leak
# into the reduced state.  Entries are held to 1 % (the linearization experiment's bar), and to 0.5 absolute
# for the entries the rigid model has at zero.
PENDULUM_RTOL = 0.01
PENDULUM_ATOL = 0.5
# Leg force of the J^T F comparison, N (the five-bar experiment's default force).
FORCE = 30.0


def closed_poses(rig: mujoco.MjModel, pairs) -> np.ndarray:
    """``qpos (n, nq)`` of the rig with both loops closed by MuJoCo's kinematics at each (front, rear) hip pair."""
    data = mujoco.MjData(rig)
    out, knee = [], 0.5
    for front, rear in pairs:
        solve_closure(rig, data, float(front), knee_guess=knee, alpha_rear=float(rear))
        knee = float(data.qpos[rig.joint("left_front_knee").qposadr[0]])  # continuation: the working branch
        out.append(data.qpos.copy())
    return np.array(out)


def leg_derivation(rig: mujoco.MjModel, rear_sign: float = 1.0):
    """The left leg's hand derivation on ``rig``'s coordinates: ``(position(q), jacobian(q))``.

    The axle is ``five_bar.axle_position`` in the leg's plane, placed by the body's
    pose and the leg's lateral offset read from the model; its Jacobian per unit
    motion of the two hip motors is ``five_bar.axle_jacobian`` (rows x, y, z of the
    world, columns front, rear).  ``rear_sign=-1`` is the slip of taking the rear
    motor about the front one's axis.
    """
    p = biped_params(rig)
    data = mujoco.MjData(rig)
    mujoco.mj_kinematics(rig, data)
    body = rig.body("body").id
    origin, R = data.xpos[body].copy(), data.xmat[body].reshape(3, 3).copy()
    lateral = float(rig.body("left_front_thigh").pos[1])
    front, rear = (int(rig.joint(name).qposadr[0]) for name in LEG)

    def position(q):
        q = np.asarray(q, dtype=float)
        A = five_bar.axle_position(q[..., front], q[..., rear], p.l1, p.l2, p.l3)
        local = np.stack([A[..., 0], np.full(A.shape[:-1], lateral), A[..., 1]], axis=-1)
        return origin + local @ R.T

    def jacobian(q):
        q = np.asarray(q, dtype=float)
        J2 = five_bar.axle_jacobian(q[..., front], q[..., rear], p.l1, p.l2, p.l3)
        J = np.zeros(J2.shape[:-2] + (3, 2))
        J[..., 0, :], J[..., 2, :] = J2[..., 0, :], J2[..., 1, :]
        J[..., :, 1] *= rear_sign
        return R @ J

    return position, jacobian


@dataclass(frozen=True)
class FiveBarLeg:
    """The five-bar leg, checked once at one set of closed poses.

    Attributes:
      pairs: the (front, rear) hip angles of the closed poses, ``(n, 2)`` rad: first the symmetric ones (at
        :attr:`alpha`), then as many less two asymmetric ones.
      force: the vertical leg force P, N.
      alpha: the symmetric poses' hip angles, ``(m,)`` rad.
      height_analytic: the formula's body height ``y(alpha)`` above the axle, ``(m,)`` m; y1: dy/dalpha, m/rad.
      height_mujoco: MuJoCo's closed legs' height, ``(m, 2)`` (left, right), m.
      torque_analytic: the virtual-work hip torque per motor, ``(m,)`` N m.
      torque_mujoco: MuJoCo's rigid statics, ``(m, 4)`` (every hip motor), N m.
      torque_mujoco_soft: the same held in MuJoCo's soft forward dynamics, ``(m, 4)`` N m.
      closure_residual: largest loop-closure error, m; statics_residual: largest statics residual, N m.
      kinematics, jacobian, wrong_jacobian: the part checks' reports (the last of the rear-axis slip).
      jtf_error: largest ``|virtual-model torque + J_z^T P|`` over the symmetric poses, N m.
      jtf_scale: largest virtual-model torque, N m.
    """

    pairs: np.ndarray
    force: float
    alpha: np.ndarray
    height_analytic: np.ndarray
    y1: np.ndarray
    height_mujoco: np.ndarray
    torque_analytic: np.ndarray
    torque_mujoco: np.ndarray
    torque_mujoco_soft: np.ndarray
    closure_residual: float
    statics_residual: float
    kinematics: CheckReport
    jacobian: CheckReport
    wrong_jacobian: CheckReport
    jtf_error: float
    jtf_scale: float


def five_bar_leg(force: float = FORCE, points: int = 61, mjcf: str = "") -> FiveBarLeg:
    """Check the leg at ``points`` symmetric closed poses over the stroke and ``points - 2`` asymmetric ones.

    The part checks (``check kinematics``, ``check jacobian``) compare the axle's position and
    Jacobian with MuJoCo's closed loop at every pose; at the symmetric ones the height formula
    and the virtual-work torque for a vertical leg force ``force`` (N) are compared with MuJoCo's
    height and statics (:func:`~crossdyn.experiments.biped.measurements.leg_statics`), and the
    virtual-model controller's torque with ``-J_z^T P``.  ``mjcf`` is the robot (``""``: the
    built-in one); the rig is it welded to the world, without gravity or contacts.
    """
    rig = build(fixed_body=True, gravity=False, mjcf=mjcf)
    p = biped_params(rig)
    alphas = np.radians(np.linspace(*STROKE_DEG, points))
    offset = np.radians(8.0)  # an asymmetric leg: front and rear motors 16 deg apart
    pairs = np.vstack([np.column_stack([alphas, alphas]),
                       np.column_stack([alphas[1:-1] + offset, alphas[1:-1] - offset])])
    q = closed_poses(rig, pairs)
    position, jacobian = leg_derivation(rig)
    _, wrong = leg_derivation(rig, rear_sign=-1.0)
    kinematics = check_kinematics(position, rig, site="left_axle", states=q)
    options: dict[str, Any] = {"site": "left_axle", "coordinates": list(LEG), "states": q}
    right_J, wrong_J = check_jacobian(jacobian, rig, **options), check_jacobian(wrong, rig, **options)
    symmetric = q[:points]
    statics = [leg_statics(rig, pose, force) for pose in symmetric]
    y, y1, _ = five_bar.height_derivatives(alphas, p.l1, p.l2, p.l3)
    # The virtual-model controller's torque for a vertical leg force P, against -J_z^T P.
    J_z = jacobian(symmetric)[:, 2, :]  # (n, 2): d axle_z / d (front, rear)
    tau = np.array([hip_torques(p.pendulum, (s, s), 2 * FORCE - p.pendulum.M * p.pendulum.g, 0.0, np.inf)[0]
                    for s in y1])  # F_y = P_L + P_R - M g (support statics) with P_L = P_R = FORCE
    error = float(np.abs(tau[:, None] + J_z * FORCE).max())

    def column(key: str) -> np.ndarray:
        return np.array([point[key] for point in statics])

    return FiveBarLeg(pairs, force, alphas, y, y1, column("height"),
                      five_bar.hip_torque(alphas, force, p.l1, p.l2, p.l3), column("tau"), column("tau_soft"),
                      float(column("closure").max()), float(column("statics_residual").max()), kinematics, right_J,
                      wrong_J, error, float(np.abs(tau).max()))


# Height: the formula is exact up to the closure solve's 1e-14 m (1e-9: round-off room), rigid statics too; the
# soft forward dynamics' torques carry the closure's softness, 1 - d (reported, not judged).
HEIGHT_RTOL = 1e-9
TORQUE_RTOL = 1e-4
# J^T F: the controller's torque is the same product of the same numbers, round-off only.
JTF_RTOL = 1e-12


def judge_five_bar_leg(result: FiveBarLeg) -> tuple[Verdict, dict]:
    """Kinematics and Jacobian agree; the rear-axis slip fails with the rear column named; the height within
    :data:`HEIGHT_RTOL` and the statics within :data:`TORQUE_RTOL`, relative; J^T F holds."""
    named = any("left_rear_hip" in line and "opposite sign" in line for line in result.wrong_jacobian.attribution)
    jtf = result.jtf_error <= JTF_RTOL * result.jtf_scale
    y_an, tau_an = result.height_analytic, result.torque_analytic
    height_rel = float(np.abs(result.height_mujoco - y_an[:, None]).max() / np.abs(y_an).min())
    torque_rel = float((np.abs(result.torque_mujoco - tau_an[:, None]) / np.abs(tau_an[:, None])).max())
    torque_rel_soft = float((np.abs(result.torque_mujoco_soft - tau_an[:, None]) / np.abs(tau_an[:, None])).max())
    ok = (result.kinematics.passed and result.jacobian.passed and not result.wrong_jacobian.passed and named and jtf
          and height_rel <= HEIGHT_RTOL and torque_rel <= TORQUE_RTOL)
    verdict = Verdict(ok, f"height rel {height_rel:.1e}, torque rel {torque_rel:.1e} (soft forward dynamics "
                          f"{torque_rel_soft:.1e}); axle position {result.kinematics.max_abs_error:.1e} m, Jacobian "
                          f"{result.jacobian.max_abs_error:.1e} m/rad at {len(result.pairs)} closed poses; "
                          f"rear-axis slip {'named' if named else 'NOT named'}; J^T F {result.jtf_error:.1e} N m")
    return verdict, {
        **verdict.as_metrics(), "alpha_deg": np.degrees(result.alpha), "height_analytic": y_an,
        "height_mujoco": result.height_mujoco, "height_max_rel_error": height_rel, "torque_analytic": tau_an,
        "torque_mujoco": result.torque_mujoco, "torque_max_rel_error": torque_rel,
        "torque_mujoco_soft_forward": result.torque_mujoco_soft, "torque_max_rel_error_soft_forward": torque_rel_soft,
        "statics_residual_N_m": result.statics_residual, "closure_residual_m": result.closure_residual,
        "y1": result.y1, "poses": len(result.pairs), "hip_angles_deg": np.degrees(result.pairs),
        "kinematics": result.kinematics.to_dict(), "jacobian": result.jacobian.to_dict(),
        "wrong_jacobian": result.wrong_jacobian.to_dict(), "wrong_named": named,
        "jtf_max_error_N_m": result.jtf_error, "jtf_scale_N_m": result.jtf_scale,
    }


def plot_five_bar_leg(result: FiveBarLeg, out_dir) -> list[Path]:
    """Leg height and static hip torques against alpha (``five_bar.png``) and the part checks' per-entry errors
    (``five_bar_derivation.png``) into ``out_dir``."""
    fig, axes = figures.figure(1, 2, width=10.0, height=3.2)
    deg = np.degrees(result.alpha)
    axes[0].plot(deg, result.height_analytic, "k-", label="y(alpha), five-bar formula")
    axes[0].plot(deg, result.height_mujoco[:, 0], "o", ms=3, label="MuJoCo (left)")
    axes[0].set(xlabel="alpha (deg)", ylabel="body height above axle (m)", title="leg height")
    axes[1].plot(deg, result.torque_analytic, "k-", label=f"virtual work (P/2) y1, P = {result.force:g} N")
    axes[1].plot(deg, result.torque_mujoco, ".", ms=3)
    axes[1].set(xlabel="alpha (deg)", ylabel="hip torque per motor (N m)", title="static hip torques (4 motors)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    written = [figures.save(fig, out_dir, "five_bar.png")]
    fig, axes = figures.figure(1, 3, width=14.0, height=3.6)
    draw_part(axes[0], result.kinematics.parts["position"], result.kinematics.atol, "axle position (right)")
    draw_part(axes[1], result.jacobian.parts["jacobian"], result.jacobian.atol, "leg Jacobian (right)")
    draw_part(axes[2], result.wrong_jacobian.parts["jacobian"], result.wrong_jacobian.atol,
              "leg Jacobian, rear motor about the front's axis")
    fig.suptitle(f"five-bar leg vs MuJoCo's closed loop at {len(result.pairs)} poses", fontsize=10)
    return [*written, figures.save(fig, out_dir, "five_bar_derivation.png")]


@experiment(
    "five-bar",
    summary="five-bar leg: its kinematics and Jacobian through check kinematics and check jacobian, its height "
            "and static hip torques vs MuJoCo's closed geometry and statics, the virtual model's J^T F",
    expected=f"height within {HEIGHT_RTOL:g}, torques within {TORQUE_RTOL:g} relative; position and Jacobian agree "
             "to round-off at closed poses; a rear-axis slip is named; J^T F holds",
    params={"force": Param(30.0, "vertical leg force P, N", -200.0, 200.0), "mjcf": MJCF},
)
def five_bar_experiment(ctx: Context) -> dict:
    result = five_bar_leg(float(ctx.params["force"]), 7 if ctx.short else 61, ctx.params["mjcf"])
    plot_five_bar_leg(result, ctx.out_dir)
    return judge_five_bar_leg(result)[1]


# --------------------------------------------------------------------------- wheeled pendulum
@dataclass(frozen=True)
class PendulumLinearization:
    """The linearized wheeled pendulum through ``check linearization`` at several leg angles.

    Attributes:
      alpha: hip angles, ``(n,)`` rad; heights: leg heights (the pendulum's ``l``), ``(n,)`` m.
      reports, printed: per angle, the report of the linearized model and of the printed ``2 l / r^2`` form.
    """

    alpha: np.ndarray
    heights: np.ndarray
    reports: list[CheckReport]
    printed: list[CheckReport]


def pendulum_linearization(alpha_deg=(190.0, 220.0, 250.0), mjcf: str = "") -> PendulumLinearization:
    """Linearize the rigid-leg robot balanced at each angle and check the linear model (and its print) against it."""
    reports, printed, heights = [], [], []
    for alpha in np.radians(alpha_deg):
        model = build(legs="massless", rigid_alpha=float(alpha), mjcf=mjcf)
        p = biped_params(model)
        qpos, _ = balance_pose(model, float(alpha), p)
        height = float(p.leg_height(alpha))
        lift, read, split = pendulum_maps(model, height)
        reduction = Reduction(lift, read, split, ("x", "xd", "theta", "thd"), ("T",))
        options: dict[str, Any] = {"qpos": qpos, "qvel": np.zeros(model.nv), "ctrl": np.zeros(model.nu),
                                   "reduction": reduction, "atol": PENDULUM_ATOL, "rtol": PENDULUM_RTOL}
        reports.append(check_linearization(lambda q, qd, u, p=p, h=height: wp.linearize_pendulum(p.pendulum, h),
                                           model, **options))
        printed.append(check_linearization(
            lambda q, qd, u, p=p, h=height: wp.linearize_pendulum(p.pendulum, h, printed=True), model, **options))
        heights.append(height)
    return PendulumLinearization(np.radians(np.asarray(alpha_deg, dtype=float)), np.array(heights), reports, printed)


def judge_pendulum_linearization(result: PendulumLinearization) -> tuple[Verdict, dict]:
    """The linearized model agrees at every leg height; the printed form fails at every one."""
    ok = all(r.passed for r in result.reports) and not any(r.passed for r in result.printed)
    worst = max(r.max_abs_error for r in result.reports)
    verdict = Verdict(ok, f"linearized model within {worst:.2g} at {len(result.reports)} leg heights; printed 2l/r^2 "
                          f"{'fails everywhere' if not any(r.passed for r in result.printed) else 'PASSES somewhere'}")
    return verdict, {**verdict.as_metrics(), "alpha_deg": np.degrees(result.alpha), "l_m": result.heights,
                     "max_abs_error": [r.max_abs_error for r in result.reports],
                     "printed_max_abs_error": [r.max_abs_error for r in result.printed],
                     "reports": [r.to_dict() for r in result.reports],
                     "printed_attribution": [r.attribution for r in result.printed]}


def plot_pendulum_linearization(result: PendulumLinearization, out_dir) -> list[Path]:
    """The linear model's and the print's per-entry errors of A at each leg height (``pendulum_linearization.png``)."""
    n = len(result.reports)
    fig, axes = figures.figure(2, n, width=4.2 * n, height=3.2)
    axes = np.atleast_2d(axes).reshape(2, n)
    for k in range(n):
        title = f"l = {result.heights[k]:.3f} m"
        draw_part(axes[0, k], result.reports[k].parts["A"], PENDULUM_ATOL, f"linearized model, {title}")
        draw_part(axes[1, k], result.printed[k].parts["A"], PENDULUM_ATOL, f"as printed (2l/r^2), {title}")
    fig.suptitle("wheeled pendulum: A of [x, xd, theta, thd] vs linearize of the robot", fontsize=10)
    return [figures.save(fig, out_dir, "pendulum_linearization.png")]


@experiment(
    "pendulum-linearization",
    summary="the wheeled pendulum's linearization through check linearization at several leg heights",
    expected=f"the linearized model agrees within {PENDULUM_RTOL:.0%} (+{PENDULUM_ATOL:g}) at every height; "
             "the printed 2l/r^2 fails at every one",
    params={"mjcf": MJCF},
)
def pendulum_linearization_experiment(ctx: Context) -> dict:
    alphas = (190.0, 250.0) if ctx.short else (190.0, 205.0, 220.0, 235.0, 250.0)
    result = pendulum_linearization(alphas, ctx.params["mjcf"])
    plot_pendulum_linearization(result, ctx.out_dir)
    return judge_pendulum_linearization(result)[1]
