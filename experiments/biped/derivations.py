"""The biped's own derivations as users of the part checks (``crossdyn check kinematics/jacobian/linearization``).

- ``five-bar-derivation``: the leg's kinematics and Jacobian (``analytic.biped.five_bar``, the
  Jacobian the virtual-model controller's ``J^T F`` stands on) against the MJCF's closed loop
  at symmetric and asymmetric poses closed by MuJoCo's own kinematics; a Jacobian taking the
  rear motor about the front's axis must fail with the rear column named, and the
  virtual-model torques must equal ``-J_z^T P``.
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

from crossdyn.analytic.biped import five_bar
from crossdyn.analytic.biped import wheeled_pendulum as wp
from crossdyn.analytic.biped.five_bar import STROKE
from crossdyn.controllers.biped.virtual_model import hip_torques
from crossdyn.experiments.biped.measurements import pendulum_maps, solve_closure
from crossdyn.experiments.biped.model import MJCF, balance_pose, biped_params, build
from crossdyn.experiments.core import figures
from crossdyn.experiments.core.checks.entry_errors import draw_part
from crossdyn.experiments.core.checks.jacobian import check_jacobian
from crossdyn.experiments.core.checks.kinematics import check_kinematics
from crossdyn.experiments.core.checks.linearization import Reduction, check_linearization
from crossdyn.experiments.core.checks.report import CheckReport
from crossdyn.experiments.core.registry import Verdict, experiment
from crossdyn.experiments.core.runner import Context

# The gallery's heading for this module's experiments, and the docs/derivations page of what they check.
GALLERY_HEADING = "Wheel-legged biped: the hand models against MuJoCo"
DERIVATION_PAGE = "biped-model"

__all__ = ["closed_poses", "leg_derivation", "FiveBarDerivation", "five_bar_derivation", "judge_five_bar_derivation",
           "plot_five_bar_derivation", "PendulumLinearization", "pendulum_linearization",
           "judge_pendulum_linearization", "plot_pendulum_linearization", "PENDULUM_ATOL", "PENDULUM_RTOL"]

LEG = ("left_front_hip", "left_rear_hip")
# The hand pendulum rolls rigidly on massless legs; the robot's 1e-4 kg legs and soft wheel contacts leak
# into the reduced state.  Entries are held to 1 % (the linearization experiment's bar), and to 0.5 absolute
# for the entries the rigid model has at zero.
PENDULUM_RTOL = 0.01
PENDULUM_ATOL = 0.5
# Leg force of the J^T F comparison, N (the five-bar experiment's default).
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
class FiveBarDerivation:
    """The leg's kinematics and Jacobian reports, the wrong Jacobian's, and the J^T F comparison.

    Attributes:
      pairs: the (front, rear) hip angles of the closed poses, ``(n, 2)`` rad.
      kinematics, jacobian, wrong_jacobian: the reports.
      jtf_error: largest ``|virtual-model torque + J_z^T P|`` over the symmetric poses, N m.
      jtf_scale: largest virtual-model torque, N m.
    """

    pairs: np.ndarray
    kinematics: CheckReport
    jacobian: CheckReport
    wrong_jacobian: CheckReport
    jtf_error: float
    jtf_scale: float


def five_bar_derivation(points: int = 13, mjcf: str = "") -> FiveBarDerivation:
    """Check the leg's derivation at ``points`` symmetric poses over the stroke and as many asymmetric ones."""
    rig = build(fixed_body=True, gravity=False, mjcf=mjcf)
    p = biped_params(rig)
    alphas = np.linspace(*STROKE, points)
    offset = np.radians(8.0)  # an asymmetric leg: front and rear motors 16 deg apart
    pairs = np.vstack([np.column_stack([alphas, alphas]),
                       np.column_stack([alphas[1:-1] + offset, alphas[1:-1] - offset])])
    q = closed_poses(rig, pairs)
    position, jacobian = leg_derivation(rig)
    _, wrong = leg_derivation(rig, rear_sign=-1.0)
    kinematics = check_kinematics(position, rig, site="left_axle", states=q)
    options: dict[str, Any] = {"site": "left_axle", "coordinates": list(LEG), "states": q}
    right_J, wrong_J = check_jacobian(jacobian, rig, **options), check_jacobian(wrong, rig, **options)
    # The virtual-model controller's torque for a vertical leg force P, against -J_z^T P.
    symmetric = q[:points]
    J_z = jacobian(symmetric)[:, 2, :]  # (n, 2): d axle_z / d (front, rear)
    _, y1, _ = five_bar.height_derivatives(alphas, p.l1, p.l2, p.l3)
    tau = np.array([hip_torques(p.pendulum, (s, s), 2 * FORCE - p.pendulum.M * p.pendulum.g, 0.0, np.inf)[0]
                    for s in y1])  # F_y = P_L + P_R - M g (support statics) with P_L = P_R = FORCE
    error = float(np.abs(tau[:, None] + J_z * FORCE).max())
    return FiveBarDerivation(pairs, kinematics, right_J, wrong_J, error, float(np.abs(tau).max()))


# J^T F: the controller's torque is the same product of the same numbers, round-off only.
JTF_RTOL = 1e-12


def judge_five_bar_derivation(result: FiveBarDerivation) -> tuple[Verdict, dict]:
    """Kinematics and Jacobian agree; the rear-axis slip fails with the rear column named; J^T F holds."""
    named = any("left_rear_hip" in line and "opposite sign" in line for line in result.wrong_jacobian.attribution)
    jtf = result.jtf_error <= JTF_RTOL * result.jtf_scale
    ok = result.kinematics.passed and result.jacobian.passed and not result.wrong_jacobian.passed and named and jtf
    verdict = Verdict(ok, f"axle position {result.kinematics.max_abs_error:.1e} m, Jacobian "
                          f"{result.jacobian.max_abs_error:.1e} m/rad at {len(result.pairs)} closed poses; "
                          f"rear-axis slip {'named' if named else 'NOT named'}; J^T F {result.jtf_error:.1e} N m")
    return verdict, {**verdict.as_metrics(), "poses": len(result.pairs),
                     "hip_angles_deg": np.degrees(result.pairs),
                     "kinematics": result.kinematics.to_dict(), "jacobian": result.jacobian.to_dict(),
                     "wrong_jacobian": result.wrong_jacobian.to_dict(), "wrong_named": named,
                     "jtf_max_error_N_m": result.jtf_error, "jtf_scale_N_m": result.jtf_scale}


def plot_five_bar_derivation(result: FiveBarDerivation, out_dir) -> list[Path]:
    """Per-entry errors of the three checks (``five_bar_derivation.png``)."""
    fig, axes = figures.figure(1, 3, width=14.0, height=3.6)
    draw_part(axes[0], result.kinematics.parts["position"], result.kinematics.atol, "axle position (right)")
    draw_part(axes[1], result.jacobian.parts["jacobian"], result.jacobian.atol, "leg Jacobian (right)")
    draw_part(axes[2], result.wrong_jacobian.parts["jacobian"], result.wrong_jacobian.atol,
              "leg Jacobian, rear motor about the front's axis")
    fig.suptitle(f"five-bar leg vs MuJoCo's closed loop at {len(result.pairs)} poses", fontsize=10)
    return [figures.save(fig, out_dir, "five_bar_derivation.png")]


@experiment(
    "five-bar-derivation",
    summary="the five-bar leg's kinematics and Jacobian (the virtual-model J^T F) vs the MJCF's closed loop, "
            "through check kinematics and check jacobian",
    expected="position and Jacobian agree to round-off at closed poses; a rear-axis slip is named; J^T F holds",
    params={"mjcf": MJCF},
)
def five_bar_derivation_experiment(ctx: Context) -> dict:
    result = five_bar_derivation(5 if ctx.short else 13, ctx.params["mjcf"])
    plot_five_bar_derivation(result, ctx.out_dir)
    return judge_five_bar_derivation(result)[1]


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
