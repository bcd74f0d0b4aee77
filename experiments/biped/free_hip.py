"""The free-hip model on the two bipeds: its parameters read from either MJCF, its reduction, its operating points.

``mjcf/wheel_legged_biped_rod.xml`` is the robot on which the free-hip derivation
(:mod:`crossdyn.analytic.biped.free_hip`) must be exact: each leg one rod whose length a slide joint sets.
``mjcf/wheel_legged_biped.xml`` has five-bar legs; for it :func:`free_hip_params` gives the *equivalent rod*,
the five-bar links' mass, CoM and inertia at the leg length, and what the rod assumption then misses is
measured, not assumed.

The free-hip coordinates on either robot, read from MuJoCo's kinematics (both legs averaged):

- ``theta``: the leg's angle from the vertical, the line from the axle to the hip (the rod's hinge, or the
  midpoint of a five-bar's two hip motors), positive with the hip ahead of the axle;
- ``x``: the axle's forward position, m;
- ``phi``: the body's pitch, positive nose down (its top ahead).

Held: each leg's length, hip to axle.  Inputs: ``T``, both wheel motors together (each half), and ``Tp``,
both legs' hip torque together, on the rod's hinges (each half), or on a five-bar's motors through its
Jacobian at the pose: ``tau = (Tp / 2) d(theta_rel) / d(alpha)`` per motor, the torque whose virtual work is
``Tp/2`` times the leg's turn relative to the body.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from scipy.optimize import brentq

from ...analytic.biped import five_bar
from ...analytic.biped.free_hip import FreeHipParams
from ..core.errors import ModelError, ParameterError
from ..core.models import body_inertia
from ..core.reduction import Reduction
from .model import STAND_SINK, biped_params, stand_pose

__all__ = ["ROD", "FIVE_BAR", "SIDES", "leg_kind", "free_hip_params", "free_hip_reduction", "leg_pose",
           "LegLength", "coordinates"]

ROD = "wheel_legged_biped_rod"
FIVE_BAR = "wheel_legged_biped"
SIDES = ("left", "right")


def _has_joint(model: mujoco.MjModel, name: str) -> bool:
    return mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name) >= 0


def leg_kind(model: mujoco.MjModel) -> str:
    """``"rod"`` (a slide joint per leg, ``left_leg_length``) or ``"five-bar"`` (``left_front_hip``).

    Raises:
      ModelError: neither biped.
    """
    if _has_joint(model, "left_leg_length"):
        return "rod"
    if _has_joint(model, "left_front_hip"):
        return "five-bar"
    raise ModelError(f"not a wheel-legged biped with rod legs (mjcf/{ROD}.xml) or five-bar legs (mjcf/{FIVE_BAR}.xml): "
                     "no joint 'left_leg_length' or 'left_front_hip'")


def _hip_joints(model: mujoco.MjModel, side: str) -> list[int]:
    if leg_kind(model) == "rod":
        return [model.joint(f"{side}_hip").id]
    return [model.joint(f"{side}_{end}_hip").id for end in ("front", "rear")]


def _leg_bodies(model: mujoco.MjModel, side: str) -> list[int]:
    if leg_kind(model) == "rod":
        return [model.body(f"{side}_leg").id, model.body(f"{side}_shank").id]
    return [model.body(f"{side}_{end}_{part}").id for end in ("front", "rear") for part in ("thigh", "shank")]


class _Kinematics:
    """Hips, axles and the body's frame of a pose, from MuJoCo's kinematics on a scratch ``MjData``."""

    def __init__(self, model: mujoco.MjModel):
        self.model, self.data = model, mujoco.MjData(model)
        self.hips = [_hip_joints(model, side) for side in SIDES]
        self.axles = [model.site(f"{side}_axle").id for side in SIDES]
        self.body = model.body("body").id

    def __call__(self, qpos: np.ndarray) -> _Kinematics:
        self.data.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, self.data)
        return self

    def hip(self, side: int) -> np.ndarray:
        return self.data.xanchor[self.hips[side]].mean(axis=0)

    def axle(self, side: int) -> np.ndarray:
        return self.data.site_xpos[self.axles[side]]

    def theta(self) -> float:
        return float(np.mean([np.arctan2(*(self.hip(s) - self.axle(s))[[0, 2]]) for s in range(2)]))

    def x(self) -> float:
        return float(np.mean([self.axle(s)[0] for s in range(2)]))

    def phi(self) -> float:
        forward = self.data.xmat[self.body].reshape(3, 3)[:, 0]
        return float(np.arctan2(-forward[2], forward[0]))

    def length(self, side: int) -> float:
        return float(np.linalg.norm(self.hip(side) - self.axle(side)))


def coordinates(model: mujoco.MjModel) -> tuple[dict, dict]:
    """The free-hip coordinates ``{"theta", "x", "phi"}`` and the held leg lengths ``{"left_leg", "right_leg"}``
    as functions of ``qpos`` (rad, m), what :meth:`Reduction.from_coordinates` takes."""
    kin = _Kinematics(model)
    states = {"theta": lambda q: kin(q).theta(), "x": lambda q: kin(q).x(), "phi": lambda q: kin(q).phi()}
    held = {f"{side}_leg": (lambda q, s=s: kin(q).length(s)) for s, side in enumerate(SIDES)}
    return states, held


@dataclass(frozen=True)
class LegLength:
    """A leg length's pose on a biped: ``alpha`` the five-bar's hip angle (None for the rod), ``qpos`` upright."""

    length: float
    alpha: float | None
    qpos: np.ndarray


def leg_pose(model: mujoco.MjModel, leg_length: float) -> LegLength:
    """The biped upright at rest with both legs ``leg_length`` (hip to axle, m) long, wheels touching the floor
    (``STAND_SINK`` deep).

    Raises:
      ParameterError: a length the legs cannot take (the slide's range, or the five-bar's reach).
    """
    if not (np.isfinite(leg_length) and leg_length > 0):
        raise ParameterError(f"leg_length must be a positive length (m), got {leg_length!r}")
    if leg_kind(model) == "five-bar":
        p = biped_params(model)
        low, high = five_bar.REACHABLE
        y = [float(five_bar.height(a, p.l1, p.l2, p.l3)) for a in (low, high)]
        if not min(y) < leg_length < max(y):
            raise ParameterError(f"leg_length {leg_length:g} m: the five-bar legs reach {min(y):.4f} to {max(y):.4f} m")
        alpha = brentq(lambda a: five_bar.height(a, p.l1, p.l2, p.l3) - leg_length, low, high, xtol=1e-15)
        return LegLength(float(leg_length), float(alpha), stand_pose(model, alpha, p))
    qpos = model.qpos0.copy()
    for side in SIDES:
        joint = model.joint(f"{side}_leg_length")
        low, high = joint.range
        if not low <= leg_length <= high:
            raise ParameterError(f"leg_length {leg_length:g} m is outside joint {joint.name!r}'s range "
                                 f"[{low:g}, {high:g}] m")
        qpos[joint.qposadr[0]] = leg_length
    kin = _Kinematics(model)(qpos)
    r = float(model.geom("left_wheel_contact").size[0])
    qpos[2] += r - STAND_SINK - kin.axle(0)[2]  # the wheel's lowest point STAND_SINK below the floor
    return LegLength(float(leg_length), None, qpos)


def free_hip_params(model: mujoco.MjModel, leg_length: float) -> FreeHipParams:
    """The free-hip model's parameters of either biped at ``leg_length`` (hip to axle, m), read from the model.

    The leg is everything between hip and axle on one side: the rod's two parts, or the five-bar's thighs and
    shanks, as one rigid body in the pose (the *equivalent rod*): its mass, its CoM's distances along the
    hip-axle line and its pitch inertia about the CoM.

    Raises:
      ModelError: not one of the bipeds, or a leg's CoM off its hip-axle line, or the body's CoM off its
        vertical through the hips (the free-hip model has neither).
      ParameterError: a length the legs cannot take.
    """
    pose = leg_pose(model, leg_length)
    data = mujoco.MjData(model)
    data.qpos[:] = pose.qpos
    mujoco.mj_kinematics(model, data)
    mujoco.mj_comPos(model, data)
    kin = _Kinematics(model)(pose.qpos)
    ids = _leg_bodies(model, "left")
    mass = model.body_mass[ids]
    com = (mass[:, None] * data.xipos[ids]).sum(axis=0) / mass.sum()
    inertia = sum(body_inertia(model, i, data) + m_i * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
                  for i, m_i, d in ((i, m_i, data.xipos[i] - com) for i, m_i in zip(ids, mass, strict=True)))
    axle, hip = kin.axle(0), kin.hip(0)
    along = (hip - axle) / np.linalg.norm(hip - axle)
    off = com - axle - np.dot(com - axle, along) * along
    if np.linalg.norm(off) > 1e-9:
        raise ModelError(f"the left leg's CoM is {np.linalg.norm(off):.3g} m off its hip-axle line: the free-hip "
                         "model's rod has its CoM on that line")
    body = model.body("body").id
    up = data.xmat[body].reshape(3, 3)[:, 2]
    hips_mid = 0.5 * (kin.hip(0) + kin.hip(1))
    body_off = data.xipos[body] - hips_mid
    if np.linalg.norm(body_off - np.dot(body_off, up) * up) > 1e-9:
        raise ModelError("the body's CoM is off its vertical through the hips: the free-hip model has it on it")
    wheel = model.body("left_wheel").id
    return FreeHipParams(
        wheel_radius=float(model.geom("left_wheel_contact").size[0]), wheel_mass=float(model.body_mass[wheel]),
        wheel_inertia=float(body_inertia(model, wheel)[1, 1]), leg_mass=float(mass.sum()),
        leg_inertia=float(inertia[1, 1]), axle_to_leg_com=float(np.dot(com - axle, along)),
        leg_com_to_hip=float(np.dot(hip - com, along)), body_mass=float(model.body_mass[body]),
        body_inertia=float(body_inertia(model, body)[1, 1]), hip_to_body_com=float(np.dot(body_off, up)),
        gravity=float(-model.opt.gravity[2]))


def _inputs(model: mujoco.MjModel, pose: LegLength) -> dict:
    """``T`` and ``Tp`` as weights on the actuators at the pose (see the module docstring)."""
    wheels = {f"{side}_wheel": 0.5 for side in SIDES}
    if pose.alpha is None:
        return {"T": wheels, "Tp": {f"{side}_hip": 0.5 for side in SIDES}}
    p = biped_params(model)
    A = five_bar.axle_position(pose.alpha, pose.alpha, p.l1, p.l2, p.l3)
    J = five_bar.axle_jacobian(pose.alpha, pose.alpha, p.l1, p.l2, p.l3)
    # theta_rel = atan2(-A_x, -A_z): the hip-to-axle line's angle from the body's vertical.
    d_theta = (A[1] * J[0] - A[0] * J[1]) / (A[0] ** 2 + A[1] ** 2)
    hips = {f"{side}_{end}_hip": 0.5 * float(d_theta[k]) for side in SIDES for k, end in enumerate(("front", "rear"))}
    return {"T": wheels, "Tp": hips}


def free_hip_reduction(model: mujoco.MjModel, leg_length: float) -> Reduction:
    """The free-hip model's reduction of either biped at ``leg_length`` (hip to axle, m), standing upright at rest.

    State ``[theta, theta_dot, x, x_dot, phi, phi_dot]``, inputs ``T`` and ``Tp`` (module docstring); both leg
    lengths held; the wheel contacts kept (rolling), the five-bar's loop closures kept.  Its operating point
    (``reduction.declared.qpos``) is settled on the soft contacts, so the robot is at rest there.

    Raises:
      ModelError: not one of the bipeds; ParameterError: a length the legs cannot take.
    """
    pose = leg_pose(model, leg_length)
    states, held = coordinates(model)
    return Reduction.from_coordinates(model, states=states, inputs=_inputs(model, pose), hold=held, qpos=pose.qpos,
                                      qvel=np.zeros(model.nv), ctrl=np.zeros(model.nu), settle=True)
