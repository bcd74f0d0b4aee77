"""LQR for any MJCF: designed from MuJoCo's linearization with python-control, run in the generic loop.

:func:`regulator` linearizes a model about a pose held still, designs ``u = u_op -
K [dq, dqd]`` (:func:`crossdyn.controllers.balance.lqr`) and is itself the
controller ``simulate`` calls.  :func:`measured_decay` checks the design against
its own theory: along the slowest closed-loop mode ``lambda`` (left eigenvector
``w``) the linear loop's ``log |w^H x|`` falls with slope ``Re(lambda)``.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass, field

import mujoco
import numpy as np

from crossdyn.controllers.balance import LQRDesign, lqr
from crossdyn.experiments.core.errors import ParameterError
from crossdyn.experiments.core.linearize import Linearization, linearize
from crossdyn.experiments.core.loop import Trace

__all__ = ["Regulator", "Switch", "regulator", "measured_decay"]


@dataclass(frozen=True)
class Regulator:
    """A state-feedback regulator about an operating point: ``u = u_op - K [dq, dqd]``.

    Attributes:
      linearization: the model's linearization (its ``qpos``, ``qvel``, ``ctrl`` the operating point).
      design: the LQR design (``K (nu, 2 nv)``, ``S``, closed-loop ``poles``).
      target: ``(nq,)`` the pose regulated to (default the operating point's).
    """

    linearization: Linearization
    design: LQRDesign
    target: np.ndarray | None = None

    # Per run (and per thread), what start() binds for write_command; not part of the design.
    _run: threading.local = field(default_factory=threading.local, init=False, repr=False, compare=False)

    def __call__(self, t: float, obs) -> np.ndarray:
        lin = self.linearization
        qpos = obs.qpos if self.target is None else obs.qpos - self.target + lin.qpos
        return lin.ctrl - self.design.K @ lin.deviation(qpos, obs.qvel)

    def start(self, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        """Bind a run's state and the buffers :meth:`write_command` fills (``simulate`` calls it once per run)."""
        lin = self.linearization
        x = np.empty(2 * lin.nv)
        self._run.bound = (data.qpos, data.qvel, x, x[:lin.nv], x[lin.nv:], np.empty(lin.nu), self.design.K,
                           lin.qpos, lin.qvel, lin.ctrl, self.target, lin.plain, lin.model)

    def write_command(self, t: float, sensed: np.ndarray, command: np.ndarray) -> bool:
        """``command (nu,) = u_op - K [dq, dqd]`` of the true state, in place: the same numbers as calling it.

        The loop's fast path (no per-step allocation or checks); the operation order is
        :meth:`__call__`'s, so the controls are bit-identical.
        """
        qpos, qvel, x, dq, dv, y, K, q0, v0, u0, target, plain, model = self._run.bound
        if target is not None:
            qpos = qpos - target + q0
        if plain:
            np.subtract(qpos, q0, out=dq)
        else:
            mujoco.mj_differentiatePos(model, dq, 1.0, q0, qpos)
        np.subtract(qvel, v0, out=dv)
        np.matmul(K, x, out=y)
        np.subtract(u0, y, out=command)
        return True

    def __getstate__(self) -> dict:
        return {name: value for name, value in self.__dict__.items() if name != "_run"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        object.__setattr__(self, "_run", threading.local())

    def to(self, qpos) -> Regulator:
        """The same gains regulating to another pose (e.g. the cart moved along its rail)."""
        return Regulator(self.linearization, self.design, np.asarray(qpos, dtype=float))

    @property
    def slowest(self) -> complex:
        """The closed-loop pole nearest the imaginary axis, 1/s."""
        poles = np.asarray(self.design.poles)
        return complex(poles[np.argmax(poles.real)])


class Switch:
    """One regulator until ``at`` s, another from then on (e.g. a new target), on the loop's in-place path.

    Attributes:
      before, after: the regulators.
      at: the switching time, s.
    """

    def __init__(self, before: Regulator, after: Regulator, at: float):
        self.before, self.after, self.at = before, after, float(at)

    def __call__(self, t: float, obs) -> np.ndarray:
        return (self.after if t >= self.at else self.before)(t, obs)

    def start(self, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        self.before.start(model, data)
        self.after.start(model, data)

    def write_command(self, t: float, sensed: np.ndarray, command: np.ndarray) -> bool:
        return (self.after if t >= self.at else self.before).write_command(t, sensed, command)


def regulator(model: mujoco.MjModel, Q, R, keyframe: str | int | None = None, qpos=None) -> Regulator:
    """Linearize ``model`` at a pose held still and design its LQR.

    Args:
      model: the compiled model.
      Q: ``(2 nv, 2 nv)`` or its diagonal, on ``[dq, dqd]``.
      R: ``(nu, nu)``, its diagonal, or a scalar.
      keyframe, qpos: the pose (see :func:`~crossdyn.experiments.core.linearize.linearize`);
        the control holding it is the operating point's.

    Raises:
      ModelError: no control holds the pose.
      ParameterError: bad weights, or no stabilizing design for them.
    """
    lin = linearize(model, keyframe=keyframe, qpos=qpos, qvel=np.zeros(model.nv), ctrl="hold")
    try:
        design = lqr(lin.A, lin.B, Q, R)
    except ValueError as exc:
        raise ParameterError(f"LQR weights Q={np.round(np.diag(np.atleast_2d(Q)) if np.ndim(Q) == 2 else Q, 6)}"
                             f", R={R}: {exc}") from None
    return Regulator(lin, design)


def measured_decay(trace: Trace, reg: Regulator, *, start: float = 0.0, floor: float = 1e-9,
                   noise_floor: bool = True) -> float:
    """The slowest mode's decay rate measured in a trace, 1/s (negative: decaying).

    ``z = w^H x`` along the run (``x`` the state's deviation, ``w`` the slowest
    pole's left eigenvector), and the least-squares slope of ``log |z|`` over the
    rows at or after ``start`` whose ``|z|`` is above ``floor`` times its largest
    (below, round-off and the other modes' remains take over).

    With noisy sensors ``|z|`` stops falling where the noise holds it, so by default
    (``noise_floor``) the fit ends where ``|z|`` first comes within a decade of the
    level of the run's last quarter, when that quarter no longer falls; a
    ``RuntimeWarning`` says when that leaves fewer than ten rows (the whole window
    is then fitted).
    """
    lin, K = reg.linearization, reg.design.K
    closed = lin.A - lin.B @ K
    values, left = np.linalg.eig(closed.T)  # left eigenvectors of A - B K
    w = left[:, int(np.argmin(np.abs(values - reg.slowest)))]
    target = lin.qpos if reg.target is None else reg.target
    if lin.plain:  # the same arithmetic as deviation(), row by row, on the whole table at once
        x = np.concatenate([trace.qpos - target + lin.qpos - lin.qpos, trace.qvel - lin.qvel], axis=1)
    else:
        x = np.array([lin.deviation(q - target + lin.qpos, v) for q, v in zip(trace.qpos, trace.qvel, strict=False)])
    z = np.abs(x @ w.conj())
    rows = np.flatnonzero((trace.t >= start) & (z > floor * z.max()))
    if rows.size < 10:
        raise ParameterError("too few rows to measure a decay rate (run longer, or start earlier)")
    level = _noise_floor(trace.t, z) if noise_floor else None
    if level is not None:
        below = np.flatnonzero(z[rows] <= FLOOR_MARGIN * level)
        kept = rows[: below[0]] if below.size else rows
        if kept.size < 10:
            warnings.warn(f"measured_decay: the window from t = {trace.t[rows[0]]:.4g} s sits on the noise floor "
                          f"(|w^H x| ~ {level:.3g} from t = {trace.t[-(trace.t.size // 4)]:.4g} s): the slope "
                          "measured is the noise's, not the mode's; start earlier", RuntimeWarning, stacklevel=2)
        else:
            rows = kept
    slope, _ = np.polyfit(trace.t[rows], np.log(z[rows]), 1)
    return float(slope)


# The fit ends a decade above the noise floor: there the noise moves |z| by about a tenth, log |z| by ~0.1.
FLOOR_MARGIN = 10.0


def _noise_floor(t: np.ndarray, z: np.ndarray) -> float | None:
    """The level ``|z|`` settles on in the run's last quarter, or None when that quarter still falls.

    The quarter is flat when the fitted change of ``log |z|`` across it is within
    twice the scatter about that fit (a clean exponential has almost no scatter).
    """
    tail = slice(t.size - t.size // 4, None)
    tt, lz = t[tail], np.log(np.maximum(z[tail], np.finfo(float).tiny))
    if tt.size < 10:
        return None
    slope, offset = np.polyfit(tt, lz, 1)
    scatter = float(np.std(lz - (slope * tt + offset)))
    if -slope * (tt[-1] - tt[0]) > 2.0 * scatter:
        return None
    return float(np.median(z[tail]))
