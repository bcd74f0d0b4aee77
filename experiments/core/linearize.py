"""Linearize any MuJoCo model about an operating point, and find the control that holds a pose.

:func:`linearize` returns ``d/dt [dq, dqd] = A [dq, dqd] + B du`` (``A (2nv, 2nv)``,
``B (2nv, nu)``) of MuJoCo's forward dynamics about ``(qpos, qvel, ctrl)``, with
``dq`` the tangent-space deviation ``mj_differentiatePos`` gives and ``du = ctrl -
ctrl_op``.  The velocity rows are central differences of ``qacc`` from
``mj_forward`` (positions perturbed with ``mj_integratePos`` as
``mjd_transitionFD`` does, the solver warm-started from the operating point so
contacts differentiate smoothly); the position rows are ``d(dq)/dt = dqd``, exact
at rest.  :func:`holding_control` solves ``mj_inverse`` for the control that
keeps a pose at rest.  ``lin.ss()`` is a ``control.StateSpace``, so
``control.lqr(lin.ss(), Q, R)`` designs a regulator, as MuJoCo's LQR tutorial does.

A model whose actuators act late (MuJoCo's actuator ``delay``, with its ``nsample``
history) is differentiated with the delay taken out, so ``B`` is what a command does
once it arrives (with the delay in, a command changes nothing now and ``B`` would be 0),
and :attr:`Linearization.delay` says how late it arrives.  A continuous state space has no
finite state for a delay, so ``ss()`` refuses such a model; :meth:`Linearization.discrete`
carries the delay as states (the commands in flight), and ``regulator(dt=)`` designs for it.
"""

from __future__ import annotations

import copy
import functools
import math
import os
from dataclasses import dataclass, field, replace
from typing import Any

import mujoco
import numpy as np

from .checks.names import dof_names
from .errors import ModelError, ParameterError, StateError
from .limits import EPS_MAX, EPS_MIN
from .models import as_model, with_options

__all__ = ["Linearization", "linearize", "holding_control", "operating_point", "check_quaternions", "keyframe_id",
           "state_vector", "active_constraints", "steps", "native_delay", "arrival_delay", "undelayed",
           "hold_with_delay", "EPS", "HOLD_RTOL"]

# Finite-difference step on state and control: central differences err by
# ~EPS^2 |f'''| (1e-12) and round-off ~1e-16 |qacc| / EPS (1e-10 of the scale).
EPS = 1e-6
# A pose is held when the actuators reproduce mj_inverse's generalized force to
# this fraction of its size (least-squares round-off is ~1e-15 of it).
HOLD_RTOL = 1e-8


@dataclass(frozen=True)
class Linearization:
    """A continuous-time linearization ``d/dt x = A x + B u`` about an operating point.

    Attributes:
      A: ``(2 nv, 2 nv)``; the state is ``x = [dq, dqd]`` (tangent-space position
        deviation, then velocity deviation).
      B: ``(2 nv, nu)``; the input is ``u = ctrl - ctrl_op``.
      state_names: ``2 nv`` names: each dof's name (``cart``; ``root.x`` ...
        ``root.rz`` for a free joint), then the same with ``_dot``.
      input_names: the ``nu`` actuator names.
      qpos, qvel, ctrl: the operating point, ``(nq,)``, ``(nv,)``, ``(nu,)``.
      qacc: MuJoCo's acceleration there, ``(nv,)``; zero at an equilibrium.
      timestep: the model's time step, s (the default of :meth:`discrete`).
      integrator: the model's integrator (``mujoco.mjtIntegrator``).
    """

    A: np.ndarray
    B: np.ndarray
    state_names: tuple[str, ...]
    input_names: tuple[str, ...]
    qpos: np.ndarray
    qvel: np.ndarray
    ctrl: np.ndarray
    qacc: np.ndarray
    timestep: float
    integrator: int
    # (nv, nv): the matrix K the integrator's velocity update solves with, v+ = v + h (I - h K)^-1 a
    # (implicit joint damping of Euler, smooth-force velocity derivatives of the implicit integrators).
    implicit: np.ndarray | None = field(default=None, repr=False)
    # The model, to measure deviations (mj_differentiatePos); not compared.
    model: mujoco.MjModel | None = field(default=None, repr=False, compare=False)
    # The reduction the state and input are in (None: MuJoCo's own [dq, dqd] and ctrl), and the
    # finite-difference step each column of [A, B] was taken with (linearize fills it).
    reduction: Any = field(default=None, repr=False, compare=False)
    steps: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False, compare=False)
    # How late every command reaches its actuator, s (MuJoCo's actuator delay, :func:`native_delay`); 0: at once.
    delay: float = 0.0

    @property
    def nv(self) -> int:
        return self.A.shape[0] // 2

    @property
    def nu(self) -> int:
        return self.B.shape[1]

    def deviation(self, qpos, qvel) -> np.ndarray:
        """The state ``[dq, dqd]`` of ``(qpos (nq,), qvel (nv,))``, ``(2 nv,)``: what ``A`` acts on (with a
        reduction, the reduction's state to first order: ``read [dq, dqd]``)."""
        qpos, qvel = np.asarray(qpos, dtype=float), np.asarray(qvel, dtype=float)
        if self.plain:
            dq = qpos - self.qpos
        else:
            assert self.model is not None  # not plain: a model with quaternions
            dq = np.empty(self.model.nv)
            mujoco.mj_differentiatePos(self.model, dq, 1.0, self.qpos, qpos)
        full = np.concatenate([dq, qvel - self.qvel])
        return full if self.reduction is None else self.reduction.read @ full

    @functools.cached_property
    def plain(self) -> bool:
        """True when the position deviation is ``qpos - qpos_op`` (hinges and slides only), decided once."""
        return self.model is None or self.model.nq == self.model.nv and not _has_quaternions(self.model)

    def ss(self):
        """The linearization as a python-control ``StateSpace`` with full state output.

        Signal names are :attr:`state_names` and :attr:`input_names` with ``.``
        replaced by ``_`` (python-control reserves ``.`` for ``system.signal``).
        """
        if self.delay:
            raise ParameterError(f"the model's actuators act {1e3 * self.delay:.4g} ms late (MuJoCo's actuator delay): "
                                 "a continuous state space has no finite state for a delay; discrete(dt) carries "
                                 "the commands in flight as states, and regulator(..., dt=) designs for them")
        import control  # late: python-control's import (SciPy's signal and stats) costs every command

        states = [name.replace(".", "_") for name in self.state_names]
        return control.ss(self.A, self.B, np.eye(2 * self.nv), np.zeros((2 * self.nv, self.nu)),
                          states=states, outputs=states,
                          inputs=[name.replace(".", "_") for name in self.input_names])

    def discrete(self, dt: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """One step of the model's integrator applied to the linear system: ``(Ad, Bd)``.

        Velocities: ``dv+ = dv + h G (A_v x + B_v u)``, ``G = (I - h K)^-1`` the
        integrator's implicit part; positions: ``dq+ = dq + h dv+``; RK4: its
        four-stage Taylor polynomial.  At an equilibrium this is MuJoCo's one-step
        transition, which ``mjd_transitionFD`` measures.

        With an actuator delay (:attr:`delay`) it is the exact hold of the linear system instead
        (:func:`hold_with_delay`): the state grows by the commands in flight, ``[x, u(k - r), ...,
        u(k - 1)]`` (``r`` periods, one more than the delay's whole periods when it has a fraction).

        Args:
          dt: the step, s (default: the model's time step).

        Returns:
          ``(Ad, Bd)``: ``(2 nv, 2 nv)`` and ``(2 nv, nu)``; with a delay ``(2 nv + r nu, ...)`` and ``(..., nu)``.

        Raises:
          ParameterError: ``dt`` is not positive, or the integrator is not Euler, RK4 or implicit(fast).
        """
        h = self.timestep if dt is None else float(dt)
        if not h > 0 or not np.isfinite(h):
            raise ParameterError(f"dt must be a positive time step, got {dt!r}")
        if self.delay:
            return hold_with_delay(self.A, self.B, h, self.delay)
        if self.reduction is not None:  # the reduction's order: positions first, as the integrator steps them
            order = self.reduction.order()
            back = np.argsort(order)
            stacked = replace(self, A=self.A[np.ix_(order, order)], B=self.B[order], reduction=None, implicit=None)
            Ad, Bd = stacked.discrete(h)
            return Ad[np.ix_(back, back)], Bd[back]
        n, A, B = self.nv, self.A, self.B
        kind = mujoco.mjtIntegrator(self.integrator)
        if kind == mujoco.mjtIntegrator.mjINT_RK4:
            step = h * A
            power, Ad, Bsum = np.eye(2 * n), np.eye(2 * n), np.zeros_like(A)
            for k in range(1, 5):
                Bsum += power / np.prod(range(1, k + 1))
                power = power @ step
                Ad += power / np.prod(range(1, k + 1))
            return Ad, h * Bsum @ B
        if kind not in (mujoco.mjtIntegrator.mjINT_EULER, mujoco.mjtIntegrator.mjINT_IMPLICIT,
                        mujoco.mjtIntegrator.mjINT_IMPLICITFAST):
            raise ParameterError(f"discrete() knows Euler, RK4, implicit and implicitfast, not {kind.name}")
        G = np.eye(n) if self.implicit is None else np.linalg.inv(np.eye(n) - h * self.implicit)
        Av, Bv = G @ A[n:], G @ B[n:]
        Ad = np.zeros_like(A)
        Ad[n:] = h * Av
        Ad[n:, n:] += np.eye(n)
        Ad[:n] = h * Ad[n:]
        Ad[:n, :n] += np.eye(n)
        Bd = np.zeros_like(B)
        Bd[n:] = h * Bv
        Bd[:n] = h * Bd[n:]
        return Ad, Bd


def _has_quaternions(model: mujoco.MjModel) -> bool:
    return bool(np.isin(model.jnt_type, (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL)).any())


def keyframe_id(model: mujoco.MjModel, keyframe: str | int) -> int:
    """The index of ``keyframe`` (a name or an index) in ``model``.

    Raises:
      ParameterError: no such keyframe (the message lists the model's).
    """
    if isinstance(keyframe, (int, np.integer)) and not isinstance(keyframe, bool):
        if not 0 <= keyframe < model.nkey:
            raise ParameterError(f"keyframe {keyframe} out of range: the model has {model.nkey} keyframe(s)")
        return int(keyframe)
    key = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, str(keyframe))
    if key < 0:
        names = [model.key(k).name or f"#{k}" for k in range(model.nkey)]
        raise ParameterError(f"no keyframe {keyframe!r} in the model (it has: {', '.join(names) or 'none'})")
    return key


def state_vector(name: str, value, size: int) -> np.ndarray:
    """``value`` as a state of ``size`` finite numbers, ``(size,)`` (``name`` is what the errors call it).

    Raises:
      StateError: the wrong size or a non-finite entry.
    """
    array = np.asarray(value, dtype=float).reshape(-1) if np.ndim(value) else np.full(1, float(value))
    if array.shape != (size,):
        raise StateError(f"{name} must have {size} entries for this model, got shape {np.shape(value)}")
    if not np.isfinite(array).all():
        raise StateError(f"{name} has a non-finite entry: {array}")
    return array


def check_quaternions(model: mujoco.MjModel, qpos: np.ndarray, name: str = "qpos") -> None:
    """Refuse a free or ball joint whose quaternion in ``qpos`` ``(nq,)`` is all zero (no rotation at all).

    MuJoCo would quietly turn it into the identity; any other length is normalized, as MuJoCo does.

    Raises:
      StateError: naming the joint and its entries.
    """
    for j in range(model.njnt):
        kind = int(model.jnt_type[j])
        if kind not in (int(mujoco.mjtJoint.mjJNT_FREE), int(mujoco.mjtJoint.mjJNT_BALL)):
            continue
        start = int(model.jnt_qposadr[j]) + (3 if kind == int(mujoco.mjtJoint.mjJNT_FREE) else 0)
        if not np.any(qpos[start:start + 4]):
            joint = model.joint(j).name or f"#{j}"
            raise StateError(f"{name}[{start}:{start + 4}], the quaternion of joint {joint!r}, is all zero; a "
                             "rotation needs a non-zero quaternion (1 0 0 0 for none)")


def operating_point(model: mujoco.MjModel, keyframe: str | int | None = None, qpos=None, qvel=None,
                    ctrl=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(qpos (nq,), qvel (nv,), ctrl (nu,))``: a keyframe's (else ``qpos0``, rest, zero), overridden by what is given.

    ``ctrl="hold"`` is :func:`holding_control` at that pose.

    Raises:
      ParameterError: unknown keyframe; StateError: wrong size or non-finite entries;
      ModelError: ``ctrl="hold"`` and no control holds the pose.
    """
    if keyframe is not None:
        key = model.key(keyframe_id(model, keyframe))
        q0, v0, u0 = key.qpos.copy(), key.qvel.copy(), key.ctrl.copy()
    else:
        q0, v0, u0 = model.qpos0.copy(), np.zeros(model.nv), np.zeros(model.nu)
    q0 = q0 if qpos is None else state_vector("qpos", qpos, model.nq)
    v0 = v0 if qvel is None else state_vector("qvel", qvel, model.nv)
    if isinstance(ctrl, str):
        if ctrl != "hold":
            raise ParameterError(f"ctrl={ctrl!r}: give an array of {model.nu} controls or 'hold'")
        u0 = holding_control(model, qpos=q0)
    elif ctrl is not None:
        u0 = state_vector("ctrl", ctrl, model.nu)
    check_quaternions(model, q0)
    return q0, v0, u0


def _names(model: mujoco.MjModel) -> tuple[tuple[str, ...], tuple[str, ...]]:
    dofs = dof_names(model)
    inputs = tuple(model.actuator(i).name or f"actuator{i}" for i in range(model.nu))
    return (*dofs, *(f"{name}_dot" for name in dofs)), inputs


def active_constraints(model: mujoco.MjModel, data: mujoco.MjData) -> tuple:
    """What ``data``'s last ``mj_forward`` made of the constraints, to compare two states by: each active
    contact (its geom pair) and every constraint row's regime (``efc_state``: satisfied, quadratic, on the
    friction cone ...), equality rows excepted (always there, always quadratic).  Two states with the same
    answer lie in one smooth piece of MuJoCo's dynamics; a finite difference across two pieces is no slope."""
    pairs = sorted((min(int(c.geom[0]), int(c.geom[1])), max(int(c.geom[0]), int(c.geom[1])))
                   for c in data.contact[: data.ncon] if c.efc_address >= 0)
    equality = int(mujoco.mjtConstraint.mjCNSTR_EQUALITY)
    rows = tuple(int(s) for t, s in zip(data.efc_type[: data.nefc], data.efc_state[: data.nefc], strict=True)
                 if int(t) != equality)
    return tuple(pairs), rows


class _Forward:
    """``qacc`` and ``qacc_smooth`` of ``model`` at perturbed states, warm-started from the operating point."""

    def __init__(self, model: mujoco.MjModel, qpos, qvel, ctrl):
        self.model, self.data = model, mujoco.MjData(model)
        self.qpos, self.qvel, self.ctrl = qpos, qvel, ctrl
        self.data.qpos[:], self.data.qvel[:], self.data.ctrl[:] = qpos, qvel, ctrl
        mujoco.mj_forward(model, self.data)
        self.warmstart = self.data.qacc_warmstart.copy()
        self.qacc = self.data.qacc.copy()
        self.active = self.constraints = active_constraints(model, self.data)

    def __call__(self, dq=None, dv=None, du=None) -> tuple[np.ndarray, np.ndarray]:
        d = self.data
        d.qpos[:] = self.qpos
        if dq is not None:
            mujoco.mj_integratePos(self.model, d.qpos, dq, 1.0)
        d.qvel[:] = self.qvel if dv is None else self.qvel + dv
        d.ctrl[:] = self.ctrl if du is None else self.ctrl + du
        d.qacc_warmstart[:] = self.warmstart
        mujoco.mj_forward(self.model, d)
        self.active = active_constraints(self.model, d)
        return d.qacc.copy(), d.qacc_smooth.copy()

    def derivative(self, what: str, i: int, size: int, eps: float | None) -> tuple[np.ndarray, np.ndarray, float]:
        """Central differences of ``(qacc, qacc_smooth)`` along unit vector ``i`` of ``what``, and the step taken:
        ``eps``, or (None) the longest of :data:`EPS`, a tenth of it ... that makes or breaks no constraint."""
        step = np.zeros(size)
        h = EPS if eps is None else eps
        while True:
            step[i] = h
            plus = self(**{what: step})
            same = self.active == self.constraints
            minus = self(**{what: -step})
            same = same and self.active == self.constraints
            if same or eps is not None or h / 10 < EPS_MIN:
                return (plus[0] - minus[0]) / (2 * h), (plus[1] - minus[1]) / (2 * h), h
            h /= 10


def steps(eps, directions: int) -> list[float | None]:
    """``eps`` as one step per direction: None (chosen), a step in ``(0, EPS_MAX]``, or one such per direction.

    Raises:
      ParameterError: a step out of range, or a list of the wrong length.
    """
    if eps is None:
        return [None] * directions
    if isinstance(eps, (list, tuple, np.ndarray)):
        values = list(np.ravel(np.asarray(eps, dtype=float))) if np.size(eps) else []
        if len(values) != directions:
            raise ParameterError(f"eps: give one step, or one per direction ({directions} here), got {len(values)}")
        return [_one_step(v) for v in values]
    return [_one_step(eps)] * directions


def _one_step(eps) -> float:
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.integer, np.floating)) or not 0 < eps <= EPS_MAX:
        raise ParameterError(f"eps must be a finite step in (0, {EPS_MAX:g}], got {eps!r}")
    return float(eps)


def linearize(model: mujoco.MjModel | str | os.PathLike, keyframe: str | int | None = None, qpos=None,
              qvel=None, ctrl=None, *, eps=None, reduction=None) -> Linearization:
    """The continuous-time linearization of ``model`` about an operating point.

    Args:
      model: a compiled model, or a built-in name or MJCF/URDF path.
      keyframe: a keyframe's name or index giving ``qpos``, ``qvel`` and ``ctrl``.
      qpos, qvel: ``(nq,)``, ``(nv,)`` (override the keyframe's; default ``qpos0`` at rest).
      ctrl: ``(nu,)`` (default: the keyframe's, or zero); ``"hold"`` for :func:`holding_control`.
      eps: finite-difference step on positions (rad or m), velocities and controls, in ``(0, EPS_MAX]``, or
        one per direction (as :attr:`Linearization.steps` lists them: each dof's position, each velocity, each
        control; with a declared reduction each of its states, then its inputs); default None: :data:`EPS`
        per direction, cut by tenths (to :data:`EPS_MIN`) while it makes or breaks a constraint
        (:func:`active_constraints`).
      reduction: a :class:`~crossdyn.experiments.core.reduction.Reduction`: ``A``, ``B`` in its
        state and input.  One declared with ``Reduction.from_coordinates`` is differentiated along its own
        perturbations (its constraints and held coordinates kept); one given as matrices reduces the full
        linearization (``read A lift``, ``read B inputs``).

    Returns:
      The :class:`Linearization`: ``A (2nv, 2nv)``, ``B (2nv, nu)`` (``(2k, 2k)``, ``(2k, m)`` with a reduction).

    Raises:
      ModelError: the model has activation states (``na > 0``), or cannot be loaded;
      ParameterError: unknown keyframe, a bad ``eps``, or a reduction that does not fit the model;
      StateError: a wrong-sized or non-finite operating point, or an all-zero quaternion.
    """
    model = as_model(model)
    if model.na:
        raise ModelError(f"the model has {model.na} actuator activation state(s) (dyntype filter, integrator or "
                         "muscle): linearize covers the state [dq, dqd] only")
    if native_delay(model):
        delays = {float(d) for d in model.actuator_delay}
        if len(delays) > 1:
            shown = ", ".join(f"{1e3 * d:g} ms" for d in sorted(delays))
            raise ModelError(f"the model's actuators have different delays ({shown}): linearize carries one delay "
                             "for all commands; give them one")
        lin = linearize(undelayed(model), keyframe, qpos, qvel, ctrl, eps=eps, reduction=reduction)
        return replace(lin, delay=arrival_delay(model, lin.qpos, lin.ctrl))
    declared = reduction is not None and reduction.declared is not None
    each = [] if declared else steps(eps, 2 * model.nv + model.nu)
    qpos, qvel, ctrl = operating_point(model, keyframe, qpos, qvel, ctrl)
    if declared:  # the reduction differentiates along its own lifts (reduction.py builds on this module)
        return reduction.linearized(model, qpos, qvel, ctrl, eps)
    nv, nu = model.nv, model.nu
    forward = _Forward(model, qpos, qvel, ctrl)
    A, B = np.zeros((2 * nv, 2 * nv)), np.zeros((2 * nv, nu))
    A[:nv, nv:] = np.eye(nv)
    smooth_v = np.zeros((nv, nv))
    taken = np.zeros(2 * nv + nu)
    for i in range(nv):
        A[nv:, i], _, taken[i] = forward.derivative("dq", i, nv, each[i])
        A[nv:, nv + i], smooth_v[:, i], taken[nv + i] = forward.derivative("dv", i, nv, each[nv + i])
    for i in range(nu):
        B[nv:, i], _, taken[2 * nv + i] = forward.derivative("du", i, nu, each[2 * nv + i])
    states, inputs = _names(model)
    lin = Linearization(A, B, states, inputs, qpos, qvel, ctrl, forward.qacc, float(model.opt.timestep),
                        int(model.opt.integrator), _implicit_part(model, forward, smooth_v), model, steps=taken)
    if reduction is None:
        return lin
    reduction.validate(nv, nu)
    A_r, B_r = reduction.apply(A, B)
    # The steps of the directions the reduction combines: its lift's states and its inputs' controls.
    used = np.concatenate([taken[: 2 * nv][np.abs(reduction.lift).max(axis=1, initial=0.0) > 0],
                           taken[2 * nv :][np.abs(reduction.inputs).max(axis=1, initial=0.0) > 0]])
    return replace(lin, A=A_r, B=B_r, state_names=tuple(reduction.state_names),
                   input_names=tuple(reduction.input_names), implicit=None, reduction=reduction, steps=used)


def native_delay(model: mujoco.MjModel) -> float:
    """How late the model's actuators act on a command (s): MuJoCo's actuator ``delay``, as a rollout applies it.

    MuJoCo's actuator ``delay`` D reads the command history at the time MuJoCo evaluates
    the actuator: with RK4 the middle of the step, so its commands act D - dt/2 late
    relative to the step they were sent in; with the other integrators the step's start,
    D late.  The largest over the actuators.
    """
    if model.nu == 0 or not np.any(model.actuator_delay > 0):
        return 0.0
    half = model.opt.timestep / 2 if model.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4 else 0.0
    return max(float(np.max(model.actuator_delay)) - half, 0.0)


def arrival_delay(model: mujoco.MjModel, qpos: np.ndarray, ctrl: np.ndarray) -> float:
    """How late a command acts in MuJoCo's own steps, measured (s): the mean step at which a one-step impulse of
    the first command changes the velocities, with the delay less without it, times the step.

    MuJoCo's history is read at each stage of the integrator: with RK4 a command sent ``d`` steps of
    ``h`` before acts one sixth of it a step early (the last stage reads ``t + h - D``), so it arrives
    ``D - h/6`` late on average; with Euler ``D``.  A linear model that holds each command for a
    fraction of the step accordingly (:func:`hold_with_delay`) reproduces those steps.
    """
    def mean_step(m: mujoco.MjModel) -> float:
        data = mujoco.MjData(m)
        for _ in range(int(m.actuator_history[:, 0].max(initial=0)) + 2):  # the history full of the operating point
            data.qpos[:], data.qvel[:], data.ctrl[:] = qpos, 0.0, ctrl
            mujoco.mj_step(m, data)
        data.qpos[:], data.qvel[:] = qpos, 0.0
        steps = int(round(float(m.actuator_delay.max(initial=0.0)) / m.opt.timestep)) + 4
        runs = []
        for kick in (1e-3 * max(1.0, float(np.abs(ctrl).max(initial=0.0))), 0.0):
            run = copy.copy(data)
            velocity = []
            for n in range(steps):
                run.ctrl[:] = ctrl
                run.ctrl[0] += kick if n == 0 else 0.0
                mujoco.mj_step(m, run)
                velocity.append(run.qvel.copy())
            runs.append(np.array(velocity))
        added = np.linalg.norm(np.diff(runs[0] - runs[1], axis=0, prepend=0.0), axis=1)
        return float(np.arange(steps) @ added / added.sum()) if added.sum() > 0 else 0.0

    return max(mean_step(model) - mean_step(undelayed(model)), 0.0) * float(model.opt.timestep)


def undelayed(model: mujoco.MjModel) -> mujoco.MjModel:
    """A copy of ``model`` whose actuators act on a command at once (every actuator ``delay`` 0)."""
    out = copy.copy(model)
    out.actuator_delay[:] = 0.0
    return out


def _held(A: np.ndarray, B: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """``(e^(A tau), int_0^tau e^(A s) ds B)``: the exponential of ``[[A, B], [0, 0]] tau`` by scaling and squaring
    a 16-term Taylor series (NumPy alone: round-off of the largest entries)."""
    n, m = B.shape
    block = np.zeros((n + m, n + m))
    block[:n, :n], block[:n, n:] = A, B
    block *= tau
    norm = float(np.abs(block).sum(axis=1).max(initial=0.0))
    squarings = max(0, int(math.ceil(math.log2(norm))) + 1) if norm > 0.5 else 0
    block /= 2.0**squarings
    term, total = np.eye(n + m), np.eye(n + m)
    for k in range(1, 17):
        term = term @ block / k
        total = total + term
    for _ in range(squarings):
        total = total @ total
    return total[:n, :n], total[:n, n:]


def hold_with_delay(A, B, dt: float, delay: float) -> tuple[np.ndarray, np.ndarray]:
    """The exact discretization of ``d/dt x = A x + B u(t - delay)`` with ``u`` held over each period ``dt``.

    With ``delay = d dt + f`` (``d`` whole periods, ``0 <= f < dt``), a period's state change takes the
    command sent ``d`` periods ago for its last ``dt - f`` and the one before it for its first ``f``:
    ``x+ = Ad x + G0 u(k - d) + G1 u(k - d - 1)``, ``G0 = int_0^(dt - f) e^(A s) ds B``, ``G1 = e^(A (dt - f))
    int_0^f e^(A s) ds B``.  The state grows by the ``r`` commands in flight (``r = d``, or ``d + 1`` with a
    fraction), oldest first: ``[x, u(k - r), ..., u(k - 1)]``; a fraction below 1e-9 of the period is none.

    Returns:
      ``(Ad (n + r m, n + r m), Bd (n + r m, m))``.
    """
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    n, m = B.shape
    whole = int(math.floor(delay / dt + 1e-9))
    fraction = max(delay - whole * dt, 0.0)
    if fraction < 1e-9 * dt:
        fraction = 0.0
    Ad, G0 = _held(A, B, dt - fraction)
    G1 = np.zeros_like(B)
    if fraction:
        Af, Gf = _held(A, B, fraction)
        G1 = Ad @ Gf
        Ad = Ad @ Af
    r = whole + (1 if fraction else 0)
    size = n + r * m
    Az, Bz = np.zeros((size, size)), np.zeros((size, m))
    Az[:n, :n] = Ad
    # u(k - d) is register r - d (the newest is r - 1; u(k) itself when d = 0); u(k - d - 1) the one before it
    for register, gain in ((r - whole, G0), (r - whole - 1, G1)):
        if not gain.any():
            continue
        if register == r:
            Bz[:n] += gain
        else:
            Az[:n, n + register * m : n + (register + 1) * m] += gain
    if r:
        Az[n : size - m, n + m :] = np.eye((r - 1) * m)  # each command moves one place older
        Bz[size - m :] = np.eye(m)  # the newest enters last
    return Az, Bz


def _implicit_part(model: mujoco.MjModel, forward: _Forward, smooth_v: np.ndarray) -> np.ndarray | None:
    """The ``K`` of the integrator's velocity update ``(I - h K)^-1``, or None for an explicit one.

    Euler treats joint damping implicitly (``(M + h D) qacc = f``, unless
    ``eulerdamp`` is disabled): ``K = -M^-1 D``.  The implicit integrators solve with
    the derivative of the smooth forces: ``K = d qacc_smooth / d qvel``.
    """
    kind = model.opt.integrator
    if kind in (mujoco.mjtIntegrator.mjINT_IMPLICIT, mujoco.mjtIntegrator.mjINT_IMPLICITFAST):
        return smooth_v
    if kind != mujoco.mjtIntegrator.mjINT_EULER or not np.any(model.dof_damping > 0):
        return None
    if model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_EULERDAMP:
        return None
    M = np.zeros((model.nv, model.nv))
    forward()
    mujoco.mj_fullM(model, forward.data, M)
    return -np.linalg.solve(M, np.diag(model.dof_damping))


def holding_control(model: mujoco.MjModel | str | os.PathLike, keyframe: str | int | None = None,
                    qpos=None) -> np.ndarray:
    """The control that keeps a pose at rest: ``qfrc_actuator(ctrl) = mj_inverse(qpos, 0, 0)``.

    ``qfrc_actuator`` is affine in the controls; they are its least-squares solution.
      model: a compiled model, or a built-in name or MJCF/URDF path.
      keyframe: a keyframe's name or index (its ``qpos``).
      qpos: ``(nq,)`` the pose (overrides the keyframe's; default ``qpos0``).

    Returns:
      ``(nu,)`` controls, in each actuator's own unit.

    Raises:
      ModelError: no control holds the pose: the actuators cannot produce the
        force some dof needs (the message names the dofs and the forces), or the
        control lies outside an actuator's ``ctrlrange``.
    """
    model = as_model(model)
    if native_delay(model):  # the control that holds a pose is the same however late it arrives
        model = undelayed(model)
    qpos, _, _ = operating_point(model, keyframe, qpos)
    data = mujoco.MjData(model)
    data.qpos[:] = qpos
    mujoco.mj_inverse(model, data)
    needed = data.qfrc_inverse.copy()
    # Each actuator's generalized force per unit control, on a copy that does not clamp controls.
    free = with_options(model, disableflags=int(model.opt.disableflags) | int(mujoco.mjtDisableBit.mjDSBL_CLAMPCTRL))
    scratch = mujoco.MjData(free)
    scratch.qpos[:] = qpos

    def actuation(ctrl):
        scratch.ctrl[:] = ctrl
        mujoco.mj_forward(free, scratch)
        return scratch.qfrc_actuator.copy()

    offset = actuation(np.zeros(model.nu))
    moments = np.column_stack([actuation(np.eye(model.nu)[i]) - offset for i in range(model.nu)]) \
        if model.nu else np.zeros((model.nv, 0))
    target = needed - offset
    ctrl = np.linalg.lstsq(moments, target, rcond=None)[0] if model.nu else np.zeros(0)
    residual = target - moments @ ctrl
    scale = max(float(np.abs(needed).max(initial=0.0)), 1.0)
    if np.abs(residual).max(initial=0.0) > HOLD_RTOL * scale:
        names = dof_names(model)
        worst = np.argsort(-np.abs(residual))[:3]
        short = "; ".join(f"dof '{names[i]}' lacks {residual[i]:+.4g}" for i in worst
                          if abs(residual[i]) > HOLD_RTOL * scale)
        what = "the model has no actuators" if not model.nu else "its actuators cannot produce that force"
        raise ModelError(f"no control holds this pose still: {short} (N or N m of mj_inverse's force; {what})")
    for i in range(model.nu):
        lo, hi = model.actuator_ctrlrange[i]
        if model.actuator_ctrllimited[i] and not lo - 1e-12 <= ctrl[i] <= hi + 1e-12:
            name = model.actuator(i).name or f"actuator{i}"
            raise ModelError(f"no control holds this pose still: actuator '{name}' would need {ctrl[i]:.4g}, "
                             f"outside its ctrlrange [{lo:g}, {hi:g}]")
    return ctrl
