"""Hand derivations of three public models, each right and with one realistic slip.

The models are dm_control's planar hopper and finger (``tests/models/dm_control/``)
and Unitree's H1 with its pelvis fixed (``tests/models/h1/``).  The derivation is a
tree walk written here from the MJCF's meaning, not from MuJoCo's code: each body
sits at its ``pos``, turned by its ``quat``, in its parent's frame; each joint then
turns it about its axis by ``q - ref`` (a hinge; about the joint's anchor) or slides
it along the axis by ``q - ref`` (a slide), in the order the joints are written.
From the frames follow a point's position and rotation, its geometric Jacobian
(a hinge's column ``[w x (p - anchor); w]``, a slide's ``[w; 0]``), and the mass
matrix ``sum_b m_b Jv_b^T Jv_b + Jw_b^T R I_b R^T Jw_b`` (``Jv_b`` at the centre
of mass).  The numbers (lengths, masses, inertias) are read from the compiled
model, as a user reads them off the MJCF.

Each slip is one number or habit changed in the :class:`Walk`: a joint measured
the other way (or every hinge of the planar hopper), a ``ref`` left out, a body's
``quat`` left out or turned half a turn, a link length typed wrong or left out of
gravity, a body's parallel-axis term dropped, a Jacobian's angular rows left in the
body's frame, a square Jacobian transposed, and the finger's joint damping left out
of its linearization.  Gravity is ``g(q) = -sum_b m_b Jv_b^T g`` (``Jv_b`` at the
centre of mass, ``g`` the model's gravity vector).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from crossdyn.experiments.core.models import load_model

MODELS = Path(__file__).parent.parent / "models"
HOPPER = load_model(MODELS / "dm_control" / "hopper.xml")
FINGER = load_model(MODELS / "dm_control" / "finger.xml")
H1 = load_model(MODELS / "h1" / "h1.xml")

_HINGE, _SLIDE = 3, 2  # MuJoCo's joint type numbers
_ORIGIN = np.zeros(3)


def _quat_matrix(quat) -> np.ndarray:
    w, x, y, z = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _turn(axis, angle: float) -> np.ndarray:
    k = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


class Walk:
    """The tree of a model of hinges and slides, walked from the world out.

    Args:
      model: the compiled model the numbers are read from.
      pos: ``{body: (3,)}`` a body's position written differently (a slip).
      quat: ``{body: (4,)}`` a body's orientation written differently (a slip).
      ignore_ref: joints whose ``ref`` is left out (their angle taken as ``q``).
      reversed: joints measured the other way (their angle taken as ``-(q - ref)``).
      mass: ``{body: kg}`` a body's mass written differently (a slip).
      axis: ``{joint: (3,)}`` a joint's axis written differently, unit length (a slip).
      spinning: bodies whose mass matrix term is their rotation about the centre of mass alone (their
        translation ``m Jv^T Jv``, the parallel-axis term, dropped: a slip).
    """

    def __init__(self, model, pos=None, quat=None, ignore_ref=(), reversed=(), mass=None, axis=None, spinning=()):
        self.nv, self.nbody = model.nv, model.nbody
        self.gravity_vector = np.array(model.opt.gravity)
        self.spinning = {model.body(name).id for name in spinning}
        self.parent = [int(p) for p in model.body_parentid]
        self.pos = [np.array(model.body_pos[b]) for b in range(model.nbody)]
        self.rot = [_quat_matrix(model.body_quat[b]) for b in range(model.nbody)]
        for name, value in (pos or {}).items():
            self.pos[model.body(name).id] = np.asarray(value, dtype=float)
        for name, value in (quat or {}).items():
            self.rot[model.body(name).id] = _quat_matrix(value)
        self.joints: list[list[tuple]] = [[] for _ in range(model.nbody)]
        for j in range(model.njnt):
            name = model.joint(j).name
            ref = 0.0 if name in ignore_ref else float(model.qpos0[model.jnt_qposadr[j]])
            sign = -1.0 if name in reversed else 1.0
            self.joints[int(model.jnt_bodyid[j])].append(
                (int(model.jnt_type[j]), np.asarray((axis or {}).get(name, model.jnt_axis[j]), dtype=float),
                 np.array(model.jnt_pos[j]),
                 int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j]), ref, sign))
        self.mass = np.array(model.body_mass)
        for name, value in (mass or {}).items():
            self.mass[model.body(name).id] = value
        self.ipos = [np.array(model.body_ipos[b]) for b in range(model.nbody)]
        self.inertia = [_quat_matrix(model.body_iquat[b]) @ np.diag(model.body_inertia[b])
                        @ _quat_matrix(model.body_iquat[b]).T for b in range(model.nbody)]
        self.below = [self._chain(b) for b in range(model.nbody)]

    def _chain(self, b: int) -> list[int]:
        out = []
        while b:
            out.append(b)
            b = self.parent[b]
        return out[::-1]

    def frames(self, q):
        """Every body's rotation and origin in the world, and every dof's world axis and anchor (hinges)."""
        R, p = [np.eye(3)] * self.nbody, [np.zeros(3)] * self.nbody
        axes, anchors, kinds = [None] * self.nv, [None] * self.nv, [None] * self.nv
        for b in range(1, self.nbody):
            a = self.parent[b]
            Rb, pb = R[a] @ self.rot[b], p[a] + R[a] @ self.pos[b]
            for kind, axis, anchor, adr, dof, ref, sign in self.joints[b]:
                angle = sign * (q[adr] - ref)
                w = Rb @ axis
                axes[dof], kinds[dof] = sign * w, kind
                if kind == _HINGE:
                    at = pb + Rb @ anchor
                    Rb = Rb @ _turn(axis, angle)
                    pb = at - Rb @ anchor
                    anchors[dof] = at
                else:
                    pb = pb + w * angle
            R[b], p[b] = Rb, pb
        return R, p, axes, anchors, kinds

    def _dofs(self, b: int) -> list[int]:
        return [joint[4] for c in self.below[b] for joint in self.joints[c]]

    def point(self, q, body: int, local=_ORIGIN):
        R, p, *_ = self.frames(q)
        return p[body] + R[body] @ local, R[body]

    def jacobian(self, q, body: int, local=_ORIGIN, frames=None) -> np.ndarray:
        """``(6, nv)``: linear rows (velocity of the point, world axes), angular rows (world axes)."""
        R, p, axes, anchors, kinds = frames or self.frames(q)
        x = p[body] + R[body] @ local
        J = np.zeros((6, self.nv))
        for dof in self._dofs(body):
            w = axes[dof]
            if kinds[dof] == _HINGE:
                J[:3, dof], J[3:, dof] = np.cross(w, x - anchors[dof]), w
            else:
                J[:3, dof] = w
        return J

    def mass_matrix(self, q) -> np.ndarray:
        frames = self.frames(q)
        R = frames[0]
        M = np.zeros((self.nv, self.nv))
        for b in range(1, self.nbody):
            J = self.jacobian(q, b, self.ipos[b], frames)
            I_world = R[b] @ self.inertia[b] @ R[b].T
            M += (0.0 if b in self.spinning else self.mass[b]) * J[:3].T @ J[:3] + J[3:].T @ I_world @ J[3:]
        return M

    def gravity(self, q) -> np.ndarray:
        """The generalized gravity force ``(nv,)``: what holds the model still against gravity."""
        frames = self.frames(q)
        return -sum(self.mass[b] * self.jacobian(q, b, self.ipos[b], frames)[:3].T @ self.gravity_vector
                    for b in range(1, self.nbody))


def _site(model, name: str) -> tuple[int, np.ndarray, np.ndarray]:
    s = model.site(name).id
    return int(model.site_bodyid[s]), np.array(model.site_pos[s]), _quat_matrix(model.site_quat[s])


def _site_pose(walk: Walk, model, name: str, q):
    body, local, turn = _site(model, name)
    p, R = walk.point(q, body, local)
    return p, R @ turn


# The hopper: the toe's position and rotation; the knee measured the other way.
_HOPPER, _HOPPER_KNEE = Walk(HOPPER), Walk(HOPPER, reversed=("knee",))


def hopper_toe(q):
    return _site_pose(_HOPPER, HOPPER, "touch_toe", q)


def hopper_toe_knee_reversed(q):
    return _site_pose(_HOPPER_KNEE, HOPPER, "touch_toe", q)


# The knee's axis tilted by 0.1 rad about x: [0, cos 0.1, sin 0.1] where the model has [0, 1, 0].
_HOPPER_TILTED = Walk(HOPPER, axis={"knee": [0.0, np.cos(0.1), np.sin(0.1)]})


def hopper_toe_knee_tilted(q):
    return _site_pose(_HOPPER_TILTED, HOPPER, "touch_toe", q)


# The hopper's mass matrix; the calf's origin written 0.30 m below the thigh's where the model has 0.33 m.
_HOPPER_SHORT = Walk(HOPPER, pos={"calf": [0.0, 0.0, -0.30]})


def hopper_mass_matrix(q):
    return _HOPPER.mass_matrix(q)


def hopper_mass_matrix_short_thigh(q):
    return _HOPPER_SHORT.mass_matrix(q)


# Every hinge of the planar hopper measured the other way (its y axis drawn reversed): the toe's rotation is
# then the transpose of MuJoCo's, and its position is off too.
_HOPPER_HINGES_REVERSED = Walk(HOPPER, reversed=("rooty", "waist", "hip", "knee", "ankle"))


def hopper_toe_hinges_reversed(q):
    return _site_pose(_HOPPER_HINGES_REVERSED, HOPPER, "touch_toe", q)


# The toe's Jacobian; the calf turned half a turn about its own x axis (quat 0 1 0 0 where the model has 1 0 0 0).
_HOPPER_CALF_TURNED = Walk(HOPPER, quat={"calf": [0.0, 1.0, 0.0, 0.0]})


def hopper_toe_jacobian(q):
    body, local, _ = _site(HOPPER, "touch_toe")
    return _HOPPER.jacobian(q, body, local)


def hopper_toe_jacobian_calf_turned(q):
    body, local, _ = _site(HOPPER, "touch_toe")
    return _HOPPER_CALF_TURNED.jacobian(q, body, local)


# The hopper's gravity force; the thigh's offset below the pelvis (0.2 m) left out.
_HOPPER_NO_THIGH_OFFSET = Walk(HOPPER, pos={"thigh": [0.0, 0.0, 0.0]})


def hopper_gravity(q):
    return _HOPPER.gravity(q)


def hopper_gravity_without_thigh_offset(q):
    return _HOPPER_NO_THIGH_OFFSET.gravity(q)


# The finger: the touch sensor's pose; the proximal joint's ref (-90 deg) left out.
_FINGER, _FINGER_NO_REF = Walk(FINGER), Walk(FINGER, ignore_ref=("proximal",))


def finger_touch(q):
    return _site_pose(_FINGER, FINGER, "touchtop", q)


def finger_touch_without_ref(q):
    return _site_pose(_FINGER_NO_REF, FINGER, "touchtop", q)


def finger_jacobian(q):
    """The touch sensor's linear Jacobian, ``(3, 3)``: square (the finger's two joints and the spinner's)."""
    body, local, _ = _site(FINGER, "touchtop")
    return _FINGER.jacobian(q, body, local)[:3]


def finger_jacobian_transposed(q):
    return finger_jacobian(q).T


# The finger's mass matrix; the proximal link's parallel-axis term (its translation, m |c|^2) dropped.
_FINGER_SPINNING = Walk(FINGER, spinning=("proximal",))


def finger_mass_matrix(q):
    return _FINGER.mass_matrix(q)


def finger_mass_matrix_parallel_axis_dropped(q):
    return _FINGER_SPINNING.mass_matrix(q)


def _finger_blocks():
    """The finger's two joints at rest: ``M (2, 2)``, their damping, the motors' gears (gravity is off)."""
    M = _FINGER.mass_matrix(FINGER.qpos0)[:2, :2]
    return M, np.diag(FINGER.dof_damping[:2]), np.diag(FINGER.actuator_gear[:, 0])


def finger_linearization(q, qd, u):
    """``(A, B)`` of the finger's joints at rest: ``qdd = M^-1 (G u - D qd)`` (no gravity, no springs)."""
    M, D, G = _finger_blocks()
    Minv = np.linalg.inv(M)
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [np.zeros((2, 2)), -Minv @ D]])
    return A, np.vstack([np.zeros((2, 2)), Minv @ G])


def finger_linearization_undamped(q, qd, u):
    A, B = finger_linearization(q, qd, u)
    A[2:, 2:] = 0.0
    return A, B


# H1, pelvis fixed: the left elbow's pose; the left shoulder pitch link's quat left out.
_H1, _H1_NO_QUAT = Walk(H1), Walk(H1, quat={"left_shoulder_pitch_link": [1.0, 0.0, 0.0, 0.0]})
_ELBOW = H1.body("left_elbow_link_ball_hand").id


def h1_elbow(q):
    return _H1.point(q, _ELBOW)


def h1_elbow_without_shoulder_quat(q):
    return _H1_NO_QUAT.point(q, _ELBOW)


def h1_elbow_jacobian(q):
    return _H1.jacobian(q, _ELBOW)


def h1_elbow_jacobian_angular_in_body(q):
    """The angular rows left in the elbow link's own frame (``R^T w``); the linear rows in the world's."""
    R, *_ = _H1.frames(q)
    J = _H1.jacobian(q, _ELBOW)
    J[3:] = R[_ELBOW].T @ J[3:]
    return J


# H1's mass matrix; the left knee link's mass written 2.0 kg where the model has 1.721 kg.
_H1_HEAVY_KNEE = Walk(H1, mass={"left_knee_link": 2.0})


def h1_mass_matrix(q):
    return _H1.mass_matrix(q)


def h1_mass_matrix_heavy_knee(q):
    return _H1_HEAVY_KNEE.mass_matrix(q)

