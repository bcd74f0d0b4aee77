"""One rigid body: Newton-Euler equations, three integrators, conserved quantities, penalty ground contact.

The CoM ``c`` moves as ``m c'' = f``; the rotation obeys Euler's equation about the CoM,
``I w' + w x I w = tau`` with the world-frame inertia ``I = R Ibar R^T`` (docs/derivations/rigid-box.md).
Conventions (SI): ``R`` is body-to-world, the body frame is the CoM frame of ``Ibar``; ``omega`` is in the
WORLD frame (the body-frame one is ``R^T omega``); a wrench ``(f, tau)`` is the total force and the torque
about the CoM, both world; quaternions are ``[w, x, y, z]`` (MuJoCo's order).

The integrators (:func:`lecture_euler`, first order; :func:`rk4`; :func:`reference`, DOP853 at 1e-13)
return a :class:`Trajectory` on a fixed grid.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .rotation import matrix_to_quat, quat_to_matrix, skew

__all__ = ["RigidBodyParams", "BodyState", "Trajectory", "Wrench", "rodrigues", "wrench_about_com", "point_force",
           "lecture_euler", "rk4", "reference", "angular_momentum", "kinetic_energy", "PenaltyGround", "box_corners",
           "penalty_wrench", "simulate_penalty"]

# Relative tolerance for "symmetric" and "orthonormal" input checks: values typed
# or computed in double precision are far inside it, a wrong matrix far outside.
_CHECK_TOL = 1e-9

# A wrench function: (t, c, v, R, omega_world) -> (f, tau), world frame, about the CoM.
Wrench = Callable[[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class RigidBodyParams:
    """Mass properties of one rigid body.

    Attributes:
      mass: kg, > 0.
      inertia: about the CoM in the body frame, ``(3, 3)`` (or 3 principal moments), kg m^2; symmetric
        positive definite, each principal moment at most the sum of the other two.

    Raises:
      ValueError: a mass or inertia that is not that (the message gives the values).
    """

    mass: float
    inertia: np.ndarray

    def __post_init__(self):
        mass = float(self.mass)
        if not np.isfinite(mass) or mass <= 0:
            raise ValueError(f"rigid body mass must be a positive finite number of kg, got {self.mass!r}")
        inertia = np.array(self.inertia, dtype=float)
        if inertia.shape == (3,):
            inertia = np.diag(inertia)
        if inertia.shape != (3, 3):
            raise ValueError(f"inertia must be a (3, 3) tensor or 3 principal moments, got shape {inertia.shape}")
        if not np.all(np.isfinite(inertia)):
            raise ValueError(f"inertia has non-finite entries:\n{inertia}")
        scale = np.abs(inertia).max()
        if np.abs(inertia - inertia.T).max() > _CHECK_TOL * max(scale, 1e-300):
            raise ValueError(f"inertia must be symmetric, got\n{inertia}")
        moments = np.linalg.eigvalsh(inertia)
        if moments[0] <= 0:
            raise ValueError(
                f"inertia must be positive definite; its principal moments are {moments.tolist()} kg m^2"
            )
        if moments[2] > (moments[0] + moments[1]) * (1 + _CHECK_TOL):
            raise ValueError(
                f"inertia is not physically realizable: principal moment {moments[2]:g} exceeds the sum "
                f"of the other two ({moments[0]:g} + {moments[1]:g}) kg m^2"
            )
        inertia.setflags(write=False)
        object.__setattr__(self, "mass", mass)
        object.__setattr__(self, "inertia", inertia)

    @property
    def inertia_inv(self) -> np.ndarray:
        """``Ibar^-1``, ``(3, 3)``, 1/(kg m^2)."""
        return np.linalg.inv(self.inertia)


@dataclass(frozen=True)
class BodyState:
    """The state of a rigid body: CoM position ``c`` (m) and velocity ``v`` (m/s), world, ``(3,)``;
    body-to-world rotation ``R``, ``(3, 3)``; world angular velocity ``omega``, ``(3,)``, rad/s.

    Raises:
      ValueError: wrong shapes, non-finite entries, or ``R`` not a rotation.
    """

    c: np.ndarray
    v: np.ndarray
    R: np.ndarray
    omega: np.ndarray

    def __post_init__(self):
        for name, shape in (("c", (3,)), ("v", (3,)), ("R", (3, 3)), ("omega", (3,))):
            a = np.array(getattr(self, name), dtype=float)
            if a.shape != shape:
                raise ValueError(f"state {name} must have shape {shape}, got {a.shape}")
            if not np.all(np.isfinite(a)):
                raise ValueError(f"state {name} has non-finite entries: {a.tolist()}")
            object.__setattr__(self, name, a)
        R = self.R
        if np.abs(R.T @ R - np.eye(3)).max() > 1e-6 or np.linalg.det(R) < 0:
            raise ValueError(f"state R must be a rotation matrix (orthonormal, det +1), got\n{R}")

    @classmethod
    def at_rest(cls, c=(0.0, 0.0, 0.0), R=None, omega=(0.0, 0.0, 0.0), v=(0.0, 0.0, 0.0)) -> BodyState:
        """A state with the given fields (identity rotation and zeros by default)."""
        return cls(np.asarray(c, float), np.asarray(v, float), np.eye(3) if R is None else np.asarray(R, float),
                   np.asarray(omega, float))


@dataclass(frozen=True)
class Trajectory:
    """A sampled rigid-body motion: times ``t`` ``(N,)`` s and :class:`BodyState`'s fields stacked, ``(N, ...)``."""

    t: np.ndarray
    c: np.ndarray
    v: np.ndarray
    R: np.ndarray
    omega: np.ndarray

    @property
    def omega_body(self) -> np.ndarray:
        """Angular velocity in the body frame, ``R^T omega``, ``(N, 3)``, rad/s."""
        return np.einsum("nji,nj->ni", self.R, self.omega)

    @property
    def quat(self) -> np.ndarray:
        """Orientation quaternions ``[w, x, y, z]`` with ``w >= 0``, ``(N, 4)``."""
        return np.array([matrix_to_quat(r) for r in self.R])


def rodrigues(omega, dt: float) -> np.ndarray:
    """Rotation by ``|omega| dt`` about ``omega`` (``omega`` ``(3,)`` rad/s, ``dt`` s): Rodrigues' formula,
    ``E + a^ sin(|omega| dt) + a^2 (1 - cos(|omega| dt))`` with ``a = omega/|omega|``."""
    omega = np.asarray(omega, dtype=float)
    speed = float(np.linalg.norm(omega))
    if speed == 0.0:
        return np.eye(3)
    a = skew(omega / speed)
    angle = speed * dt
    return np.eye(3) + a * np.sin(angle) + a @ a * (1.0 - np.cos(angle))


def _finite_vector(value, name: str) -> np.ndarray:
    a = np.asarray(value, dtype=float)
    if a.shape != (3,):
        raise ValueError(f"{name} must be a 3-vector, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got {a.tolist()}")
    return a


def wrench_about_com(force, point, com) -> tuple[np.ndarray, np.ndarray]:
    """A force (N) at a point (m) as a wrench about the CoM ``com`` (m): ``(f, (p - c) x f)``, all world ``(3,)``.

    Raises:
      ValueError: any input is not a finite 3-vector (e.g. a NaN force).
    """
    f = _finite_vector(force, "force")
    p = _finite_vector(point, "application point")
    c = _finite_vector(com, "CoM position")
    return f, np.cross(p - c, f)


def point_force(force, point_body) -> Wrench:
    """A constant world-frame force at a point fixed in the body.

    Args:
      force: ``(3,)``, N, fixed in the world frame.
      point_body: the application point in the CoM frame, ``(3,)``, m.

    Returns:
      A wrench function; the point moves with the body (``p = c + R point_body``), the force direction does not.

    Raises:
      ValueError: a non-finite force or point.
    """
    f = _finite_vector(force, "force")
    r = _finite_vector(point_body, "application point (body frame)")

    def wrench(t, c, v, R, omega):
        return f, np.cross(R @ r, f)

    return wrench


def _no_wrench(t, c, v, R, omega):
    return np.zeros(3), np.zeros(3)


def _check_step(dt: float, steps: int) -> None:
    if not (np.isfinite(dt) and dt > 0):
        raise ValueError(f"time step must be positive and finite, got {dt!r} s")
    if int(steps) != steps or steps < 0:
        raise ValueError(f"number of steps must be a non-negative integer, got {steps!r}")


def lecture_euler(params: RigidBodyParams, state: BodyState, dt: float, steps: int,
               wrench: Wrench | None = None) -> Trajectory:
    """The first-order Euler step as the lecture orders it: accelerations, then ``cdot += dt cddot``,
    ``omega += dt omegadot``, ``c += dt cdot`` and ``R <- rodrigues(omega, dt) R`` with the updated velocities.

    Args:
      params: mass properties.
      state: initial state.
      dt: time step, s.
      steps: number of steps.
      wrench: evaluated once per step at its start; ``None`` for a free body.

    Returns:
      The trajectory at ``t = 0, dt, ..., steps dt``.
    """
    _check_step(dt, steps)
    wrench = wrench or _no_wrench
    m, ibar, ibar_inv = params.mass, params.inertia, params.inertia_inv
    c, v, R, w = state.c.copy(), state.v.copy(), state.R.copy(), state.omega.copy()
    out = _allocate(steps)
    _store(out, 0, c, v, R, w)
    for k in range(steps):
        f, tau = wrench(k * dt, c, v, R, w)
        inertia = R @ ibar @ R.T
        inertia_inv = R @ ibar_inv @ R.T
        cddot = f / m
        wdot = inertia_inv @ (tau - np.cross(w, inertia @ w))
        v = v + dt * cddot
        w = w + dt * wdot
        c = c + dt * v
        R = rodrigues(w, dt) @ R
        _store(out, k + 1, c, v, R, w)
    return _trajectory(out, dt, steps)


def _quat_rate(q, w_body):
    """``qdot = 1/2 q (x) [0, w_body]`` for ``q = [w, x, y, z]``."""
    qw, qx, qy, qz = q
    wx, wy, wz = w_body
    return 0.5 * np.array(
        [
            -qx * wx - qy * wy - qz * wz,
            qw * wx + qy * wz - qz * wy,
            qw * wy - qx * wz + qz * wx,
            qw * wz + qx * wy - qy * wx,
        ]
    )


def _rhs(params: RigidBodyParams, wrench: Wrench):
    """Derivative of ``y = [c, v, q, omega_body]`` (13,): Newton and Euler in the body frame."""
    m, ibar, ibar_inv = params.mass, params.inertia, params.inertia_inv

    def f(t, y):
        c, v, q, wb = y[0:3], y[3:6], y[6:10], y[10:13]
        R = quat_to_matrix(q)
        force, tau = wrench(t, c, v, R, R @ wb)
        wb_dot = ibar_inv @ (R.T @ tau - np.cross(wb, ibar @ wb))
        return np.concatenate((v, force / m, _quat_rate(q, wb), wb_dot))

    return f


def _pack(state: BodyState) -> np.ndarray:
    return np.concatenate((state.c, state.v, matrix_to_quat(state.R), state.R.T @ state.omega))


def _unpack_into(out: dict, k: int, y: np.ndarray) -> None:
    R = quat_to_matrix(y[6:10])
    _store(out, k, y[0:3], y[3:6], R, R @ y[10:13])


def _rk4_step(f, t: float, y: np.ndarray, dt: float) -> np.ndarray:
    """One classical RK4 step of ``y' = f(t, y)``, then ``|q| = 1`` restored."""
    k1 = f(t, y)
    k2 = f(t + dt / 2, y + dt / 2 * k1)
    k3 = f(t + dt / 2, y + dt / 2 * k2)
    k4 = f(t + dt, y + dt * k3)
    y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    # RK4 does not keep |q| = 1 (an O(dt^5) drift per step); project back.
    y[6:10] /= np.linalg.norm(y[6:10])
    return y


def rk4(params: RigidBodyParams, state: BodyState, dt: float, steps: int,
        wrench: Wrench | None = None) -> Trajectory:
    """Classical RK4 on ``(c, v, q, omega_body)``, quaternion renormalized each step; the wrench is
    evaluated at every stage, so a force at a moving body point follows the point.  Args as :func:`lecture_euler`.
    """
    _check_step(dt, steps)
    f = _rhs(params, wrench or _no_wrench)
    y = _pack(state)
    out = _allocate(steps)
    _unpack_into(out, 0, y)
    for k in range(steps):
        y = _rk4_step(f, k * dt, y, dt)
        _unpack_into(out, k + 1, y)
    return _trajectory(out, dt, steps)


def reference(params: RigidBodyParams, state: BodyState, t_eval, wrench: Wrench | None = None,
              rtol: float = 1e-13, atol: float = 1e-13) -> Trajectory:
    """High-accuracy solution: ``solve_ivp`` (DOP853) on the same equations as :func:`rk4`.

    Args:
      params, state, wrench: as :func:`lecture_euler`.
      t_eval: increasing output times starting at 0, ``(N,)``, s.
      rtol, atol: SciPy tolerances; 1e-13 keeps the reference's own error an order below RK4's at dt = 1 ms.

    Raises:
      ValueError: bad ``t_eval``; RuntimeError: the solver failed.
    """
    t_eval = np.asarray(t_eval, dtype=float)
    if t_eval.ndim != 1 or t_eval.size < 2 or t_eval[0] != 0 or np.any(np.diff(t_eval) <= 0):
        raise ValueError("t_eval must be an increasing 1-D array of times starting at 0 s")
    from scipy.integrate import solve_ivp  # here: importing SciPy's integrate is slow

    sol = solve_ivp(_rhs(params, wrench or _no_wrench), (0.0, float(t_eval[-1])), _pack(state),
                    method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"reference integration failed: {sol.message}")
    out = _allocate(t_eval.size - 1)
    for k in range(t_eval.size):
        _unpack_into(out, k, sol.y[:, k])
    return Trajectory(t_eval.copy(), out["c"], out["v"], out["R"], out["omega"])


def _allocate(steps: int) -> dict:
    n = steps + 1
    return {"c": np.zeros((n, 3)), "v": np.zeros((n, 3)), "R": np.zeros((n, 3, 3)), "omega": np.zeros((n, 3))}


def _store(out: dict, k: int, c, v, R, w) -> None:
    out["c"][k], out["v"][k], out["R"][k], out["omega"][k] = c, v, R, w


def _trajectory(out: dict, dt: float, steps: int) -> Trajectory:
    return Trajectory(np.arange(steps + 1) * dt, out["c"], out["v"], out["R"], out["omega"])


def angular_momentum(params: RigidBodyParams, R, omega) -> np.ndarray:
    """World angular momentum about the CoM, ``L = R Ibar R^T omega``, ``(..., 3)`` kg m^2/s, from rotations
    ``(..., 3, 3)`` and world angular velocities ``(..., 3)`` rad/s."""
    R, omega = np.asarray(R, float), np.asarray(omega, float)
    wb = np.einsum("...ji,...j->...i", R, omega)
    return np.einsum("...ij,...j->...i", R, wb @ params.inertia)


def kinetic_energy(params: RigidBodyParams, v, R, omega) -> np.ndarray:
    """Kinetic energy ``1/2 m |v|^2 + 1/2 omega^T I omega``, ``(...)``, J."""
    v, R, omega = np.asarray(v, float), np.asarray(R, float), np.asarray(omega, float)
    wb = np.einsum("...ji,...j->...i", R, omega)
    rot = 0.5 * np.einsum("...i,ij,...j->...", wb, params.inertia, wb)
    return 0.5 * params.mass * np.einsum("...i,...i->...", v, v) + rot


@dataclass(frozen=True)
class PenaltyGround:
    """The penalty ground of the lecture at ``z = height`` (m) (docs/derivations/rigid-box.md).

    A point below the ground gets ``Fn = max(0, -K (z - height) - D zdot)`` and a tangential spring-damper
    ``Ft = -Kt (p_xy - anchor) - Dt pdot_xy`` from where it touched down.  The lecture gives no friction
    limit, but a spring that never lets go could not slide, so ``Ft`` is capped at ``mu Fn`` (``mu = inf``:
    no limit) and the anchor dragged along.  ``K``, ``Kt`` in N/m; ``D``, ``Dt`` in N s/m.
    """

    K: float
    D: float
    Kt: float
    Dt: float
    mu: float = np.inf
    height: float = 0.0

    def __post_init__(self):
        for name in ("K", "D", "Kt", "Dt", "mu"):
            value = getattr(self, name)
            if not value >= 0:
                raise ValueError(f"penalty ground {name} must be >= 0, got {value!r}")
        if not np.isfinite(self.height):
            raise ValueError(f"ground height must be finite, got {self.height!r}")


def box_corners(half_sizes) -> np.ndarray:
    """The 8 corners of a box centred on its CoM, body frame, ``(8, 3)``, m."""
    h = _finite_vector(half_sizes, "box half sizes")
    if np.any(h <= 0):
        raise ValueError(f"box half sizes must be positive, got {h.tolist()}")
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)
    return signs * h


def penalty_wrench(ground: PenaltyGround, points_body: np.ndarray, anchors: np.ndarray,
                   c, v, R, omega) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Contact wrench of the penalty ground on the body's contact points.

    Args:
      ground: the penalty parameters.
      points_body: contact points in the CoM frame, ``(P, 3)``, m.
      anchors: tangential anchor of each point, world ``(P, 2)``, m; NaN rows for
        points not yet anchored (the current position is used).
      c, v, R, omega: body state (world frame).

    Returns:
      ``(f, tau, forces, active)``: total force ``(3,)`` N and torque about the CoM
      ``(3,)`` N m; per-point forces ``(P, 3)``; which points touch ``(P,)``.
    """
    arm = points_body @ R.T                       # (P, 3) CoM -> point, world
    pos = c + arm
    vel = v + np.cross(omega, arm)
    depth = pos[:, 2] - ground.height
    active = depth < 0
    forces = np.zeros_like(pos)
    fn = np.where(active, np.maximum(0.0, -ground.K * depth - ground.D * vel[:, 2]), 0.0)
    anchor = np.where(np.isnan(anchors), pos[:, :2], anchors)
    ft = -ground.Kt * (pos[:, :2] - anchor) - ground.Dt * vel[:, :2]
    size = np.linalg.norm(ft, axis=1)
    limit = ground.mu * fn
    scale = np.where(size > limit, limit / np.maximum(size, 1e-300), 1.0)
    forces[:, 2] = fn
    forces[:, :2] = np.where(active[:, None], ft * scale[:, None], 0.0)
    return forces.sum(axis=0), np.cross(arm, forces).sum(axis=0), forces, active


def simulate_penalty(params: RigidBodyParams, ground: PenaltyGround, points_body, state: BodyState,
                     dt: float, steps: int, gravity=(0.0, 0.0, -9.81)) -> tuple[Trajectory, np.ndarray]:
    """Integrate the body on the penalty ground with RK4.

    The tangential anchors are a memory the ODE does not carry: frozen over each step, updated after it.

    Args:
      params, state: as :func:`lecture_euler`.
      ground: penalty parameters.
      points_body: contact points in the CoM frame, ``(P, 3)``, m (the 8 corners).
      dt, steps: fixed step, s, and number of steps.
      gravity: ``(3,)``, m/s^2.

    Returns:
      ``(trajectory, normal_force)``: the motion and the total normal force per
      sample ``(steps + 1,)``, N.
    """
    _check_step(dt, steps)
    points_body = np.asarray(points_body, dtype=float)
    g = _finite_vector(gravity, "gravity")
    anchors = np.full((points_body.shape[0], 2), np.nan)

    def wrench(t, c, v, R, omega):
        f, tau, _, _ = penalty_wrench(ground, points_body, anchors, c, v, R, omega)
        return f + params.mass * g, tau

    f = _rhs(params, wrench)
    y = _pack(state)
    out = _allocate(steps)
    normal = np.zeros(steps + 1)
    _unpack_into(out, 0, y)
    for k in range(steps + 1):
        c, v, R, omega = out["c"][k], out["v"][k], out["R"][k], out["omega"][k]
        _, _, forces, active = penalty_wrench(ground, points_body, anchors, c, v, R, omega)
        normal[k] = forces[:, 2].sum()
        _update_anchors(ground, points_body, anchors, forces, active, c, v, R, omega)
        if k == steps:
            break
        y = _rk4_step(f, k * dt, y, dt)
        _unpack_into(out, k + 1, y)
    return _trajectory(out, dt, steps), normal


def _update_anchors(ground: PenaltyGround, points_body: np.ndarray, anchors: np.ndarray, forces: np.ndarray,
                    active: np.ndarray, c, v, R, omega) -> None:
    """Move the anchors ``(P, 2)`` (m, in place): set at touch-down, dragged to the friction cap, cleared
    at lift-off; ``forces`` and ``active`` are :func:`penalty_wrench`'s at the state ``c, v, R, omega``."""
    pos = c + points_body @ R.T
    vel = v + np.cross(omega, points_body @ R.T)
    for i in range(points_body.shape[0]):
        if not active[i]:
            anchors[i] = np.nan
            continue
        if np.isnan(anchors[i, 0]):
            anchors[i] = pos[i, :2]
        elif ground.Kt > 0:
            fn = forces[i, 2]
            spring = -ground.Kt * (pos[i, :2] - anchors[i]) - ground.Dt * vel[i, :2]
            if np.linalg.norm(spring) > ground.mu * fn:
                # Place the anchor so that the full (spring + damper) force equals the cap.
                cap = forces[i, :2]
                anchors[i] = pos[i, :2] + (cap + ground.Dt * vel[i, :2]) / ground.Kt
