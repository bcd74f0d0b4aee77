"""The wheel-legged biped in MuJoCo: loading, variants, poses and parameters.

``mjcf/wheel_legged_biped.xml`` is the only home of the robot's numbers.  This module
reads them back from the compiled model (:func:`biped_params`), builds the "assumption
ladder" of variants from the same file with ``mujoco.MjSpec`` (:func:`build`), and computes
closed, standing and balanced poses (:func:`stand_pose`, :func:`balance_pose`).

Variants (keyword arguments of :func:`build`):

- ``legs="realistic"`` the file as written; ``legs="massless"`` leg links of ``LEG_MASS_IDEAL``;
- ``rigid_alpha=a`` weld both legs at ``alpha = a`` (joints and loop closures removed): exactly
  rigid legs with no soft constraint, whose regularization light links would make large;
- ``com_offset=(dx, dz)`` move the body's CoM off the hip line, m;
- ``fixed_body=True`` weld the body to the world, contacts off (a leg test rig);
- ``gravity=False`` switch gravity off; ``ground=Ground(...)`` another floor;
- ``payload=(kg, x)`` a mass fixed to the body ``x`` m ahead of the hip line.

``build(mjcf=PATH)`` reads the user's own robot, which must meet :func:`contract_problems`'
contract (checked once per file, every problem named in one :class:`ModelError`).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from ...analytic.biped.five_bar import height
from ...analytic.biped.wheeled_pendulum import PendulumParams
from ..core.errors import ModelError
from ..core.models import body_inertia, check_size, model_path
from ..core.registry import Param

__all__ = ["STANCE", "MODEL", "SIDES", "HIPS", "LEG_MASS_IDEAL", "STAND_SINK", "BipedParams", "Ground", "MJCF",
           "robot_path", "contract_problems", "check_contract", "build", "biped_params", "nominal_params",
           "stand_pose", "balance_pose", "closure_error", "composite_com"]

MODEL = "wheel_legged_biped"
STANCE = np.radians(215.0)  # mid-stroke pose of the single-pose checks and closed loops, rad (y = 0.313 m)
SIDES = ("left", "right")
HIPS = tuple(f"{side}_{end}_hip" for side in SIDES for end in ("front", "rear"))
KNEES = tuple(f"{side}_{end}_knee" for side in SIDES for end in ("front", "rear"))
WHEELS = tuple(f"{side}_wheel" for side in SIDES)
LINKS = tuple(f"{side}_{end}_{part}" for side in SIDES for end in ("front", "rear") for part in ("thigh", "shank"))

# "Nearly massless" leg links, ~1e-4 of the body all told.  Much lighter links make MuJoCo's soft
# constraints too soft (each is regularized in proportion to the inverse inertia it sees) and the loop opens.
LEG_MASS_IDEAL = 1e-4  # kg

# Standing poses sink the wheels 1 nm into the floor: a contact at exactly zero distance may or may
# not be active (round-off decides), while 1 nm adds a negligible push.
STAND_SINK = 1e-9  # m


@dataclass(frozen=True)
class BipedParams:
    """Every number the analytic models need, read from a compiled biped model.

    Attributes:
      pendulum: wheeled-pendulum parameters (body mass M, wheel m, r, I, body
        J_pitch, J_yaw, track D, g).
      l1, l2, l3: five-bar half motor spacing, thigh and shank lengths, m.
      thigh_mass, shank_mass: one leg link's mass, kg.
      J_roll: body inertia about x through its CoM, kg m^2.
      com_offset: body CoM relative to the hip-motor line's midpoint, (x, z), m.
      hip_torque_limit, wheel_torque_limit: actuator limits, N m.
      timestep: the model's time step, s.
      wheel_yaw_inertia: one wheel's inertia about a vertical diameter, kg m^2
        (not in the steering model; it explains that model's residual).
    """

    pendulum: PendulumParams
    l1: float
    l2: float
    l3: float
    thigh_mass: float
    shank_mass: float
    J_roll: float
    com_offset: tuple[float, float]
    hip_torque_limit: float
    wheel_torque_limit: float
    timestep: float
    wheel_yaw_inertia: float

    def leg_height(self, alpha) -> np.ndarray:
        """Hip-line height above the axle ``y(alpha)`` (the five-bar formula), m."""
        return height(alpha, self.l1, self.l2, self.l3)


@dataclass(frozen=True)
class Ground:
    """The floor the robot drives on, as a model edit (:func:`build`).

    Attributes:
      friction: sliding friction of the floor and the wheels (MuJoCo takes the larger of two geoms'),
        or None for the model's own.
      slope: floor inclination about the y axis, rad; positive rises ahead (+x).
      bump: height of a bump across the path, m (0: none), ``BUMP_LENGTH`` long, ``BUMP_START`` ahead.
      left_step: height of a 4 m x 0.2 m strip under the left wheel's track, m (0: none).
    """

    friction: float | None = None
    slope: float = 0.0
    bump: float = 0.0
    left_step: float = 0.0

    @property
    def flat(self) -> bool:
        return self.friction is None and self.slope == 0.0 and self.bump == 0.0 and self.left_step == 0.0


BUMP_START = 1.0  # m ahead of the start: past balance-recovery's roll-back, on velocity-tracking's path
BUMP_LENGTH = 0.3  # m along the path


def _check_robot(mjcf: str) -> None:
    """Refuse a missing file or a model that breaks the contract when the parameter is given."""
    nominal_params(mjcf)


# The --set parameter every biped experiment takes for the robot to run on.
MJCF = Param("", "the robot's MJCF: a path, or a model name in crossdyn's mjcf/ folder such as "
             "wheel_legged_biped_large (default: the built-in robot)", check=_check_robot)


def robot_path(mjcf: str | os.PathLike = "") -> Path:
    """The biped's MJCF: ``""`` the built-in robot, a bare name a model in crossdyn's ``mjcf/`` folder
    (``wheel_legged_biped_large``), else a file path.  ModelError: no such file or built-in model."""
    text = os.fspath(mjcf)
    return model_path(text if text else MODEL)


# The MJCF contract (docs/guides/tuning-biped.md): names, element kinds, five-bar conventions.
_JOINTS = {"root": mujoco.mjtJoint.mjJNT_FREE, **{j: mujoco.mjtJoint.mjJNT_HINGE for j in HIPS + KNEES + WHEELS}}
_BODIES = ("body", *LINKS, *WHEELS)
_SITES = ("imu", *(f"{side}_axle" for side in SIDES), *(f"{side}_rear_foot" for side in SIDES))
_SENSORS = {"imu_quat": mujoco.mjtSensor.mjSENS_FRAMEQUAT, "imu_gyro": mujoco.mjtSensor.mjSENS_GYRO,
            "imu_accel": mujoco.mjtSensor.mjSENS_ACCELEROMETER,
            **{f"{j}_pos": mujoco.mjtSensor.mjSENS_JOINTPOS for j in HIPS + WHEELS},
            **{f"{j}_vel": mujoco.mjtSensor.mjSENS_JOINTVEL for j in HIPS + WHEELS}}
_EQUALITIES = tuple(f"{side}_closure" for side in SIDES)
_AXIS_Y = np.array([0.0, 1.0, 0.0])


def contract_problems(model: mujoco.MjModel) -> list[str]:
    """Everything in ``model`` that breaks the biped's MJCF contract (the table of
    docs/guides/tuning-biped.md), one phrase each; empty: it complies."""
    problems: list[str] = []

    def get(kind: str, name: str):
        try:
            return getattr(model, kind)(name)
        except KeyError:
            problems.append(f"missing {kind} {name!r}")
            return None

    for name, kind in _JOINTS.items():
        joint = get("joint", name)
        if joint is not None and joint.type[0] != kind:
            problems.append(f"joint {name!r} must be {'free' if kind == mujoco.mjtJoint.mjJNT_FREE else 'a hinge'}")
    for name in _BODIES:
        get("body", name)
    for name in _SITES:
        get("site", name)
    for name in ("floor", *(f"{w}_contact" for w in WHEELS)):
        geom = get("geom", name)
        want = mujoco.mjtGeom.mjGEOM_PLANE if name == "floor" else mujoco.mjtGeom.mjGEOM_SPHERE
        if geom is not None and geom.type[0] != want:
            problems.append(f"geom {name!r} must be a {'plane' if name == 'floor' else 'sphere'}")
    for name in HIPS + WHEELS:
        act = get("actuator", name)
        if act is None:
            continue
        joint = _has_joint(model, name) and model.joint(name).id
        if act.trntype[0] != mujoco.mjtTrn.mjTRN_JOINT or act.trnid[0] != joint:
            problems.append(f"actuator {name!r} must drive joint {name!r}")
        elif not model.actuator_ctrllimited[act.id] or act.ctrlrange[1] <= 0:
            problems.append(f"actuator {name!r} needs a ctrlrange (its torque limit)")
    for name, kind in _SENSORS.items():
        sensor = get("sensor", name)
        if sensor is not None and sensor.type[0] != kind:
            problems.append(f"sensor {name!r} has the wrong type (want {mujoco.mjtSensor(kind).name[8:].lower()})")
    for name in _EQUALITIES:
        eq = get("equality", name)
        if eq is not None and eq.type[0] != mujoco.mjtEq.mjEQ_CONNECT:
            problems.append(f"equality {name!r} must be a connect (the loop closure)")
    for hip in HIPS:
        if not _has_joint(model, hip):
            continue
        axis = model.joint(hip).axis * (1 if "_front_" in hip else -1)
        if np.abs(axis - _AXIS_Y).max() > 1e-9:
            problems.append(f"joint {hip!r} must turn about {'+y' if '_front_' in hip else '-y'}")
        if abs(model.qpos0[model.joint(hip).qposadr[0]] - np.pi) > 1e-9:
            problems.append(f"joint {hip!r} needs ref=180 deg (alpha measured from the inward horizontal)")
    problems += _side_problems(model)
    return problems


def _side_problems(model: mujoco.MjModel) -> list[str]:
    """Each side's bodies on its own side of the body frame at the reference pose (``left_*`` at +y): a model
    with the sides' names swapped has every other element right, and negative track widths."""
    names = [name for name in (*LINKS, *WHEELS) if _has(model, mujoco.mjtObj.mjOBJ_BODY, name)]
    if not _has(model, mujoco.mjtObj.mjOBJ_BODY, "body"):
        return []
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    root = model.body("body").id
    frame = data.xmat[root].reshape(3, 3)
    problems = []
    for side, sign in (("left", 1.0), ("right", -1.0)):
        wrong = []
        for name in (n for n in names if n.startswith(side + "_")):
            y = float((frame.T @ (data.xpos[model.body(name).id] - data.xpos[root]))[1])
            if not sign * y > 0:
                wrong.append((name, y))
        if wrong:
            name, y = wrong[0]
            more = f" (and {len(wrong) - 1} more {side} bodies)" if len(wrong) > 1 else ""
            problems.append(f"body {name!r} is at y = {y:+.3g} m in the frame of body 'body'{more}; the {side} side "
                            f"must be at {'+y' if sign > 0 else '-y'} (are left and right swapped?)")
    return problems


def _has(model: mujoco.MjModel, kind, name: str) -> bool:
    return mujoco.mj_name2id(model, kind, name) >= 0


def check_contract(model: mujoco.MjModel, source: str | os.PathLike = "the model") -> None:
    """Raise one :class:`ModelError` listing every breach of the contract (see :func:`contract_problems`)."""
    problems = contract_problems(model)
    if problems:
        raise ModelError(f"{os.fspath(source)} is not a wheel-legged biped per crossdyn's contract: "
                         + "; ".join(problems))


@functools.lru_cache(maxsize=16)
def _checked(path: Path, mtime: float) -> None:
    """Compile the file as written and check its contract, once per file version."""
    check_size(path)
    try:
        model = mujoco.MjSpec.from_file(str(path)).compile()
    except ValueError as exc:
        raise ModelError(f"cannot compile {path}: {' '.join(str(exc).split())}") from None
    check_contract(model, path)


def _spec(mjcf: str | os.PathLike = "") -> mujoco.MjSpec:
    path = robot_path(mjcf)
    _checked(path, path.stat().st_mtime)
    try:
        return mujoco.MjSpec.from_file(str(path))
    except ValueError as exc:
        raise ModelError(f"cannot read {path}: {' '.join(str(exc).split())}") from None


def build(
    *,
    legs: str = "realistic",
    rigid_alpha: float | None = None,
    com_offset: tuple[float, float] = (0.0, 0.0),
    fixed_body: bool = False,
    gravity: bool = True,
    timestep: float | None = None,
    mjcf: str | os.PathLike = "",
    ground: Ground | None = None,
    payload: tuple[float, float] = (0.0, 0.0),
) -> mujoco.MjModel:
    """Compile a variant of the biped (see the module docstring).

    Args:
      mjcf: the robot (:func:`robot_path`); ``""`` is the built-in one.
      ground: another floor (:class:`Ground`), or None for the model's.
      payload: ``(mass kg, x m)``: a point-like mass fixed to the body ``x`` ahead
        of its frame origin (the hip line); ``(0, 0)`` adds nothing.

    Raises:
      ModelError: unknown ``legs``, a missing or non-compiling file, a model
        that breaks the contract, or a variant that does not compile.
    """
    spec = _spec(mjcf)
    if legs == "massless":
        for name in LINKS:
            for geom in spec.body(name).geoms:
                geom.mass = LEG_MASS_IDEAL
    elif legs != "realistic":
        raise ModelError(f"biped variant: legs={legs!r}; choose 'realistic' or 'massless'")
    if rigid_alpha is not None:
        _weld_legs(spec, rigid_alpha)
    if fixed_body:
        # A leg rig in the air: no floor contact (the legs may reach through it).
        spec.delete(spec.joint("root"))
        spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    if not gravity:
        spec.option.gravity = [0.0, 0.0, 0.0]
    if timestep is not None:
        spec.option.timestep = timestep
    if ground is not None and not ground.flat:
        _edit_ground(spec, ground)
    if payload[0] > 0:
        carrier = spec.body("body").add_body(name="payload", pos=[payload[1], 0.0, 0.0])
        carrier.add_geom(name="payload", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.01, 0, 0], mass=payload[0],
                         contype=0, conaffinity=0, rgba=[0.9, 0.7, 0.1, 1])
    try:
        model = spec.compile()
    except ValueError as exc:
        raise ModelError(f"cannot compile biped variant: {' '.join(str(exc).split())}") from None
    if any(com_offset):
        # Shift the body's CoM in the compiled model: mass and inertia about the CoM stay the file's.
        bid = model.body("body").id
        model.body_ipos[bid] += [com_offset[0], 0.0, com_offset[1]]
        mujoco.mj_setConst(model, mujoco.MjData(model))
    return model


def _edit_ground(spec: mujoco.MjSpec, ground: Ground) -> None:
    """Friction, slope and a bump on the floor (see :class:`Ground`)."""
    floor = spec.geom("floor")
    contacts = [spec.geom(f"{w}_contact") for w in WHEELS]
    if ground.friction is not None:
        for geom in (floor, *contacts):
            geom.friction = [ground.friction, *list(geom.friction)[1:]]
    r = float(contacts[0].size[0])
    rot = np.array([np.cos(ground.slope / 2), 0.0, -np.sin(ground.slope / 2), 0.0])  # about -y: rises towards +x
    # Lowered so a wheel standing at x = 0 still touches the tilted plane (the axle stays r from it).
    drop = r - r / np.cos(ground.slope)
    if ground.slope:
        floor.quat, floor.pos = rot, [0.0, 0.0, drop]
    normal = np.array([-np.sin(ground.slope), 0.0, np.cos(ground.slope)])
    along = np.array([np.cos(ground.slope), 0.0, np.sin(ground.slope)])
    origin = np.array([0.0, 0.0, drop])
    if ground.bump > 0:
        centre = origin + (BUMP_START + BUMP_LENGTH / 2) * along + ground.bump / 2 * normal
        spec.worldbody.add_geom(name="bump", type=mujoco.mjtGeom.mjGEOM_BOX,
                                size=[BUMP_LENGTH / 2, 5.0, ground.bump / 2], pos=centre, quat=rot,
                                contype=1, conaffinity=1, condim=3, friction=list(floor.friction),
                                solref=list(floor.solref), solimp=list(floor.solimp), material="grid")
    if ground.left_step > 0:
        # A strip centred on the left wheel's track (the leg's lateral position), 0.2 m wide.
        track = float(spec.body("left_front_thigh").pos[1])
        centre = origin + [0.0, track, 0.0] + ground.left_step / 2 * normal
        spec.worldbody.add_geom(name="step", type=mujoco.mjtGeom.mjGEOM_BOX, size=[2.0, 0.1, ground.left_step / 2],
                                pos=centre, quat=rot, contype=1, conaffinity=1, condim=3,
                                friction=list(floor.friction), material="grid")


def _weld_legs(spec: mujoco.MjSpec, alpha: float) -> None:
    """Remove hip and knee joints and the closures; fix the links at the closed pose for ``alpha``."""
    # Lengths from the file itself (the same numbers biped_params reads).
    front, rear = spec.body("left_front_thigh"), spec.body("left_rear_thigh")
    l1 = 0.5 * float(front.pos[0] - rear.pos[0])
    l2 = float(np.linalg.norm(spec.body("left_front_shank").pos))
    l3 = float(np.linalg.norm(spec.site("left_axle").pos))
    knee = float(knee_angle(alpha, l1, l2, l3))
    for joint_name, angle in [(h, alpha - np.pi) for h in HIPS] + [(k, knee) for k in KNEES]:
        joint = spec.joint(joint_name)
        axis = np.asarray(joint.axis, dtype=float)
        body = joint.parent
        rot = np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis / np.linalg.norm(axis)])
        quat = np.zeros(4)
        mujoco.mju_mulQuat(quat, np.asarray(body.quat, dtype=float), rot)
        body.quat = quat
        spec.delete(joint)
    for eq in list(spec.equalities):
        if eq.name.endswith("_closure"):
            spec.delete(eq)
    # The hip motors and encoders go with their joints.
    for hip in HIPS:
        spec.delete(spec.actuator(hip))
        for suffix in ("_pos", "_vel"):
            spec.delete(spec.sensor(hip + suffix))


def biped_params(model: mujoco.MjModel) -> BipedParams:
    """Read the analytic parameters from a compiled biped (any variant).

    Raises:
      ModelError: a body, joint, site or actuator of the biped is missing, or the
        two legs differ.
    """
    try:
        body, wheel, front, rear, knee_body, right = (model.body(name) for name in (
            "body", "left_wheel", "left_front_thigh", "left_rear_thigh", "left_front_shank", "right_front_thigh"))
        contact, axle = model.geom("left_wheel_contact"), model.site("left_axle")
    except KeyError as exc:
        raise ModelError(f"not a wheel-legged biped model (mjcf/{MODEL}.xml): missing {exc}") from None

    def inertia_about(bid: int, axis) -> float:
        return float(axis @ body_inertia(model, bid) @ axis)

    l1 = 0.5 * float(front.pos[0] - rear.pos[0])
    l2 = float(np.linalg.norm(knee_body.pos))
    l3 = float(np.linalg.norm(axle.pos))
    D = float(front.pos[1] - right.pos[1])
    if abs(model.body("left_rear_shank").pos[0] + knee_body.pos[0]) > 1e-12:
        raise ModelError("biped: front and rear thighs differ in length; the five-bar model needs a symmetric leg")
    hip_line = 0.5 * (front.pos + rear.pos)
    com = body.ipos - hip_line
    ex, ey, ez = np.eye(3)

    def limit(name: str) -> float:
        try:
            act = model.actuator(name)
        except KeyError:  # a rigid-leg variant has no hip motors
            return 0.0
        return float(np.max(np.abs(act.ctrlrange)) * abs(act.gear[0]))

    pendulum = PendulumParams(M=float(body.mass[0]), m=float(wheel.mass[0]), r=float(contact.size[0]),
                              I=inertia_about(wheel.id, ey), J_pitch=inertia_about(body.id, ey),
                              J_yaw=inertia_about(body.id, ez), D=D, g=float(-model.opt.gravity[2]))
    return BipedParams(pendulum=pendulum, l1=l1, l2=l2, l3=l3, thigh_mass=float(front.mass[0]),
                       shank_mass=float(knee_body.mass[0]), J_roll=inertia_about(body.id, ex),
                       com_offset=(float(com[0]), float(com[2])),
                       hip_torque_limit=limit("left_front_hip"), wheel_torque_limit=limit("left_wheel"),
                       timestep=float(model.opt.timestep), wheel_yaw_inertia=inertia_about(wheel.id, ez))


def nominal_params(mjcf: str | os.PathLike = "") -> BipedParams:
    """:func:`biped_params` of a robot as written (``""``: the built-in one; read once per file, then cached):
    the controllers' gains and the robot's defaults (hip torque, stance height) come from here."""
    path = robot_path(mjcf)
    return _nominal(path, path.stat().st_mtime)


@functools.lru_cache(maxsize=16)
def _nominal(path: Path, mtime: float) -> BipedParams:
    return biped_params(build(mjcf=path))


def knee_angle(alpha, l1: float, l2: float, l3: float) -> np.ndarray:
    """Knee joint angle that closes the loop at hip angle ``alpha`` (both chains), rad: the shank's rotation
    ``atan2(a, s)`` (knee off the centre line, above the axle) less the thigh's ``alpha - pi``."""
    a = l1 - l2 * np.cos(alpha)
    s = height(alpha, l1, l2, l3) + l2 * np.sin(alpha)
    return np.arctan2(a, s) - (alpha - np.pi)


def stand_pose(model: mujoco.MjModel, alpha: float, params: BipedParams | None = None) -> np.ndarray:
    """``qpos`` of the robot upright, both legs closed at ``alpha``, wheels touching the floor.

    Raises:
      ValueError: ``alpha`` outside the reachable range.
    """
    p = biped_params(model) if params is None else params
    qpos = model.qpos0.copy()
    knee = knee_angle(alpha, p.l1, p.l2, p.l3)
    for hip, kn in zip(HIPS, KNEES, strict=False):
        if _has_joint(model, hip):  # a rigid-leg variant has no hip or knee joints
            qpos[model.joint(hip).qposadr[0]] = alpha
            qpos[model.joint(kn).qposadr[0]] = knee
    if _has_joint(model, "root"):
        adr = model.joint("root").qposadr[0]
        qpos[adr : adr + 3] = [0.0, 0.0, p.leg_height(alpha) + p.pendulum.r - STAND_SINK]
        qpos[adr + 3 : adr + 7] = [1.0, 0.0, 0.0, 0.0]
    return qpos


def _has_joint(model: mujoco.MjModel, name: str) -> bool:
    return _has(model, mujoco.mjtObj.mjOBJ_JOINT, name)


def composite_com(model: mujoco.MjModel, data: mujoco.MjData) -> np.ndarray:
    """Centre of mass of the whole robot (the free body's subtree), world, m."""
    return data.subtree_com[model.body("body").id].copy()


def balance_pose(model: mujoco.MjModel, alpha: float, params: BipedParams | None = None) -> tuple[np.ndarray, float]:
    """Standing pose pitched about the axle so the whole robot's CoM is above it (with a CoM offset the
    body leans): ``(qpos, theta)``, theta the pitch, rad."""
    p = biped_params(model) if params is None else params
    qpos = stand_pose(model, alpha, p)
    data = mujoco.MjData(model)
    y = p.leg_height(alpha)
    theta = 0.0
    for _ in range(20):
        # Rotate the body about the axle (at height r, x = 0) by theta.
        qpos[0:3] = [y * np.sin(theta), 0.0, p.pendulum.r + y * np.cos(theta) - STAND_SINK]
        qpos[3:7] = [np.cos(theta / 2), 0.0, np.sin(theta / 2), 0.0]
        data.qpos[:] = qpos
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        com = composite_com(model, data)
        axle = data.site_xpos[model.site("left_axle").id]
        dx, dz = com[0] - axle[0], com[2] - axle[2]
        step = -np.arctan2(dx, dz)
        theta += step
        if abs(step) < 1e-14:
            break
    if _has_joint(model, "root") and not _has_joint(model, HIPS[0]):
        # Only a rigid-leg robot has a well-defined static sink (hip joints would fold in the search).
        qpos[2] = _settle_height(model, data, qpos)
    return qpos, theta


def _settle_height(model: mujoco.MjModel, data: mujoco.MjData, qpos: np.ndarray) -> float:
    """Body height at which the soft wheel contacts hold the robot still vertically, by bisection on the
    vertical acceleration (a contact touched at exactly zero distance is lost by any perturbation)."""
    z_touch = float(qpos[2])
    low, high = z_touch - 1e-5, z_touch  # 10 um: far beyond any static sink here
    for _ in range(60):
        mid = 0.5 * (low + high)
        data.qpos[:] = qpos
        data.qpos[2] = mid
        data.qvel[:] = 0.0
        mujoco.mj_forward(model, data)
        if data.qacc[2] > 0.0:
            low = mid
        else:
            high = mid
    return 0.5 * (low + high)


def closure_error(model: mujoco.MjModel, data: mujoco.MjData) -> float:
    """Largest distance between a rear shank tip and its axle (loop-closure error), m."""
    return max(float(np.linalg.norm(data.site_xpos[model.site(f"{side}_rear_foot").id]
                                    - data.site_xpos[model.site(f"{side}_axle").id])) for side in SIDES)
