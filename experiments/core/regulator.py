"""LQR for any MJCF: designed from MuJoCo's linearization with python-control, run in the generic loop.

:func:`regulator` linearizes a model about a pose held still, designs ``u = u_op -
K [dq, dqd]`` (:func:`crossdyn.controllers.lqr.lqr`) and is itself the
controller ``simulate`` calls.  :func:`measured_decay` checks the design against
its own theory: along the slowest closed-loop mode ``lambda`` (left eigenvector
``w``) the linear loop's ``log |w^H x|`` falls with slope ``Re(lambda)``.

A loop runs at a control period ``dt``, holding each command over it (a zero-order
hold).  A continuous design whose fastest closed-loop pole has ``|lambda| dt > 0.5``
asks for more than that rate carries: the loop then runs a different, often
unstable, system.  ``regulator(..., dt=dt)`` designs at the rate instead (discrete
LQR, :func:`crossdyn.controllers.lqr.dlqr`, on the zero-order-hold model
``x+ = Ad x + Bd u``), with ``delay`` whole periods between command and actuator
folded into the design model (the regulator then remembers its last commands).

``dt`` defaults to the rate the controller will run at where crossdyn knows it before the
run: the period in effect (:func:`~crossdyn.experiments.core.loop.control_rate.control_period`,
or the run's own ``control_dt`` for a regulator designed inside ``simulate``).  The
default is continuous exactly where no period is in effect: a plain script, where
``simulate``'s ``control_dt`` is chosen per run after the design (the built-in cart-pole
experiments design so, and check the continuous poles).  ``dt=0`` asks for the continuous
design anywhere.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass, field

import mujoco
import numpy as np
import scipy.linalg

from ...controllers.lqr import LQRDesign, dlqr, lqr
from .errors import ParameterError
from .linearize import Linearization, hold_with_delay, linearize
from .loop.control_rate import period_in_effect
from .loop.trace import Trace

__all__ = ["Regulator", "Switch", "regulator", "measured_decay", "settled_level", "zero_order_hold", "RATE_LIMIT"]

# |lambda| dt beyond which a continuous design is not what a loop at period dt runs: the hold's half-period
# delay alone costs |lambda| dt / 2 rad of phase at that pole's frequency (0.25 rad, 14 deg, at the limit),
# and the sampled poles exp(lambda dt) leave the continuous ones' first-order neighbourhood.
RATE_LIMIT = 0.5


@dataclass(frozen=True)
class Regulator:
    """A state-feedback regulator about an operating point: ``u = u_op - K [dq, dqd]``.

    Attributes:
      linearization: the model's linearization (its ``qpos``, ``qvel``, ``ctrl`` the operating point).
      design: the LQR design (``K (nu, 2 nv)``, ``S``, closed-loop ``poles``; a discrete design with a
        delay: ``K (nu, 2 nv + delay nu)`` on ``[dq, dqd, du(k - delay), ..., du(k - 1)]``).
      target: ``(nq,)`` the pose regulated to (default the operating point's).
      dt: the control period designed for, s; None for a continuous design.
      delay: whole control periods between a command and the actuators, folded into a discrete design.
      plant: the discrete design model ``(Ad, Bd)`` (with the delay's states), or None for a continuous design.
    """

    linearization: Linearization
    design: LQRDesign
    target: np.ndarray | None = None
    dt: float | None = None
    delay: int = 0
    plant: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False, compare=False)

    # Per run (and per thread), what start() binds for write_command; not part of the design.
    _run: threading.local = field(default_factory=threading.local, init=False, repr=False, compare=False)

    def __call__(self, t: float, obs) -> np.ndarray:
        lin = self.linearization
        qpos = obs.qpos if self.target is None else obs.qpos - self.target + lin.qpos
        if self.delay:
            return lin.ctrl + self._delayed(lin.deviation(qpos, obs.qvel))
        return lin.ctrl - self.design.K @ lin.deviation(qpos, obs.qvel)

    def _delayed(self, x: np.ndarray) -> np.ndarray:
        """``du = -K [x, past du]`` of a design with a delay, remembering ``du`` for the next periods."""
        past = getattr(self._run, "past", None)
        if past is None:  # called without start(): a run from rest
            past = self._run.past = np.zeros(self.delay * self.linearization.nu)
        du = -self.design.K @ np.concatenate([x, past])
        past[:-du.size] = past[du.size:].copy()
        past[-du.size:] = du
        return du

    @property
    def control_dt(self) -> float | None:
        """The control period the design is for (``simulate``'s default period for it), s; None if continuous."""
        return self.dt

    @property
    def poles(self) -> np.ndarray:
        """The designed closed-loop poles as continuous-time rates, 1/s (``log(z) / dt`` of a discrete design)."""
        poles = np.asarray(self.design.poles, dtype=complex)
        if self.dt is None:
            return poles
        return np.log(poles[poles != 0]) / self.dt  # a delay's poles at z = 0 have no continuous rate

    def check_rate(self, control_dt: float) -> str | None:
        """Warn (``RuntimeWarning``) when the loop's ``control_dt`` is not what the design assumed: a continuous
        design's fastest pole beyond what it carries, or a discrete design's period not it.

        Returns:
          The warning's text, or None when the rate carries the design.
        """
        text: str | None
        if self.dt is not None:
            if abs(control_dt - self.dt) <= 1e-9 * self.dt:
                return None
            text = (f"discrete LQR designed at {self.dt:g} s runs at {control_dt:g} s: its gains are for the other "
                    f"rate (design with regulator(..., dt={control_dt:g}))")
        else:
            text = _too_fast(self.design.poles, control_dt)
        if text:
            warnings.warn(text, RuntimeWarning, stacklevel=3)
        return text

    def start(self, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        """Bind a run's state and the buffers :meth:`write_command` fills (``simulate`` calls it once per run)."""
        lin = self.linearization
        if self.delay:
            self._run.past = np.zeros(self.delay * lin.nu)
        x = np.empty(2 * lin.nv)
        self._run.bound = (data.qpos, data.qvel, x, x[:lin.nv], x[lin.nv:], np.empty(lin.nu), self.design.K,
                           lin.qpos, lin.qvel, lin.ctrl, self.target, lin.plain, lin.model)

    def write_command(self, t: float, sensed: np.ndarray, command: np.ndarray) -> bool:
        """``command (nu,) = u_op - K [dq, dqd]`` of the true state, in place: the same numbers as calling it.

        The loop's fast path (no per-step allocation or checks); the operation order is
        :meth:`__call__`'s, so the controls are bit-identical.
        """
        qpos, qvel, x, dq, dv, y, K, q0, v0, u0, target, plain, model = self._run.bound
        if self.delay:
            command[:] = self(t, _State(qpos, qvel))
            return True
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
        return Regulator(self.linearization, self.design, np.asarray(qpos, dtype=float), self.dt, self.delay,
                         self.plant)

    @property
    def slowest(self) -> complex:
        """The closed-loop pole nearest the imaginary axis, 1/s."""
        poles = np.asarray(self.design.poles) if self.dt is None else self.poles
        return complex(poles[np.argmax(poles.real)])


@dataclass(frozen=True)
class _State:
    """The true state as an observation carries it (what :meth:`Regulator.__call__` reads)."""

    qpos: np.ndarray
    qvel: np.ndarray


def _too_fast(poles, control_dt: float) -> str | None:
    """The warning's text when the fastest of continuous ``poles`` (1/s) has ``|lambda| dt > RATE_LIMIT``."""
    poles = np.asarray(poles, dtype=complex)
    fastest = complex(poles[np.argmax(np.abs(poles))])
    if abs(fastest) * control_dt <= RATE_LIMIT:
        return None
    shown = f"{fastest.real:.5g}" + (f" {'+-'} {abs(fastest.imag):.4g}j" if fastest.imag else "")
    return (f"continuous LQR: its fastest closed-loop pole {shown} 1/s is beyond what a loop at {control_dt:g} s "
            f"({1 / control_dt:g} Hz) carries (|lambda| dt = {abs(fastest) * control_dt:.3g} > {RATE_LIMIT:g}); "
            f"design at the rate with regulator(..., dt={control_dt:g}), or weigh the states less")


def zero_order_hold(A, B, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """The exact discretization of ``d/dt x = A x + B u`` with ``u`` held over each period ``dt``: ``(Ad, Bd)``.

    ``expm([[A, B], [0, 0]] dt) = [[Ad, Bd], [0, I]]``: ``Ad = e^(A dt)``, ``Bd = int_0^dt e^(A s) ds B``.
    """
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    n, m = B.shape
    block = np.zeros((n + m, n + m))
    block[:n, :n], block[:n, n:] = A, B
    E = scipy.linalg.expm(block * dt)
    return E[:n, :n], E[:n, n:]


def _with_delay(Ad: np.ndarray, Bd: np.ndarray, delay: int) -> tuple[np.ndarray, np.ndarray]:
    """The discrete model with ``delay`` periods between command and plant: state ``[x, u(k-d), ..., u(k-1)]``."""
    if not delay:
        return Ad, Bd
    n, m = Bd.shape
    size = n + delay * m
    A = np.zeros((size, size))
    A[:n, :n], A[:n, n:n + m] = Ad, Bd  # the plant receives the oldest command
    A[n:size - m, n + m:] = np.eye((delay - 1) * m)  # the others move one place older
    B = np.zeros((size, m))
    B[size - m:] = np.eye(m)  # the newest command enters last
    return A, B


def _weights(Q, R, nx: int, nu: int) -> tuple:
    """A scalar ``Q`` or ``R`` as that multiple of the identity (``nx`` or ``nu`` wide); others as given."""
    if np.ndim(Q) == 0:
        Q = float(Q) * np.eye(nx)
    if np.ndim(R) == 0:
        R = float(R) * np.eye(nu)
    return Q, R


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


def regulator(model: mujoco.MjModel, Q, R, keyframe: str | int | None = None, qpos=None, *,
              dt: float | None = None, delay: int = 0) -> Regulator:
    """Linearize ``model`` at a pose held still and design its LQR, continuous or at the control rate.

    Args:
      model: the compiled model.
      Q: ``(2 nv, 2 nv)``, its diagonal, or a scalar (that multiple of the identity), on ``[dq, dqd]``.
      R: ``(nu, nu)``, its diagonal, or a scalar (that multiple of the identity).
      keyframe, qpos: the pose (see :func:`~crossdyn.experiments.core.linearize.linearize`);
        the control holding it is the operating point's.
      dt: the control period the loop will run at, s: the discrete LQR on the zero-order-hold
        model (:func:`zero_order_hold`), which ``simulate`` then runs at ``dt`` unless told
        otherwise.  Default (None): the period in effect where crossdyn knows one
        (:func:`~crossdyn.experiments.core.loop.control_rate.control_period`, or inside a run of
        ``simulate``), else continuous.  0: continuous (python-control's ``dt=0``).  A continuous
        design warns (``RuntimeWarning``) when its fastest closed-loop pole has ``|lambda| dt >
        0.5`` at the period in effect, or else the model's time step (the loop's default period);
        ``simulate`` checks it again at the period it runs.
      delay: whole control periods between a command and the actuators (a
        :class:`~crossdyn.experiments.core.imperfections.Delay` of as many periods), folded into
        the discrete design; needs a period (``dt``, or one in effect).  A model whose actuators
        act late themselves (MuJoCo's actuator ``delay``: ``linearization.delay``) has that delay
        folded in too, a fraction of a period included (:func:`.linearize.hold_with_delay`); the
        regulator's ``delay`` is then the commands it remembers.  A continuous design of such a
        model warns that it cannot hold the delay.

    Raises:
      ModelError: no control holds the pose.
      ParameterError: bad weights, period or delay, or no stabilizing design for them.
    """
    in_effect = period_in_effect()
    if dt is not None and (isinstance(dt, bool) or not isinstance(dt, (int, float, np.floating))
                           or not (np.isfinite(dt) and dt >= 0)):
        raise ParameterError(f"regulator: dt must be a control period in s (0: continuous), got {dt!r}")
    dt = in_effect if dt is None else (float(dt) or None)  # None from here: the continuous design
    if not isinstance(delay, (int, np.integer)) or isinstance(delay, bool) or delay < 0:
        raise ParameterError(f"regulator: delay must be a whole number of control periods >= 0, got {delay!r}")
    if delay and dt is None:
        raise ParameterError(f"regulator: a delay of {delay} periods needs the period: give dt= (or design inside "
                             "control_period(dt))")
    lin = linearize(model, keyframe=keyframe, qpos=qpos, qvel=np.zeros(model.nv), ctrl="hold")
    Q, R = _weights(Q, R, lin.A.shape[0], lin.nu)
    plant = None
    if lin.delay and dt is None:
        warnings.warn(f"regulator: the model's actuators act {1e3 * lin.delay:.4g} ms late (MuJoCo's actuator "
                      "delay), which a continuous design cannot hold: designed as if they acted at once; "
                      "regulator(..., dt=) designs for the delay", RuntimeWarning, stacklevel=2)
    try:
        if dt is None:
            design = lqr(lin.A, lin.B, Q, R)
        else:
            if lin.delay:  # the model's own delay and the loop's whole periods: the commands in flight as states
                plant = hold_with_delay(lin.A, lin.B, float(dt), lin.delay + int(delay) * float(dt))
                delay = (plant[0].shape[0] - lin.A.shape[0]) // max(lin.nu, 1)
            else:
                plant = _with_delay(*zero_order_hold(lin.A, lin.B, float(dt)), int(delay))
            nz = plant[0].shape[0]
            Qz = np.zeros((nz, nz))
            Qz[:lin.A.shape[0], :lin.A.shape[0]] = np.diag(Q) if np.ndim(Q) == 1 else Q
            design = dlqr(*plant, Qz, R)
    except ValueError as exc:
        raise ParameterError(f"LQR weights Q={np.round(np.diag(np.atleast_2d(Q)) if np.ndim(Q) == 2 else Q, 6)}"
                             f", R={R}: {exc}") from None
    if dt is None:
        text = _too_fast(design.poles, in_effect or float(model.opt.timestep))
        if text:
            warnings.warn(text + (" (checked at the control period in effect)" if in_effect else
                                  " (checked at the model's time step, the loop's default period)"), RuntimeWarning,
                          stacklevel=2)
        return Regulator(lin, design)
    return Regulator(lin, design, None, float(dt), int(delay), plant)


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

    A design at a rate is checked on its own discrete loop ``Ad - Bd K`` (its pole ``e^(lambda dt)``);
    one with a delay carries its commands in its state, and
    :func:`~crossdyn.experiments.core.design_check.compare_to_design` measures it.
    """
    lin, K = reg.linearization, reg.design.K
    if reg.dt is None:
        closed, pole = lin.A - lin.B @ K, reg.slowest
    elif reg.delay or reg.plant is None:
        raise ParameterError("measured_decay: a design with a delay carries its last commands in its state; "
                             "compare_to_design(trace, design) measures it")
    else:
        closed, pole = reg.plant[0] - reg.plant[1] @ K, np.exp(reg.slowest * reg.dt)
    values, left = np.linalg.eig(closed.T)  # left eigenvectors of the closed loop
    w = left[:, int(np.argmin(np.abs(values - pole)))]
    target = lin.qpos if reg.target is None else reg.target
    if lin.plain:  # the same arithmetic as deviation(), row by row, on the whole table at once
        x = np.concatenate([trace.qpos - target + lin.qpos - lin.qpos, trace.qvel - lin.qvel], axis=1)
    else:
        x = np.array([lin.deviation(q - target + lin.qpos, v) for q, v in zip(trace.qpos, trace.qvel, strict=False)])
    z = np.abs(x @ w.conj())
    rows = np.flatnonzero((trace.t >= start) & (z > floor * z.max()))
    if rows.size < 10:
        raise ParameterError("too few rows to measure a decay rate (run longer, or start earlier)")
    level = settled_level(trace.t, z) if noise_floor else None
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


def settled_level(t: np.ndarray, z: np.ndarray) -> float | None:
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
