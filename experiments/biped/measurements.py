"""The biped's cross-checks: each hand model of its derivation (docs/derivations/biped-model.md) against MuJoCo.

The registered experiments (``experiments/biped/checks.py``) and the tests call these;
each returns plain numbers so a check can be shown to fail on a wrong model
(the misprinted forms, docs/derivations/errata.md, run through the same functions).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from ...analytic.biped import five_bar
from ...analytic.biped import wheeled_pendulum as wp
from ...analytic.biped.jump import extension_stroke
from ...analytic.rotation import pitch
from ..core.errors import StateError
from ..core.models import body_inertia
from .model import (
    HIPS,
    KNEES,
    SIDES,
    BipedParams,
    balance_pose,
    biped_params,
    build,
    closure_error,
    stand_pose,
)

__all__ = ["solve_closure", "leg_statics", "contact_forces", "statics_point", "pendulum_maps",
           "reduced_linearization", "discretize", "composite_params", "linearization_point", "steering_instant",
           "drive_and_turn", "wheel_dynamics_instant", "JumpRun", "jump_run"]


# --- five-bar ----------------------------------------------------------------
def solve_closure(model: mujoco.MjModel, data: mujoco.MjData, alpha: float, knee_guess: float = 0.5,
                  alpha_rear: float | None = None) -> float:
    """Close both loops with MuJoCo's own kinematics: hips at ``alpha``, knees by Gauss-Newton.

    ``alpha_rear`` puts the rear hips at another angle (an asymmetric leg).  The residual is
    each rear shank tip's distance to its axle (``mj_jacSite`` Jacobians); ``knee_guess`` (rad)
    starts every knee outward, so the solution is the working branch and owes nothing to ``y(alpha)``.

    Returns:
      The final closure residual, m.

    Raises:
      StateError: no convergence (the loop cannot close at this ``alpha``).
    """
    for hip in HIPS:
        rear = alpha_rear is not None and "_rear_" in hip
        data.qpos[model.joint(hip).qposadr[0]] = alpha_rear if rear else alpha
    for knee in KNEES:
        data.qpos[model.joint(knee).qposadr[0]] = knee_guess
    jac_a, jac_b = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    for side in SIDES:
        dofs = [model.joint(f"{side}_{end}_knee").dofadr[0] for end in ("front", "rear")]
        adrs = [model.joint(f"{side}_{end}_knee").qposadr[0] for end in ("front", "rear")]
        foot, axle = model.site(f"{side}_rear_foot").id, model.site(f"{side}_axle").id
        for _ in range(50):
            mujoco.mj_kinematics(model, data)
            mujoco.mj_comPos(model, data)
            res = data.site_xpos[foot] - data.site_xpos[axle]
            if np.linalg.norm(res) < 1e-14:
                break
            mujoco.mj_jacSite(model, data, jac_a, None, foot)
            mujoco.mj_jacSite(model, data, jac_b, None, axle)
            J = (jac_a - jac_b)[:, dofs]
            step = np.linalg.lstsq(J, -res, rcond=None)[0]
            data.qpos[adrs] += step
    mujoco.mj_forward(model, data)
    err = closure_error(model, data)
    if err > 1e-9:
        raise StateError(f"five-bar loop does not close at alpha={np.degrees(alpha):.2f} deg (residual {err:.2e} m)")
    return err


def leg_statics(rig: mujoco.MjModel, qpos: np.ndarray, force: float) -> dict:
    """MuJoCo's leg height and static hip torques at a closed pose ``qpos`` under a vertical leg force.

    ``rig`` is the biped welded to the world, without gravity or contacts
    (``build(fixed_body=True, gravity=False)``): link masses play no part in a static pose,
    the hand model's massless legs exactly.  An upward ``force`` (N) on each wheel stands for
    the ground.  ``tau`` is the rigid statics of the constrained pose
    (``qfrc_smooth + moment^T tau + J_c^T lambda = 0``, ``J_c`` the closure's Jacobian);
    ``tau_soft`` holds every leg joint still in MuJoCo's forward dynamics, whose soft closure
    makes it differ by ~1e-4.

    Returns:
      dict: ``height`` (m, per side), ``tau`` and ``tau_soft`` (N m, per hip in
      ``HIPS`` order), ``statics_residual`` (N m), ``closure`` (m).

    Raises:
      StateError: the pose closed on the wrong branch (an axle above the hips).
    """
    data = mujoco.MjData(rig)
    data.qpos[:] = qpos
    data.qvel[:] = 0.0
    mujoco.mj_forward(rig, data)
    closure = closure_error(rig, data)
    body_z = data.xpos[rig.body("body").id][2]
    heights = [body_z - data.site_xpos[rig.site(f"{side}_axle").id][2] for side in SIDES]
    if min(heights) <= 0:
        raise StateError("five-bar closed on the wrong branch (axle above the hips)")
    for side in SIDES:
        data.xfrc_applied[rig.body(f"{side}_wheel").id, 2] = force
    hips = [rig.actuator(h).id for h in HIPS]
    mujoco.mj_forward(rig, data)

    # Rigid statics.
    moment = np.zeros((rig.nu, rig.nv))
    mujoco.mju_sparse2dense(moment, data.actuator_moment, data.moment_rownnz, data.moment_rowadr, data.moment_colind)
    jac_a, jac_b = np.zeros((3, rig.nv)), np.zeros((3, rig.nv))
    rows = []
    for side in SIDES:
        mujoco.mj_jacSite(rig, data, jac_a, None, rig.site(f"{side}_rear_foot").id)
        mujoco.mj_jacSite(rig, data, jac_b, None, rig.site(f"{side}_axle").id)
        rows.append(jac_a - jac_b)
    system = np.hstack([moment[hips].T, np.vstack(rows).T])
    solution = np.linalg.lstsq(system, -data.qfrc_smooth, rcond=None)[0]
    tau = solution[: len(hips)]
    statics_residual = float(np.abs(system @ solution + data.qfrc_smooth).max())

    # Soft forward dynamics.
    leg_dofs = [rig.joint(j).dofadr[0] for j in HIPS + KNEES]

    def qacc(ctrl):
        data.ctrl[:] = 0.0
        data.ctrl[hips] = ctrl
        mujoco.mj_forward(rig, data)
        return data.qacc[leg_dofs].copy()

    base = qacc(np.zeros(4))
    S = np.stack([qacc(e) - base for e in np.eye(4)], axis=1)  # exact: qacc is affine in ctrl
    tau_soft = np.linalg.lstsq(S, -base, rcond=None)[0]
    return {"height": np.array(heights), "tau": tau, "tau_soft": tau_soft, "statics_residual": statics_residual,
            "closure": closure}


# --- statics -----------------------------------------------------------------
def contact_forces(model: mujoco.MjModel, data: mujoco.MjData) -> dict[str, float]:
    """Normal contact force on each wheel (N), summed over its contacts."""
    out = {side: 0.0 for side in SIDES}
    f = np.zeros(6)
    for i in range(data.ncon):
        c = data.contact[i]
        names = {model.geom(int(c.geom[0])).name, model.geom(int(c.geom[1])).name}
        for side in SIDES:
            if f"{side}_wheel_contact" in names:
                mujoco.mj_contactForce(model, data, i, f)
                out[side] += float(f[0])
    return out


def statics_point(model: mujoco.MjModel, params: BipedParams, alpha: float, F_y: float, T_x: float,
                  printed: bool = False) -> dict:
    """Command (F_y, T_x) through the support statics and the virtual work on ``model`` (jointed, massless
    legs) standing at ``alpha``; read the wheel contact forces from MuJoCo.

    Returns:
      dict: ``predicted`` (leg force plus wheel weight) and ``measured`` (N, left and right),
      ``rel_error`` (largest relative difference), ``body_force`` (M zdd, N), ``closure`` (m).
    """
    p = params.pendulum
    P_L, P_R = wp.leg_forces(p, F_y, T_x, printed=printed)
    data = mujoco.MjData(model)
    data.qpos[:] = stand_pose(model, alpha, params)
    for side, P in zip(SIDES, (P_L, P_R), strict=False):
        tau = five_bar.hip_torque(alpha, P, params.l1, params.l2, params.l3)
        for end in ("front", "rear"):
            data.ctrl[model.actuator(f"{side}_{end}_hip").id] = tau
    mujoco.mj_forward(model, data)
    measured = contact_forces(model, data)
    weight = p.m * p.g
    predicted = {"left": float(P_L) + weight, "right": float(P_R) + weight}
    rel = max(abs(measured[s] - predicted[s]) / max(abs(predicted[s]), 1e-9) for s in SIDES)
    return {"predicted": predicted, "measured": measured, "rel_error": float(rel),
            "body_force": float(p.M * data.qacc[2]), "closure": closure_error(model, data)}


# --- linearization -----------------------------------------------------------
def pendulum_maps(model: mujoco.MjModel, l_hip: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The wheeled pendulum's ``[x, xd, theta, thd]`` and ``T = T_L + T_R`` on the robot's full state.

    A reduced state lifts to a full perturbation that rolls without slip on rigid legs (``x``: the wheels
    turn by ``x / r``; ``theta``: the robot pitches about the axle, the wheels turn back by ``theta``); it
    is read back as the axle's ``x`` and the body's pitch.  Needs a rigid-leg model, free joint first.

    Returns:
      ``lift (2 nv, 4)``, ``read (4, 2 nv)`` (``read lift = I``) and ``split (nu, 1)``
      (``T`` shared equally by the wheel motors).
    """
    nv = model.nv
    r = biped_params(model).pendulum.r
    wheels = [model.joint(f"{side}_wheel").dofadr[0] for side in SIDES]
    lift, read = np.zeros((2 * nv, 4)), np.zeros((4, 2 * nv))
    for offset, (cx, cth) in ((0, (0, 2)), (nv, (1, 3))):  # positions, then velocities
        lift[offset + 0, cx] = 1.0
        lift[[offset + w for w in wheels], cx] = 1.0 / r
        lift[offset + 0, cth] = l_hip
        lift[offset + 4, cth] = 1.0  # free joint: rotation about body y (= world y upright)
        lift[[offset + w for w in wheels], cth] = -1.0
        read[cx, offset + 0] = 1.0
        read[cx, offset + 4] = -l_hip
        read[cth, offset + 4] = 1.0
    split = np.zeros((model.nu, 1))
    for side in SIDES:
        split[model.actuator(f"{side}_wheel").id, 0] = 0.5  # T = T_L + T_R, shared equally
    return lift, read, split


def reduced_linearization(model: mujoco.MjModel, data: mujoco.MjData, l_hip: float,
                          eps: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """``mjd_transitionFD`` reduced to ``[x, xd, theta, thd]`` and ``T = T_L + T_R`` (:func:`pendulum_maps`):
    ``(A, B)``, (4, 4) and (4, 1), discrete over one ``model.opt.timestep``."""
    nv = model.nv
    A, B = np.zeros((2 * nv, 2 * nv)), np.zeros((2 * nv, model.nu))
    mujoco.mjd_transitionFD(model, data, eps, True, A, B, None, None)
    lift, read, split = pendulum_maps(model, l_hip)
    return read @ A @ lift, read @ B @ split


def discretize(A: np.ndarray, B: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Discretize ``[x, xd, theta, thd]`` dynamics the way MuJoCo's Euler integrator steps.

    MuJoCo's ``Euler`` is semi-implicit: ``v+ = v + dt a(q, v, u)``, then
    ``q+ = q + dt v+``.  (A zero-order hold would differ in the position rows
    by a factor 2 on the ``dt^2`` terms, which are whole entries of ``A_d - I``.)
    """
    q, v = [0, 2], [1, 3]
    Ad, Bd = np.eye(4), np.zeros((4, B.shape[1]))
    Ad[v, :] += dt * A[v, :]
    Bd[v, :] = dt * B[v, :]
    Ad[q, :] += dt * Ad[v, :]
    Bd[q, :] = dt * Bd[v, :]
    return Ad, Bd


def composite_params(model: mujoco.MjModel, data: mujoco.MjData,
                     params: BipedParams) -> tuple[wp.PendulumParams, float]:
    """Lump the body and the rigid leg links into one pendulum body, read from MuJoCo: ``(pendulum, l)``,
    the lump's M, J_pitch, J_yaw (about its CoM) and its CoM height above the axle, m."""
    ids = [i for i in range(1, model.nbody) if "wheel" not in model.body(i).name]
    mass = model.body_mass[ids]
    com = (mass[:, None] * data.xipos[ids]).sum(0) / mass.sum()
    J = np.zeros((3, 3))
    for i, m_i in zip(ids, mass, strict=False):
        d = data.xipos[i] - com
        J += body_inertia(model, i, data) + m_i * (d @ d * np.eye(3) - np.outer(d, d))
    axle_z = data.site_xpos[model.site("left_axle").id][2]
    p = params.pendulum
    lump = wp.PendulumParams(M=float(mass.sum()), m=p.m, r=p.r, I=p.I, J_pitch=float(J[1, 1]),
                             J_yaw=float(J[2, 2]), D=p.D, g=p.g)
    return lump, float(com[2] - axle_z)


def _relative_entry_errors(candidate: tuple, truth: tuple) -> dict:
    """Entry-wise errors of ``(A_d - I, B_d)`` against MuJoCo's, on MuJoCo's non-zero entries."""
    (Ac, Bc), (At, Bt) = candidate, truth
    c = np.hstack([Ac - np.eye(4), Bc])
    t = np.hstack([At - np.eye(4), Bt])
    scale = np.abs(t).max()
    nonzero = np.abs(t) > 1e-6 * scale  # MuJoCo's soft contact adds ~1e-7-relative entries
    rel = np.where(nonzero, np.abs(c - t) / np.where(nonzero, np.abs(t), 1.0), 0.0)
    return {"max_rel": float(rel.max()), "rel": rel,
            "max_abs_on_zero": float(np.abs(c - t)[~nonzero].max() / scale) if (~nonzero).any() else 0.0}


def linearization_point(alpha: float, legs: str = "massless", com_offset=(0.0, 0.0), mjcf: str = "") -> dict:
    """One leg pose: MuJoCo's reduced (A, B) vs the analytic models that could explain it.

    Candidates: ``analytic`` (the linearized wheeled pendulum, l = y(alpha)), ``printed`` (with
    ``2 l / r^2``), ``no_wheel_inertia`` (I = 0), ``lumped`` (body and leg links as one rigid body).

    Returns:
      dict with ``l`` (m), ``mujoco`` (A_d, B_d), per-candidate error dicts, and the unstable
      pole (1/s) from MuJoCo, the analytic and the lumped model.
    """
    model = build(legs=legs, rigid_alpha=alpha, com_offset=com_offset, mjcf=mjcf)
    params = biped_params(model)
    data = mujoco.MjData(model)
    data.qpos[:], _ = balance_pose(model, alpha, params)
    mujoco.mj_forward(model, data)
    height = float(params.leg_height(alpha))  # the pendulum length l, m
    dt = model.opt.timestep
    truth = reduced_linearization(model, data, height)
    lump, l_lump = composite_params(model, data, params)
    p = params.pendulum
    candidates = {
        "analytic": wp.linearize_pendulum(p, height),
        "printed": wp.linearize_pendulum(p, height, printed=True),
        "no_wheel_inertia": wp.linearize_pendulum(wp.PendulumParams(p.M, p.m, p.r, 0.0, p.J_pitch, p.J_yaw, p.D, p.g),
                                                  height),
        "lumped": wp.linearize_pendulum(lump, l_lump),
    }
    errors = {name: _relative_entry_errors(discretize(A, B, dt), truth) for name, (A, B) in candidates.items()}
    pole_mj = float(np.max(np.log(np.abs(np.linalg.eigvals(truth[0])))) / dt)
    pole_an = float(np.max(np.linalg.eigvals(candidates["analytic"][0]).real))
    return {"alpha": alpha, "l": height, "mujoco": truth, "errors": errors, "pole_mujoco": pole_mj,
            "pole_analytic": pole_an, "pole_lumped": float(np.max(np.linalg.eigvals(candidates["lumped"][0]).real))}


# --- steering and wheel dynamics ---------------------------------------------
def steering_instant(model: mujoco.MjModel, params: BipedParams, alpha: float, dT: float) -> dict:
    """Yaw acceleration at rest for ``T_L = dT``, ``T_R = -dT`` (N m): MuJoCo vs the steering model.

    Returns:
      dict: ``mujoco`` and ``analytic`` (rad/s^2, positive turns right), ``with_wheel_yaw`` (the
      wheels' own yaw inertia added, all the model leaves out on an ideal robot) and
      ``lumped_legs_and_wheel_yaw`` (body and leg links lumped too: a robot with heavy legs).
    """
    data = mujoco.MjData(model)
    data.qpos[:], _ = balance_pose(model, alpha, params)
    data.ctrl[model.actuator("left_wheel").id] = dT
    data.ctrl[model.actuator("right_wheel").id] = -dT
    mujoco.mj_forward(model, data)
    R = data.xmat[model.body("body").id].reshape(3, 3)
    yaw_acc = float((R @ data.qacc[3:6])[2])  # free-joint angular acceleration is in the body frame
    p = params.pendulum
    wheel_yaw = params.wheel_yaw_inertia
    extended = wp.PendulumParams(p.M, p.m, p.r, p.I, p.J_pitch, p.J_yaw + 2 * wheel_yaw, p.D, p.g)
    lump, _ = composite_params(model, data, params)
    lumped = wp.PendulumParams(p.M, p.m, p.r, p.I, p.J_pitch, lump.J_yaw + 2 * wheel_yaw, p.D, p.g)
    return {"mujoco": -yaw_acc, "analytic": float(wp.yaw_acceleration(p, dT, -dT)),
            "with_wheel_yaw": float(wp.yaw_acceleration(extended, dT, -dT)),
            "lumped_legs_and_wheel_yaw": float(wp.yaw_acceleration(lumped, dT, -dT))}


def _axle_motion(model, data, heading):
    """Per side: axle acceleration and velocity along the heading, and position (world)."""
    out = {}
    acc, vel = np.zeros(6), np.zeros(6)
    for side in SIDES:
        bid = model.body(f"{side}_wheel").id
        mujoco.mj_objectAcceleration(model, data, mujoco.mjtObj.mjOBJ_BODY, bid, acc, 0)
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY, bid, vel, 0)
        out[side] = (float(acc[3:] @ heading), float(vel[3:] @ heading), data.xpos[bid].copy())
    return out


def drive_and_turn(model: mujoco.MjModel, params: BipedParams, alpha: float, T_L: float, T_R: float,
                   duration: float) -> dict:
    """Drive with constant wheel torques for ``duration`` s, then compare the mean and yaw accelerations
    from the wheels (their bodies' own motion along the heading) with the body's: its yaw acceleration
    and the axle midpoint's ``a_C + alpha x r + omega x (omega x r)``.  Needs a rigid-leg model.
    """
    data = mujoco.MjData(model)
    data.qpos[:], _ = balance_pose(model, alpha, params)
    data.ctrl[model.actuator("left_wheel").id] = T_L
    data.ctrl[model.actuator("right_wheel").id] = T_R
    mujoco.mj_forward(model, data)
    start_right = data.site_xpos[model.site("right_axle").id].copy()
    for _ in range(int(round(duration / model.opt.timestep))):
        mujoco.mj_step(model, data)
    mujoco.mj_forward(model, data)  # positions and accelerations of the final state
    mujoco.mj_rnePostConstraint(model, data)
    body = model.body("body").id
    R = data.xmat[body].reshape(3, 3)
    heading = R[:, 0] - R[2, 0] * np.array([0.0, 0.0, 1.0])
    heading /= np.linalg.norm(heading)
    motion = _axle_motion(model, data, heading)
    (aL, vL, _), (aR, vR, pR) = motion["left"], motion["right"]
    vel, acc = np.zeros(6), np.zeros(6)
    mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY, body, vel, 0)
    mujoco.mj_objectAcceleration(model, data, mujoco.mjtObj.mjOBJ_BODY, body, acc, 0)
    omega, omega_dot = vel[:3], acc[:3]
    mid = 0.5 * (data.site_xpos[model.site("left_axle").id] + data.site_xpos[model.site("right_axle").id])
    r = mid - data.xipos[body]
    mid_acc = acc[3:] + np.cross(omega_dot, r) + np.cross(omega, np.cross(omega, r))
    D = params.pendulum.D
    x_R = float((pR - start_right) @ heading)
    return {
        "yaw_acc_mujoco": -float(omega_dot[2]),
        "yaw_acc_corrected": float(wp.yaw_acceleration_from_wheels(D, aL, aR)),
        "yaw_acc_printed": float(wp.yaw_acceleration_from_wheels(D, aL, aR, xd_L=vL, x_R=x_R, printed=True)),
        "xdd_mujoco": float(mid_acc @ heading),
        "xdd_corrected": float(wp.axle_acceleration(aL, aR)),
        "xdd_printed": float(wp.axle_acceleration(aL, aR, xd_R=vR, printed=True)),
        "pitch": pitch(data.qpos[3:7]),
    }


def wheel_dynamics_instant(model: mujoco.MjModel, params: BipedParams, alpha: float, T: float) -> dict:
    """One wheel's dynamics: the torque it implies from MuJoCo's ``xdd`` and ``N`` (minus the leg's x force on
    the wheel, ``cfrc_int``) vs the applied ``T``."""
    data = mujoco.MjData(model)
    data.qpos[:], _ = balance_pose(model, alpha, params)
    for side in SIDES:
        data.ctrl[model.actuator(f"{side}_wheel").id] = T
    mujoco.mj_forward(model, data)
    mujoco.mj_rnePostConstraint(model, data)
    bid = model.body("left_wheel").id
    acc = np.zeros(6)
    mujoco.mj_objectAcceleration(model, data, mujoco.mjtObj.mjOBJ_BODY, bid, acc, 0)
    xdd = float(acc[3])
    N = -float(data.cfrc_int[bid][3])
    return {"applied": T, "corrected": float(wp.wheel_drive_torque(params.pendulum, xdd, N)),
            "printed": float(wp.wheel_drive_torque(params.pendulum, xdd, N, printed=True)), "xdd": xdd, "N": N}


# --- jump --------------------------------------------------------------------
@dataclass
class JumpRun:
    """A full-torque jump in MuJoCo and what it is compared with.

    Attributes:
      alpha, body_velocity: along the extension stroke (rad, m/s).
      takeoff_velocity: body vertical velocity when alpha reaches alpha1, m/s.
      liftoff_com_velocity: whole robot's CoM vertical velocity when both wheels leave the ground, m/s.
      body_apex_rise: body's highest point above its height at alpha1, m.
      com_apex_rise: robot CoM's highest point above its height at lift-off, m.
      closure_max: largest loop-closure error over the whole run, m.
      energy: work of the hips and where it went at alpha1, J.
      t_stroke: stroke duration, s.
      wheel_clearance: highest wheel-bottom height above the floor, m.
    """

    alpha: np.ndarray
    body_velocity: np.ndarray
    takeoff_velocity: float
    liftoff_com_velocity: float
    body_apex_rise: float
    com_apex_rise: float
    closure_max: float
    energy: dict
    t_stroke: float
    wheel_clearance: float


def jump_run(model: mujoco.MjModel, params: BipedParams, tau: float, alpha0: float, alpha1: float,
             duration: float) -> JumpRun:
    """Stand at ``alpha0``, drive all four hips at ``tau`` until ``alpha1``, retract at ``-tau`` and hold
    ``alpha0`` with a stiff PD through flight and landing (the closure error is measured over a whole jump)."""
    data = mujoco.MjData(model)
    data.qpos[:] = stand_pose(model, alpha0, params)
    mujoco.mj_forward(model, data)
    hips = [model.actuator(h).id for h in HIPS]
    hip_q = [model.joint(h).qposadr[0] for h in HIPS]
    hip_v = [model.joint(h).dofadr[0] for h in HIPS]
    body = model.body("body").id
    limit = params.hip_torque_limit

    def energies():
        kinetic = {}
        vel = np.zeros(6)
        for i in range(1, model.nbody):
            # mjOBJ_BODY is the inertial frame: velocity of the CoM, in principal axes.
            mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY, i, vel, 1)
            w, v = vel[:3], vel[3:]
            kinetic[model.body(i).name] = 0.5 * model.body_mass[i] * v @ v + 0.5 * w @ (model.body_inertia[i] * w)
        potential = float(-(model.body_mass[1:] * (data.xipos[1:] @ model.opt.gravity)).sum())
        return kinetic, potential

    _, pe0 = energies()
    phase, alphas, vels, energy = "stroke", [], [], {}
    take = lift = None
    work = closure = body_z_take = com_z_lift = wheel_top = t_stroke = 0.0
    body_apex = com_apex = -np.inf
    for _ in range(int(round(duration / model.opt.timestep))):
        alpha = float(np.mean(data.qpos[hip_q]))
        if phase == "stroke":
            data.ctrl[hips] = tau
        elif phase == "retract":
            data.ctrl[hips] = -tau
            if alpha <= alpha0:
                phase = "hold"
        if phase == "hold":
            data.ctrl[hips] = np.clip(400.0 * (alpha0 - data.qpos[hip_q]) - 20.0 * data.qvel[hip_v], -limit, limit)
        q_before = data.qpos[hip_q].copy()
        ctrl = data.ctrl[hips].copy()
        mujoco.mj_step(model, data)
        if phase == "stroke":
            work += float(ctrl @ (data.qpos[hip_q] - q_before))
            alphas.append(float(np.mean(data.qpos[hip_q])))
            vels.append(float(data.qvel[2]))
            if alphas[-1] >= alpha1:
                phase = "retract"
                take = float(data.qvel[2])
                t_stroke = float(data.time)
                body_z_take = float(data.xpos[body][2])
                kinetic, pe = energies()
                energy = {
                    "hip_work": work,
                    "body_kinetic": kinetic["body"],
                    "legs_wheels_kinetic": float(sum(v for k, v in kinetic.items() if k != "body")),
                    "potential_gain": pe - pe0,
                }
        closure = max(closure, closure_error(model, data))
        if take is not None:
            body_apex = max(body_apex, float(data.xpos[body][2]) - body_z_take)
        if lift is None and take is not None and not any(contact_forces(model, data).values()):
            lift = float(_com_velocity(model, data)[2])
            com_z_lift = float(data.subtree_com[body][2])
        if lift is not None:
            com_apex = max(com_apex, float(data.subtree_com[body][2]) - com_z_lift)
            lowest_axle = min(float(data.xpos[model.body(f"{s}_wheel").id][2]) for s in SIDES)
            wheel_top = max(wheel_top, lowest_axle - params.pendulum.r)
        if not np.all(np.isfinite(data.qacc)):
            raise StateError("jump: the simulation diverged (non-finite accelerations)")
    if take is None:
        raise StateError(f"jump: alpha never reached {np.degrees(alpha1):.1f} deg in {duration} s")
    return JumpRun(np.array(alphas), np.array(vels), take, float(lift if lift is not None else np.nan),
                   float(body_apex), float(com_apex), float(closure), energy, t_stroke, float(wheel_top))


def _com_velocity(model: mujoco.MjModel, data: mujoco.MjData) -> np.ndarray:
    """Whole robot's CoM velocity (world), m/s, from every body's CoM velocity."""
    total, vel = np.zeros(3), np.zeros(6)
    for i in range(1, model.nbody):
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY, i, vel, 0)  # at the CoM, world frame
        total += model.body_mass[i] * vel[3:]
    return total / model.body_mass[1:].sum()


def ode_stroke(params: BipedParams, tau: float, alpha0: float, alpha1: float):
    """The extension-phase ODE of the jump with the model's numbers."""
    return extension_stroke(params.pendulum.M, tau, params.l1, params.l2, params.l3, alpha0, alpha1,
                            g=params.pendulum.g)
