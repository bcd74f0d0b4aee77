"""Reductions users declare: their own coordinates of a MuJoCo model, the motions that keep its constraints, and
MuJoCo's dynamics read in those coordinates.

A hand model seldom has MuJoCo's state.  ``Reduction.from_coordinates`` takes the user's words for theirs:

- ``states``: each coordinate as a function of ``qpos`` (or a hinge or slide joint's name); its rate is its
  derivative, ``J qvel`` with ``J`` its gradient in MuJoCo's tangent space;
- ``inputs``: each input as weights on actuators (``{"left_wheel": 0.5, "right_wheel": 0.5}``);
- ``hold``: coordinates that stay fixed (a leg length), kept by a force along their gradient that holds them
  exactly, as an ideal actuator would.

At an operating point crossdyn keeps what is touching: each loop closure (equality constraint) and each active
contact, whose point neither separates nor slides (the wheel rolls).  A declared coordinate then moves by a
*lift*: the motion that changes it by one unit, leaves the other declared and the held coordinates where they
are and keeps every kept constraint, with the least kinetic energy where that leaves a choice (a symmetric
robot's free yaw stays still).  ``linearize`` differentiates MuJoCo's forward dynamics along the lifts and
reads the result with the coordinates' gradients; ``check_forward_dynamics`` places the robot at the user's
states (constraints and held coordinates satisfied) and reads their accelerations.

Two truths, each stated in its report.  A linearization is MuJoCo's forward dynamics as simulated, soft contacts
and loop closures included: what they let through shows in it (about upright, 1e-5 of the entries with the
stiffest solimp, 1e-7 with impratio 100 on the rolling directions).  Accelerations at random states are MuJoCo's
rigid-body dynamics with the kept constraints made ideal (:class:`Constrained`): MuJoCo's contacts leave out a
rolling wheel's centripetal terms, up to 1e-2 of the accelerations at speed, which no hand model of rolling has.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import mujoco
import numpy as np

from .errors import ParameterError, StateError
from .limits import EPS_MIN
from .linearize import EPS, Linearization, active_constraints, operating_point, steps
from .models import with_options

__all__ = ["Reduction", "Coordinate", "Declared", "declare", "rebuild", "linearize_reduced", "ReducedForward",
           "Constrained", "place", "rates", "tightened", "LAYOUTS", "SOLVER_TOLERANCE"]

LAYOUTS = ("interleaved", "stacked")
# Central differences of a coordinate's gradient: truncation ~STEP^2 |c'''| (1e-12) and round-off
# ~1e-16 |c| / STEP (1e-10 of the scale).
STEP = 1e-6
# A held coordinate's gradient is taken at perturbed states and differenced again over 1e-6 steps: its round-off
# must stay far below that.  A five-point stencil of this step errs by ~HOLD_STEP^4 |h^(5)| (1e-12) in truncation
# and by ~1e-16 / HOLD_STEP (1e-13) in round-off.  Second differences over this displacement (a coordinate's
# curvature along qvel) err by ~HOLD_STEP^2 / 12 of the fourth derivative (1e-7) and 1e-16 / HOLD_STEP^2 (1e-10).
HOLD_STEP = 1e-3
# Placing the robot at a user's state: Gauss-Newton on the constraints and coordinates, to this residual (m, rad;
# round-off of coordinates of size 1 is ~1e-16, and the steps converge quadratically past it).
PLACE_TOL = 1e-12
PLACE_ITERATIONS = 30
# The farthest two kept geoms are looked apart for, m (a contact is only ever moved by round-off from touching).
DISTANCE_MAX = 1.0
# Settling on soft contacts: Gauss-Newton over the motions only the contacts resist, each probed by 1e-10 (m or
# rad; the static sink is ~1e-8 m and the response linear there), until the normal accelerations are 1e-12 g.
SETTLE_STEP = 1e-10
SETTLE_TOL = 1e-12
SETTLE_ITERATIONS = 20
# The constraint solver's tolerance in a finite difference: at MuJoCo's default 1e-8 a solve warm-started at the
# operating point may stop there for a perturbation below ~1e-6 (its improvement under the tolerance), and the
# difference reads zero; at 1e-12 the Newton solver converges whatever the step.
SOLVER_TOLERANCE = 1e-12


@dataclass(frozen=True)
class Coordinate:
    """A scalar function of ``qpos``: the user's callable, or a hinge or slide joint's value (``dof`` its dof)."""

    name: str
    value: Callable[[np.ndarray], float]
    dof: int | None = None

    def gradient(self, model: mujoco.MjModel, qpos: np.ndarray, step: float = STEP,
                 precise: bool = False) -> np.ndarray:
        """``d value / d q`` in MuJoCo's tangent space, ``(nv,)``: exact for a joint; else central differences, or
        with ``precise`` the five-point stencil at :data:`HOLD_STEP` (truncation ~1e-12, round-off ~1e-14)."""
        g = np.zeros(model.nv)
        if self.dof is not None:
            g[self.dof] = 1.0
            return g
        e, q = np.zeros(model.nv), np.empty(model.nq)

        def value(i: int, h: float) -> float:
            e[i] = h
            q[:] = qpos
            mujoco.mj_integratePos(model, q, e, 1.0)
            e[i] = 0.0
            return self(q)

        for i in range(model.nv):
            if precise:
                h = HOLD_STEP
                g[i] = (8 * (value(i, h) - value(i, -h)) - (value(i, 2 * h) - value(i, -2 * h))) / (12 * h)
            else:
                g[i] = (value(i, step) - value(i, -step)) / (2 * step)
        return g

    def curvature(self, model: mujoco.MjModel, qpos: np.ndarray, qvel: np.ndarray, step: float = HOLD_STEP) -> float:
        """``qvel' (d^2 value / d q^2) qvel``, the coordinate's acceleration at ``qacc = 0`` (zero for a joint)."""
        speed = float(np.abs(qvel).max(initial=0.0))
        if self.dof is not None or speed == 0.0:
            return 0.0
        h = step / speed
        q = np.empty(model.nq)
        values = []
        for sign in (1.0, -1.0):
            q[:] = qpos
            mujoco.mj_integratePos(model, q, qvel, sign * h)
            values.append(self(q))
        return (values[0] - 2 * self(qpos) + values[1]) / h**2

    def __call__(self, qpos: np.ndarray) -> float:
        value = float(self.value(qpos))
        if not math.isfinite(value):
            raise StateError(f"coordinate {self.name!r} is {value} at qpos {np.round(qpos, 6).tolist()}")
        return value


def _entry(adr: int, qpos: np.ndarray) -> float:
    return float(qpos[adr])


def _coordinate(model: mujoco.MjModel, name: str, spec, what: str) -> Coordinate:
    """A :class:`Coordinate` from a joint name or a callable, refused with the reason and the fix otherwise."""
    if isinstance(spec, str):
        try:
            joint = model.joint(spec)
        except KeyError:
            names = ", ".join(model.joint(j).name for j in range(model.njnt) if model.joint(j).name)
            raise ParameterError(f"{what} {name!r}: the model has no joint {spec!r} (its joints: {names})") from None
        if int(joint.type[0]) not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            raise ParameterError(f"{what} {name!r}: joint {spec!r} is not a hinge or slide; give a function of qpos")
        adr, dof = int(joint.qposadr[0]), int(joint.dofadr[0])
        return Coordinate(name, functools.partial(_entry, adr), dof)
    if not callable(spec):
        raise ParameterError(f"{what} {name!r}: give a function of qpos or a hinge/slide joint's name, "
                             f"not a {type(spec).__name__}")
    return Coordinate(name, spec)


def _coordinates(model, given, what: str) -> tuple[Coordinate, ...]:
    if isinstance(given, Mapping):
        items = list(given.items())
    elif isinstance(given, str):
        items = [(given, given)]
    else:
        items = [(spec, spec) if isinstance(spec, str) else spec for spec in given]
    out = []
    for item in items:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
            raise ParameterError(f"{what}: give a mapping name -> function of qpos (or joint name), or joint names")
        out.append(_coordinate(model, item[0], item[1], what))
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise ParameterError(f"{what}: a name appears twice in {names}")
    return tuple(out)


def _inputs(model: mujoco.MjModel, given: Mapping) -> tuple[np.ndarray, tuple[str, ...]]:
    """The ``(nu, m)`` map of the user's inputs onto actuators, and their names."""
    if not isinstance(given, Mapping):
        raise ParameterError("inputs: give a mapping name -> {actuator name: weight} (or an (nu,) array)")
    columns, names = [], []
    actuators = {model.actuator(i).name: i for i in range(model.nu)}
    for name, weights in given.items():
        column = np.zeros(model.nu)
        if isinstance(weights, Mapping):
            for actuator, w in weights.items():
                if actuator not in actuators:
                    raise ParameterError(f"input {name!r}: the model has no actuator {actuator!r} (its actuators: "
                                         f"{', '.join(a for a in actuators if a) or 'none'})")
                column[actuators[actuator]] = float(w)
        else:
            array = np.asarray(weights, dtype=float)
            if array.shape != (model.nu,):
                raise ParameterError(f"input {name!r}: weights must be a mapping actuator -> weight or an array of "
                                     f"{model.nu}, got shape {array.shape}")
            column = array.copy()
        if not np.isfinite(column).all() or not column.any():
            raise ParameterError(f"input {name!r}: its weights must be finite and not all zero")
        columns.append(column)
        names.append(str(name))
    return (np.column_stack(columns) if columns else np.zeros((model.nu, 0))), tuple(names)


@dataclass(frozen=True)
class Declared:
    """A reduction's declaration (what :meth:`Reduction.from_coordinates` was given), and where it was made.

    Attributes:
      states, holds: the coordinates, and the held ones.
      layout: ``"interleaved"`` (``[c1, c1_dot, c2, ...]``) or ``"stacked"`` (``[c1, c2, ..., c1_dot, ...]``).
      qpos, qvel, ctrl: the operating point the lift and read were made at.
      contacts: the geom pair of each contact kept (touching there), sorted; a pair touching at several points
        (a cylinder on its side rests on both rims) appears once per point.
      held: the held coordinates' values there.
      free: how many directions neither a coordinate, a held coordinate nor a constraint fixes (moved least).
    """

    states: tuple[Coordinate, ...]
    holds: tuple[Coordinate, ...]
    layout: str
    qpos: np.ndarray = field(repr=False)
    qvel: np.ndarray = field(repr=False)
    ctrl: np.ndarray = field(repr=False)
    contacts: tuple[tuple[int, int], ...] = ()
    held: tuple[float, ...] = ()
    free: int = 0

    def order(self) -> np.ndarray:
        """The reduced state's entries as positions first, then rates (indices into the reduced state)."""
        k = len(self.states)
        if self.layout == "interleaved":
            return np.concatenate([np.arange(0, 2 * k, 2), np.arange(1, 2 * k, 2)])
        return np.arange(2 * k)

    def state_names(self) -> tuple[str, ...]:
        positions = [c.name for c in self.states]
        rates = [f"{c.name}_dot" for c in self.states]
        if self.layout == "interleaved":
            return tuple(n for pair in zip(positions, rates, strict=True) for n in pair)
        return (*positions, *rates)


def _dense(model: mujoco.MjModel, data: mujoco.MjData, rows) -> np.ndarray:
    """Rows of the constraint Jacobian ``efc_J``, dense ``(len(rows), nv)``."""
    rows = list(rows)
    if not mujoco.mj_isSparse(model):
        return data.efc_J[: data.nefc * model.nv].reshape(data.nefc, model.nv)[rows].copy()
    full = np.zeros((data.nefc, model.nv))
    mujoco.mju_sparse2dense(full, data.efc_J, data.efc_J_rownnz, data.efc_J_rowadr, data.efc_J_colind)
    return full[rows]


def _equality_rows(data: mujoco.MjData) -> list[int]:
    equality = int(mujoco.mjtConstraint.mjCNSTR_EQUALITY)
    return [i for i in range(data.nefc) if int(data.efc_type[i]) == equality]


def _pair(contact) -> tuple[int, int]:
    return min(int(contact.geom[0]), int(contact.geom[1])), max(int(contact.geom[0]), int(contact.geom[1]))


def _touching(data: mujoco.MjData, pairs) -> list:
    """The contact of each kept pair in ``data`` (a pair's k-th listing its k-th contact), None where it is gone."""
    found: dict[tuple[int, int], list] = {}
    for c in data.contact[: data.ncon]:
        found.setdefault(_pair(c), []).append(c)
    out: list = []
    seen: dict[tuple[int, int], int] = {}
    for pair in pairs:
        k = seen.get(pair, 0)
        seen[pair] = k + 1
        listed = found.get(pair, [])
        out.append(listed[k] if k < len(listed) else None)
    return out


def _contact_rows(model: mujoco.MjModel, data: mujoco.MjData, pairs, sliding: bool = True) -> np.ndarray:
    """Per kept contact, the relative velocity of its two geoms at the contact point in the contact frame: the
    normal (separating), and with ``sliding`` the two tangents; ``(3 n or n, nv)``.  A kept pair not touching
    at this state is a StateError (a step or a state that broke it)."""
    rows = []
    j1, j2 = np.zeros((3, model.nv)), np.zeros((3, model.nv))
    for pair, c in zip(pairs, _touching(data, pairs), strict=True):
        if c is None:
            g1, g2 = (model.geom(g).name or f"#{g}" for g in pair)
            raise StateError(f"geoms {g1!r} and {g2!r} touched at the operating point but not here")
        b1, b2 = (int(model.geom_bodyid[int(g)]) for g in c.geom)
        mujoco.mj_jac(model, data, j1, None, c.pos, b1)
        mujoco.mj_jac(model, data, j2, None, c.pos, b2)
        frame = c.frame.reshape(3, 3)
        rows.append((frame @ (j2 - j1))[: 3 if sliding else 1])
    return np.vstack(rows) if rows else np.zeros((0, model.nv))


def _least_motion(M: np.ndarray, G: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The ``dq`` with ``G dq = rhs`` of least ``dq' M dq``: ``M^-1 G' (G M^-1 G')^+ rhs`` (redundant rows allowed)."""
    Minv_Gt = np.linalg.solve(M, G.T)
    return Minv_Gt @ np.linalg.lstsq(G @ Minv_Gt, rhs, rcond=1e-12)[0]


@dataclass
class _Frame:
    """The kept constraints, the coordinates' and held coordinates' gradients and the mass matrix at one state."""

    constraints: np.ndarray  # (r, nv): equality rows, then each contact's normal and tangents
    holds: np.ndarray  # (h, nv)
    states: np.ndarray  # (k, nv)
    mass: np.ndarray  # (nv, nv)


def _frame(model: mujoco.MjModel, data: mujoco.MjData, declared: Declared, sliding: bool = True) -> _Frame:
    qpos = data.qpos.copy()
    constraints = np.vstack([_dense(model, data, _equality_rows(data)),
                             _contact_rows(model, data, declared.contacts, sliding)])
    holds = np.array([c.gradient(model, qpos) for c in declared.holds]).reshape(-1, model.nv)
    states = np.array([c.gradient(model, qpos) for c in declared.states]).reshape(-1, model.nv)
    mass = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, mass)
    return _Frame(constraints, holds, states, mass)


def declare(model: mujoco.MjModel, states, inputs, hold=(), *, layout: str = "interleaved", keyframe=None,
            qpos=None, qvel=None, ctrl=None, settle: bool = False) -> Reduction:
    """A :class:`Reduction` from the user's coordinates (see :meth:`Reduction.from_coordinates`)."""
    if layout not in LAYOUTS:
        raise ParameterError(f"layout={layout!r}: choose {' or '.join(LAYOUTS)}")
    coords = _coordinates(model, states, "state")
    if not coords:
        raise ParameterError("states: declare at least one coordinate")
    holds = _coordinates(model, hold, "hold")
    clash = {c.name for c in coords} & {h.name for h in holds}
    if clash:
        raise ParameterError(f"{sorted(clash)[0]!r} is both a state and held: a coordinate either moves or stays")
    B_map, input_names = _inputs(model, inputs)
    op = operating_point(model, keyframe, qpos, qvel, ctrl)
    reduction = _build(model, coords, holds, layout, B_map, input_names, op)
    return _settled(model, reduction) if settle else reduction


def _settled(model: mujoco.MjModel, reduction: Reduction) -> Reduction:
    """The reduction made again with the robot lowered onto its contacts until they carry it at rest: Gauss-Newton
    on the motions that keep the coordinates, the held ones and the loop closures (their null space) until
    MuJoCo's accelerations along the contact normals vanish.  A soft contact carries a load only at some depth:
    at the 1e-9 m a pose touches with, the robot still sinks, and the sinking (1e-4 of g) leaks into a
    linearization."""
    declared = reduction.declared
    if not declared.contacts:
        raise ParameterError("settle: nothing touches at the operating point (no contact to rest on)")
    if np.any(declared.qvel):
        raise ParameterError("settle: the operating point must be at rest (qvel = 0)")
    forward = ReducedForward(tightened(model), declared, declared.qpos, declared.qvel, declared.ctrl)
    data = mujoco.MjData(model)
    data.qpos[:] = declared.qpos
    mujoco.mj_forward(model, data)
    f = _frame(model, data, declared, sliding=False)
    fixed = np.vstack([f.constraints[: f.constraints.shape[0] - len(declared.contacts)], f.holds, f.states])
    _, sv, vt = np.linalg.svd(fixed) if fixed.size else (None, np.zeros(0), np.eye(model.nv))
    rank = int(np.sum(sv > 1e-9 * sv.max(initial=1.0)))
    free = vt[rank:].T  # (nv, d): the motions nothing but the contacts resists

    def normal_accelerations(qpos) -> np.ndarray:
        qacc = forward(qpos, declared.qvel, declared.ctrl)
        data.qpos[:] = qpos
        mujoco.mj_forward(model, data)
        return _contact_rows(model, data, declared.contacts, sliding=False) @ qacc

    def moved(y) -> np.ndarray:
        out = q.copy()
        mujoco.mj_integratePos(model, out, free @ y, 1.0)
        return out

    q = declared.qpos.copy()
    for _ in range(SETTLE_ITERATIONS):
        residual = normal_accelerations(q)
        if np.abs(residual).max() <= SETTLE_TOL * float(np.linalg.norm(model.opt.gravity)):
            break
        slope = np.column_stack([(normal_accelerations(moved(e * SETTLE_STEP)) - residual) / SETTLE_STEP
                                 for e in np.eye(free.shape[1])])
        q = moved(-np.linalg.lstsq(slope, residual, rcond=1e-9)[0])
    else:
        raise StateError(f"settle: the contacts do not come to carry the robot at rest (normal accelerations "
                         f"{np.abs(residual).max():.1e} m/s^2 after {SETTLE_ITERATIONS} steps)")
    return rebuild(model, reduction, q, declared.qvel, declared.ctrl)


def rebuild(model: mujoco.MjModel, reduction: Reduction, qpos, qvel, ctrl) -> Reduction:
    """A declared reduction made again at another operating point (its input weights as given)."""
    d = reduction.declared
    op = tuple(np.asarray(a, dtype=float).copy() for a in (qpos, qvel, ctrl))
    return _build(model, d.states, d.holds, d.layout, reduction.inputs, tuple(reduction.input_names), op)


def _build(model, coords, holds, layout, B_map, input_names, op) -> Reduction:
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:], data.ctrl[:] = op
    mujoco.mj_forward(model, data)
    pairs, _ = active_constraints(model, data)
    declared = Declared(coords, holds, layout, op[0].copy(), op[1].copy(), op[2].copy(), tuple(pairs),
                        tuple(h(op[0]) for h in holds))
    lift_q, read_q, free = _lift(model, data, declared)
    declared = replace(declared, free=free)
    k, nv = len(coords), model.nv
    order = declared.order()
    lift, read = np.zeros((2 * nv, 2 * k)), np.zeros((2 * k, 2 * nv))
    for i in range(k):
        p, v = order[i], order[k + i]
        lift[:nv, p] = lift[nv:, v] = lift_q[:, i]
        read[p, :nv] = read[v, nv:] = read_q[i]
    return Reduction(lift, read, B_map, declared.state_names(), input_names, declared=declared)


def _lift(model: mujoco.MjModel, data: mujoco.MjData, declared: Declared) -> tuple[np.ndarray, np.ndarray, int]:
    """Per coordinate the least-energy motion moving it alone, ``(nv, k)``; the gradients ``(k, nv)``; the count
    of directions nothing fixes."""
    f = _frame(model, data, declared)
    k = len(declared.states)
    G = np.vstack([f.constraints, f.holds, f.states])
    rhs = np.zeros((G.shape[0], k))
    rhs[-k:] = np.eye(k)
    lift = _least_motion(f.mass, G, rhs)
    achieved = G @ lift
    scale = np.abs(G).max(initial=1.0)
    for i, c in enumerate(declared.states):
        if np.abs(achieved[:, i] - rhs[:, i]).max() > 1e-8 * scale * max(1.0, np.abs(lift[:, i]).max()):
            raise ParameterError(f"coordinate {c.name!r} cannot move while the held coordinates, the other "
                                 "coordinates and the kept constraints (loop closures, touching contacts) stay: "
                                 "it depends on them; declare another coordinate or hold fewer")
    rank = np.linalg.matrix_rank(G, tol=1e-9 * scale)
    return lift, f.states, int(model.nv - rank)


class ReducedForward:
    """MuJoCo's ``qacc`` with the held coordinates held, warm-started from the operating point.

    The holding force is ``J_h' lam`` (``J_h``: the held coordinates' gradients at the state) with ``lam`` such
    that ``J_h qacc + qvel' H_h qvel = 0``.  ``qacc`` is affine in the force while no constraint changes regime,
    so ``lam`` follows from one forward pass per held coordinate about the operating point's ``lam`` (about no
    force at all, a robot whose legs fold under it would be in another regime of its contacts).
    """

    def __init__(self, model: mujoco.MjModel, declared: Declared, qpos, qvel, ctrl):
        self.model, self.declared = model, declared
        self.data = mujoco.MjData(model)
        self.data.qpos[:], self.data.qvel[:], self.data.ctrl[:] = qpos, qvel, ctrl
        mujoco.mj_forward(model, self.data)
        self.warmstart = self.data.qacc_warmstart.copy()
        self.lam = np.zeros(len(declared.holds))
        for _ in range(3):  # from no force to the holding one: each pass lands nearer its regime
            self.qacc = self(qpos, qvel, ctrl)
            self.lam = self.last
        self.constraints = self.active

    def _forward(self, force: np.ndarray | None) -> np.ndarray:
        d = self.data
        d.qfrc_applied[:] = 0.0 if force is None else force
        d.qacc_warmstart[:] = self.warmstart
        mujoco.mj_forward(self.model, d)
        return d.qacc.copy()

    def gradients(self, qpos) -> np.ndarray:
        """The held coordinates' gradients at ``qpos``, ``(h, nv)``."""
        return np.array([h.gradient(self.model, qpos, precise=True) for h in self.declared.holds])

    def __call__(self, qpos, qvel, ctrl, gradients: np.ndarray | None = None) -> np.ndarray:
        """``qacc`` at the state; ``gradients`` the held coordinates' at ``qpos`` if known (see
        :func:`linearize_reduced`: a gradient taken anew at each perturbed state carries its round-off times the
        holding force into a difference over 1e-6)."""
        d, m = self.data, self.model
        d.qpos[:], d.qvel[:], d.ctrl[:] = qpos, qvel, ctrl
        holds = self.declared.holds
        if not holds:
            self.last = self.lam
            qacc = self._forward(None)
            self.active = active_constraints(m, d)
            return qacc
        J = self.gradients(d.qpos) if gradients is None else gradients
        bias = np.array([h.curvature(m, d.qpos, d.qvel) for h in holds])
        base = self._forward(J.T @ self.lam)
        self.active = active_constraints(m, d)
        response = np.column_stack([self._forward(J.T @ (self.lam + e)) - base for e in np.eye(len(holds))])
        step = np.linalg.solve(J @ response, -(J @ base + bias))
        self.last = self.lam + step
        d.qfrc_applied[:] = 0.0
        return base + response @ step


def tightened(model: mujoco.MjModel) -> mujoco.MjModel:
    """``model`` with the solver's tolerance at most :data:`SOLVER_TOLERANCE` (a copy when it was looser)."""
    if model.opt.tolerance <= SOLVER_TOLERANCE:
        return model
    return with_options(model, tolerance=SOLVER_TOLERANCE)


def _directions(reduction: Reduction, model: mujoco.MjModel) -> list[tuple[str, np.ndarray]]:
    """Per column of ``[A, B]``: what is perturbed (``dq``, ``dv`` or ``du``) and along what."""
    nv, out = model.nv, []
    for j in range(reduction.lift.shape[1]):
        dq, dv = reduction.lift[:nv, j], reduction.lift[nv:, j]
        out.append(("dq", dq) if np.any(dq) else ("dv", dv))
    out += [("du", reduction.inputs[:, i]) for i in range(reduction.inputs.shape[1])]
    return out


def linearize_reduced(model: mujoco.MjModel, reduction: Reduction, qpos, qvel, ctrl,
                      eps) -> Linearization:
    """``linearize`` with a declared reduction: central differences of MuJoCo's forward dynamics along each
    lift and input column, held coordinates held, read with the coordinates' gradients."""
    reduction = reduction.at(model, qpos, qvel, ctrl)
    declared = reduction.declared
    assert declared is not None  # linearize dispatches declared reductions only
    directions = _directions(reduction, model)
    eps = steps(eps, len(directions))
    forward = ReducedForward(tightened(model), declared, qpos, qvel, ctrl)
    nv = model.nv
    k2, m = reduction.lift.shape[1], reduction.inputs.shape[1]
    read_v = reduction.read[:, nv:]  # the coordinates' gradients on the rate rows
    columns, taken = [], []
    J0 = forward.gradients(qpos)
    for (what, direction), given in zip(directions, eps, strict=True):
        # The held coordinates' gradients along the direction, to first order: J0 + s dJ.  The slope dJ is
        # smooth at a long step; J0's round-off is the same on both sides and cancels in the difference.
        dJ = np.zeros_like(J0)
        if what == "dq" and J0.size:
            q_plus, q_minus = qpos.copy(), qpos.copy()
            mujoco.mj_integratePos(model, q_plus, direction, HOLD_STEP)
            mujoco.mj_integratePos(model, q_minus, direction, -HOLD_STEP)
            dJ = (forward.gradients(q_plus) - forward.gradients(q_minus)) / (2 * HOLD_STEP)

        def at(sign: float, h: float, what=what, direction=direction, dJ=dJ) -> np.ndarray:
            q, v, u = qpos.copy(), qvel.copy(), ctrl.copy()
            if what == "dq":
                mujoco.mj_integratePos(model, q, direction, sign * h)
            elif what == "dv":
                v += sign * h * direction
            else:
                u += sign * h * direction
            return forward(q, v, u, J0 + sign * h * dJ)

        h = EPS if given is None else given
        while True:  # as linearize: the longest step that makes or breaks no constraint
            plus = at(1.0, h)
            same = forward.active == forward.constraints
            minus = at(-1.0, h)
            same = same and forward.active == forward.constraints
            if same or given is not None or h / 10 < EPS_MIN:
                break
            h /= 10
        dqacc = (plus - minus) / (2 * h)
        if what == "du":
            columns.append(read_v @ dqacc)
        else:
            columns.append(reduction.read @ np.concatenate([direction if what == "dv" else np.zeros(nv), dqacc]))
        taken.append(h)
    A = np.column_stack(columns[:k2])
    B = np.column_stack(columns[k2:]) if m else np.zeros((k2, 0))
    return Linearization(A, B, tuple(reduction.state_names), tuple(reduction.input_names), qpos, qvel, ctrl,
                         forward.qacc, float(model.opt.timestep), int(model.opt.integrator), None, model,
                         reduction=reduction, steps=np.array(taken))


def _distances(model: mujoco.MjModel, pairs) -> tuple[Coordinate, ...]:
    """Each kept pair's signed distance as a coordinate (what keeps a contact as deep as it was)."""
    data = mujoco.MjData(model)

    def distance(q, pair):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        return mujoco.mj_geomDistance(model, data, pair[0], pair[1], DISTANCE_MAX, None)

    return tuple(Coordinate(f"contact {pair}", functools.partial(distance, pair=pair)) for pair in pairs)


def place(model: mujoco.MjModel, reduction: Reduction, state) -> tuple[np.ndarray, np.ndarray]:
    """``(qpos, qvel)`` at which the reduction's coordinates and rates are ``state`` ``(2k,)`` (its order), the held
    coordinates at their operating-point values and every kept constraint as there (loop closures closed,
    contacts as deep and neither sliding nor separating); the rest moved least from the operating point.

    Raises:
      ParameterError: a reduction given as matrices.
      StateError: no such pose (the constraints and coordinates cannot all hold: a state too far out).
    """
    declared = reduction.declared
    if declared is None:
        raise ParameterError("place() needs a reduction declared with Reduction.from_coordinates")
    state = np.asarray(state, dtype=float)
    k = len(declared.states)
    order = declared.order()
    target_q, target_v = state[order[:k]], state[order[k:]]
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:], data.ctrl[:] = declared.qpos, declared.qvel, declared.ctrl
    mujoco.mj_forward(model, data)
    equality = _equality_rows(data)
    kept = (*_distances(model, declared.contacts), *declared.holds, *declared.states)
    targets = np.concatenate([data.efc_pos[equality], [c(declared.qpos) for c in kept[: len(declared.contacts)]],
                              declared.held, target_q])
    start_q = np.array([c(declared.qpos) for c in declared.states])
    q = declared.qpos.copy()
    mujoco.mj_integratePos(model, q, reduction.lift[: model.nv, order[:k]] @ (target_q - start_q), 1.0)
    mass = np.zeros((model.nv, model.nv))
    for _ in range(PLACE_ITERATIONS):
        data.qpos[:] = q
        mujoco.mj_forward(model, data)
        residual = np.concatenate([data.efc_pos[equality], [c(q) for c in kept]]) - targets
        if np.abs(residual).max() < PLACE_TOL:
            break
        mujoco.mj_fullM(model, data, mass)
        G = np.vstack([_dense(model, data, equality), [c.gradient(model, q) for c in kept]])
        mujoco.mj_integratePos(model, q, _least_motion(mass, G, -residual), 1.0)
    else:
        raise StateError(f"no pose has the coordinates at {np.round(target_q, 6).tolist()} with the operating "
                         f"point's constraints kept (residual {np.abs(residual).max():.1e} after "
                         f"{PLACE_ITERATIONS} steps): a state too far from it")
    if len(active_constraints(model, data)[0]) < len(declared.contacts):
        raise StateError(f"at the coordinates {np.round(target_q, 6).tolist()} a contact of the operating point "
                         "is no longer touching")
    f = _frame(model, data, declared)
    G = np.vstack([f.constraints, f.holds, f.states])
    rhs = np.concatenate([np.zeros(G.shape[0] - k), target_v])
    return q, _least_motion(f.mass, G, rhs)


class Constrained:
    """The reduction's constraints made ideal: ``qacc`` of MuJoCo's rigid-body dynamics with every kept loop
    closure closed, every kept contact rolling (its point neither separating nor sliding) and every held
    coordinate held, each exactly: ``M qacc = f + G' lam``, ``G qacc + dG/dt qvel = 0``.

    ``M`` and ``f = qfrc_smooth`` (actuation, gravity and velocity terms, passive forces) come from ``truth``
    (:func:`~crossdyn.experiments.core.truth.truth_model`: the dynamics mode's copy); the constraint rows
    ``G`` from ``model`` as it comes (its contacts found there), their ``dG/dt qvel`` by central differences
    along ``qvel``.  MuJoCo's soft constraints leave out ``dG/dt qvel`` (a rolling wheel's centripetal terms)
    and let a fraction of what they resist through, so at speed its simulated accelerations differ from these
    by up to 1e-2.
    """

    def __init__(self, model: mujoco.MjModel, truth: mujoco.MjModel, declared: Declared):
        self.model, self.truth, self.declared = model, truth, declared
        self.data, self.smooth = mujoco.MjData(model), mujoco.MjData(truth)
        self.mass = np.zeros((model.nv, model.nv))

    def _rows(self, qpos, qvel) -> tuple[np.ndarray, np.ndarray]:
        """The constraint rows at ``qpos``, ``(r, nv)``, and the holds' curvature terms ``dG/dt qvel`` (the other
        rows' zero here), ``(r,)``."""
        d, m = self.data, self.model
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(m, d)
        eq = _equality_rows(d)
        rows = np.vstack([_dense(m, d, eq), _contact_rows(m, d, self.declared.contacts)])
        holds = np.array([h.gradient(m, qpos) for h in self.declared.holds]).reshape(-1, m.nv)
        bias = np.array([h.curvature(m, qpos, qvel) for h in self.declared.holds])
        return np.vstack([rows, holds]), np.concatenate([np.zeros(rows.shape[0]), bias])

    def __call__(self, qpos, qvel, ctrl) -> np.ndarray:
        m, s = self.model, self.smooth
        s.qpos[:], s.qvel[:], s.ctrl[:] = qpos, qvel, ctrl
        mujoco.mj_forward(self.truth, s)
        mujoco.mj_fullM(self.truth, s, self.mass)
        free = np.linalg.solve(self.mass, s.qfrc_smooth)
        G, bias = self._rows(qpos, qvel)
        speed = float(np.abs(qvel).max(initial=0.0))
        if speed > 0:  # dG/dt qvel of the closures and contacts (the holds' is their curvature)
            h = STEP / speed
            sides = []
            for sign in (1.0, -1.0):
                q = np.array(qpos, dtype=float)
                mujoco.mj_integratePos(m, q, qvel, sign * h)
                sides.append(self._rows(q, qvel)[0] @ qvel)
            n = G.shape[0] - len(self.declared.holds)
            bias[:n] = (sides[0][:n] - sides[1][:n]) / (2 * h)
        Minv_Gt = np.linalg.solve(self.mass, G.T)
        lam = np.linalg.lstsq(G @ Minv_Gt, -(G @ free + bias), rcond=1e-12)[0]
        return free + Minv_Gt @ lam


def rates(model: mujoco.MjModel, reduction: Reduction, qpos, qvel, qacc) -> np.ndarray:
    """The coordinates' accelerations ``J qacc + qvel' H qvel`` at a state, ``(k,)`` in declaration order."""
    declared = reduction.declared
    assert declared is not None
    return np.array([c.gradient(model, qpos) @ qacc + c.curvature(model, qpos, qvel) for c in declared.states])


@dataclass(frozen=True)
class Reduction:
    """A hand model's reduced state and input, mapped onto the model's: ``A_r = read A lift``, ``B_r = read B inputs``,
    with ``lift (2nv, k)``, ``read (k, 2nv)`` (``read lift = I``), ``inputs (nu, m)``, and ``k`` ``state_names``
    and ``m`` ``input_names``.

    Given as matrices, it reduces MuJoCo's full linearization.  Declared with :meth:`from_coordinates`, crossdyn
    makes the matrices at an operating point and ``linearize`` differentiates along the lifts themselves
    (:attr:`declared` holds the declaration; the rest of this module is the machinery)."""

    lift: np.ndarray
    read: np.ndarray
    inputs: np.ndarray
    state_names: tuple[str, ...]
    input_names: tuple[str, ...]
    declared: Any = field(default=None, repr=False, compare=False)  # a Declared, when made from coordinates

    @classmethod
    def from_coordinates(cls, model: mujoco.MjModel, *, states, inputs, hold=(), layout: str = "interleaved",
                         keyframe: str | int | None = None, qpos=None, qvel=None, ctrl=None,
                         settle: bool = False) -> Reduction:
        """Declare a reduced model in your own coordinates; crossdyn finds the motions that keep the model's
        constraints.

        Args:
          model: the compiled model.
          states: ``{name: f}`` with ``f(qpos) -> float`` your coordinate (or a hinge or slide joint's name
            for ``f``); each one's rate, ``name_dot``, is its derivative along ``qvel``.
          inputs: ``{name: {actuator: weight}}``: input ``name`` sets each actuator's control by ``weight``
            times its value (``{"T": {"left_wheel": 0.5, "right_wheel": 0.5}}``: ``T`` the wheels' sum).
          hold: coordinates that stay fixed, as ``states`` (``{"left_leg": f}`` or joint names), held by a
            force along their gradient that keeps them exactly, as an ideal actuator would.
          layout: ``"interleaved"`` (``[c1, c1_dot, c2, c2_dot, ...]``) or ``"stacked"``
            (``[c1, c2, ..., c1_dot, c2_dot, ...]``).
          keyframe, qpos, qvel, ctrl: the operating point the matrices are made at (as ``linearize`` takes it;
            ``linearize`` at another point makes them again there).
          settle: first lower the robot onto its contacts until they carry it at rest (a pose touching the
            floor at 1e-9 m still sinks on MuJoCo's soft contacts, by 1e-4 of g, and that shows in a
            linearization); the point then used is ``reduction.declared.qpos``.

        Every loop closure and every contact touching at the operating point is kept: a lift moves one
        coordinate by a unit, the others and the held ones not at all, closing the loops and rolling the
        contacts (their points neither separate nor slide), with the least kinetic energy where a direction is
        left free.

        Raises:
          ParameterError: an unknown joint or actuator, a coordinate that cannot move alone, a bad layout,
            ``settle`` with nothing touching.
          StateError: ``settle`` finds no rest.
        """
        return declare(model, states, inputs, hold, layout=layout, keyframe=keyframe, qpos=qpos, qvel=qvel,
                       ctrl=ctrl, settle=settle)

    def at(self, model: mujoco.MjModel, qpos, qvel, ctrl) -> Reduction:
        """This reduction made at another operating point (a declared one; matrices stay as given)."""
        d = self.declared
        if d is None or (np.array_equal(d.qpos, qpos) and np.array_equal(d.qvel, qvel)
                         and np.array_equal(d.ctrl, ctrl)):
            return self

        return rebuild(model, self, qpos, qvel, ctrl)

    def order(self) -> np.ndarray:
        """Indices of the reduced state's positions, then of their rates (a declared reduction's layout).

        Raises:
          ParameterError: a reduction given as matrices (which entries are positions is not known).
        """
        if self.declared is None:
            raise ParameterError("a Reduction given as matrices does not say which states are positions; declare it "
                                 "with Reduction.from_coordinates")
        return self.declared.order()

    def linearized(self, model: mujoco.MjModel, qpos, qvel, ctrl, eps) -> Linearization:
        """``linearize`` in this declared reduction's coordinates (:func:`linearize_reduced`)."""
        return linearize_reduced(model, self, qpos, qvel, ctrl, eps)

    def apply(self, A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.read @ A @ self.lift, self.read @ B @ self.inputs

    def validate(self, nv: int, nu: int) -> None:
        k, m = len(self.state_names), len(self.input_names)
        for name, array, shape in (("lift", self.lift, (2 * nv, k)), ("read", self.read, (k, 2 * nv)),
                                   ("inputs", self.inputs, (nu, m))):
            if np.shape(array) != shape:
                raise ParameterError(f"Reduction.{name} must have shape {shape} for this model, got "
                                     f"{np.shape(array)}")
        if not np.allclose(self.read @ self.lift, np.eye(k), atol=1e-12):
            raise ParameterError("Reduction: read @ lift must be the identity (reading a lifted state gives it back)")
