"""The free-hip model of a wheel-legged robot: a rod leg with its own mass between hip and axle, the body's pitch
free, derived here with SymPy (docs/derivations/free-hip.md).

Both legs move together (the planar, symmetric motion): the wheel rolls without slip on level ground, each leg
is a rigid rod of fixed length from the axle to the hip, and the body hangs on the hips.  Coordinates, all in
the plane of motion (``x`` forward, ``z`` up, angles about the lateral axis ``+y``, positive when the top
moves forward):

- ``theta``: each leg's angle from the vertical, rad (the hip ahead of the axle is positive);
- ``x``: the axle's forward travel, m (the wheels turn by ``x / r``);
- ``phi``: the body's pitch, rad (its CoM ahead of the hip is positive, nose down).

State ``[theta, theta_dot, x, x_dot, phi, phi_dot]``; inputs ``T``, the wheel torque, N m, and ``Tp``, the hip
torque, N m, each the **sum over both sides** (the two wheel motors together; the two hip motors together).
``T`` acts on the wheels and ``-T`` on the legs (positive drives forward); ``Tp`` acts on the legs and ``-Tp``
on the body (positive swings the legs forward relative to the body).  Upright (all zero) is an equilibrium
with zero torques.

The parameters are per part: one wheel, one leg, the whole body (:class:`FreeHipParams`).  Lagrange's
equations ``M(q) qdd + h(q, qd) = Q(u)`` come from the kinetic and potential energies written below; the
accelerations and the linearization about upright are lambdified once per process.
"""

from __future__ import annotations

import functools
from dataclasses import astuple, dataclass, fields

import numpy as np

__all__ = ["FreeHipParams", "free_hip_linearization", "free_hip_accelerations", "free_hip_matrices", "STATE",
           "INPUTS"]

STATE = ("theta", "theta_dot", "x", "x_dot", "phi", "phi_dot")
INPUTS = ("T", "Tp")


@dataclass(frozen=True)
class FreeHipParams:
    """The free-hip model's parameters, SI (read from an MJCF by ``crossdyn.experiments.biped.free_hip``).

    Attributes:
      wheel_radius: m.
      wheel_mass: one wheel, kg.
      wheel_inertia: one wheel about its axle, kg m^2.
      leg_mass: one leg (everything between hip and axle), kg.
      leg_inertia: one leg about its CoM, about the lateral axis, kg m^2.
      axle_to_leg_com: distance from the axle to the leg's CoM along the leg, m.
      leg_com_to_hip: distance from the leg's CoM to the hip along the leg, m (the leg length is the sum).
      body_mass: the whole body above the hips, kg.
      body_inertia: the body about its CoM, about the lateral axis, kg m^2.
      hip_to_body_com: distance from the hip axis to the body's CoM along the body's vertical, m (negative:
        the CoM below the hip).
      gravity: m/s^2.

    The leg fields change with the leg length; each model's parameters hold at one length.
    """

    wheel_radius: float
    wheel_mass: float
    wheel_inertia: float
    leg_mass: float
    leg_inertia: float
    axle_to_leg_com: float
    leg_com_to_hip: float
    body_mass: float
    body_inertia: float
    hip_to_body_com: float
    gravity: float = 9.81

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if not np.isfinite(value):
                raise ValueError(f"FreeHipParams.{f.name}={value!r} must be a finite number")
            if f.name != "hip_to_body_com" and value < 0:
                raise ValueError(f"FreeHipParams.{f.name}={value!r} must not be negative")
        for name in ("wheel_radius", "body_mass"):
            if getattr(self, name) <= 0:
                raise ValueError(f"FreeHipParams.{name} must be positive")
        if self.axle_to_leg_com + self.leg_com_to_hip <= 0:
            raise ValueError("FreeHipParams: the leg length axle_to_leg_com + leg_com_to_hip must be positive")

    @property
    def leg_length(self) -> float:
        """Hip axis to wheel axle, m."""
        return self.axle_to_leg_com + self.leg_com_to_hip


@functools.cache
def _derived():
    """Lagrange's equations, derived once: lambdified ``M(q, p)``, ``h(q, qd, p)``, ``Q(u, p)`` and the
    linearization's ``M0(p)``, ``K(p) = dh/dq`` at upright and ``E(p) = dQ/du``."""
    import sympy as sp  # here, not at the top: SymPy's import costs every command that never derives

    th, x, ph = sp.symbols("theta x phi")
    thd, xd, phd = sp.symbols("theta_dot x_dot phi_dot")
    T, Tp = sp.symbols("T Tp")
    r, mw, Iw, ml, Il, a, b, M, J, c, g = sp.symbols(
        "r m_w I_w m_l I_l a b M J c g")  # FreeHipParams' fields, in order
    q, qd = sp.Matrix([th, x, ph]), sp.Matrix([thd, xd, phd])

    def velocity(point):
        return point.jacobian(q) * qd

    L = a + b
    leg_com = sp.Matrix([x + a * sp.sin(th), r + a * sp.cos(th)])
    hip = sp.Matrix([x + L * sp.sin(th), r + L * sp.cos(th)])
    body_com = hip + c * sp.Matrix([sp.sin(ph), sp.cos(ph)])
    v_leg, v_body = velocity(leg_com), velocity(body_com)
    # Two wheels rolling (translation and spin x/r), two legs, one body.
    kinetic = (2 * (mw * xd**2 + Iw * (xd / r) ** 2) / 2 + 2 * (ml * v_leg.dot(v_leg) + Il * thd**2) / 2
               + (M * v_body.dot(v_body) + J * phd**2) / 2)
    potential = g * (2 * ml * leg_com[1] + M * body_com[1])
    # Virtual work: T turns the wheels against the legs (x/r - theta), Tp the legs against the body (theta - phi).
    Q = sp.Matrix([-T + Tp, T / r, -Tp])
    mass = sp.hessian(kinetic, qd)
    # h = d/dt(dK/dqd) - M qdd - dK/dq + dV/dq: the velocity products and gravity.
    momentum = sp.Matrix([kinetic]).jacobian(qd).T
    h = momentum.jacobian(q) * qd - sp.Matrix([kinetic]).jacobian(q).T + sp.Matrix([potential]).jacobian(q).T
    upright = {th: 0, x: 0, ph: 0, thd: 0, xd: 0, phd: 0}
    params = (r, mw, Iw, ml, Il, a, b, M, J, c, g)
    stiffness = h.jacobian(q).subs(upright)
    inputs = Q.jacobian(sp.Matrix([T, Tp]))
    lam = functools.partial(sp.lambdify, modules="numpy", cse=True)
    return (lam((q, params), mass), lam((q, qd, params), h), lam(((T, Tp), params), Q),
            lam((params,), mass.subs(upright)), lam((params,), stiffness), lam((params,), inputs))


def _p(params: FreeHipParams) -> tuple[float, ...]:
    if not isinstance(params, FreeHipParams):
        raise TypeError(f"params must be FreeHipParams, got {type(params).__name__}")
    return astuple(params)


def free_hip_matrices(params: FreeHipParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The linearization's ingredients at upright, in the coordinates ``(theta, x, phi)``: mass matrix ``M (3, 3)``
    (kg m^2, kg m, kg), stiffness ``K (3, 3) = d h / d q`` (gravity; N m/rad, N/m ...) and input map ``E (3, 2)``
    (generalized force per unit ``(T, Tp)``), so that ``M qdd + K q = E u``."""
    p = _p(params)
    _, _, _, mass0, stiffness, inputs = _derived()
    return (np.array(mass0(p), dtype=float), np.array(stiffness(p), dtype=float), np.array(inputs(p), dtype=float))


def free_hip_linearization(params: FreeHipParams) -> tuple[np.ndarray, np.ndarray]:
    """``(A (6, 6), B (6, 2))`` of the free-hip model about upright at rest: ``d/dt x = A x + B u``.

    State ``x = [theta, theta_dot, x, x_dot, phi, phi_dot]`` (rad, rad/s, m, m/s, rad, rad/s), input
    ``u = [T, Tp]`` (N m, sums over both sides); signs as the module docstring states.
    """
    M, K, E = free_hip_matrices(params)
    acc_q = np.linalg.solve(M, -K)  # (3, 3): d qdd / d q
    acc_u = np.linalg.solve(M, E)  # (3, 2)
    A, B = np.zeros((6, 6)), np.zeros((6, 2))
    pos, vel = [0, 2, 4], [1, 3, 5]
    A[pos, vel] = 1.0
    A[np.ix_(vel, pos)] = acc_q
    B[vel] = acc_u
    return A, B


def free_hip_accelerations(params: FreeHipParams, state, T, Tp) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(theta_dd, x_dd, phi_dd)`` (rad/s^2, m/s^2, rad/s^2) of the nonlinear model.

    Args:
      params: the model.
      state: ``[theta, theta_dot, x, x_dot, phi, phi_dot]``, ``(..., 6)``.
      T, Tp: wheel and hip torques (sums over both sides), N m, broadcast with ``state[..., 0]``.

    Returns:
      Three arrays shaped like the broadcast of ``state[..., 0]``, ``T`` and ``Tp``.
    """
    p = _p(params)
    state = np.asarray(state, dtype=float)
    if state.shape[-1:] != (6,):
        raise ValueError(f"state must end in 6 entries [theta, theta_dot, x, x_dot, phi, phi_dot], got {state.shape}")
    mass, bias, forces, *_ = _derived()
    shape = np.broadcast_shapes(state.shape[:-1], np.shape(T), np.shape(Tp))
    s = np.broadcast_to(state, shape + (6,)).reshape(-1, 6)
    u = np.stack([np.broadcast_to(np.asarray(T, dtype=float), shape).ravel(),
                  np.broadcast_to(np.asarray(Tp, dtype=float), shape).ravel()], axis=-1)
    out = np.empty((s.shape[0], 3))
    for k in range(s.shape[0]):
        q, qd = s[k, [0, 2, 4]], s[k, [1, 3, 5]]
        rhs = np.ravel(forces(u[k], p)).astype(float) - np.ravel(bias(q, qd, p)).astype(float)
        out[k] = np.linalg.solve(np.array(mass(q, p), dtype=float), rhs)
    return tuple(out[:, i].reshape(shape) for i in range(3))  # type: ignore[return-value]
