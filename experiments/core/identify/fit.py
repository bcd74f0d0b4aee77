"""Fit a model's parameters to logs: rollouts re-anchored to the log, ``mujoco.sysid``'s least squares.

How a log is replayed.  Each log is cut into windows of ``window`` seconds (0.5 s by
default).  Every window's rollout starts from the log's own state at the window's
first sample (its ``qpos``; its ``qvel`` when logged, else a central difference of
``qpos`` over about 10 ms), steps the model at its own time step with the logged
commands (``delay`` seconds late; see :data:`COMMANDS` for how between samples), and is compared with the
log's readings until the next window starts.  Why that length: a rollout that runs
the whole log drifts apart from the robot (a double pendulum's or a balancing
robot's error grows exponentially, and a Gauss-Newton step stops being a good
model of it), while a window much shorter than the dynamics' own times (a damping
time, the delay, a swing) leaves too little motion for a parameter to show.  Half a
second spans several of the arm's swings and many time constants of its motors,
and on the models tested the prediction error of a window started from a noisy
state stays within the encoder noise over it; ``--window`` changes it.

The start of each window is fitted with the parameters: the state read from a log
is noisy (0.5 mrad of encoder noise becomes several mrad/s of velocity error, which
over half a second is worth more than the noise), so each window's start is a
small correction (a tangent-space ``qpos`` offset and a ``qvel`` offset) solved
jointly.  Those corrections act only on their own window, so the Jacobian is
computed with 1 + p + 2 d batched rollouts (d: the dofs the logs read; every window's start perturbed at
once) instead of one per column; it is handed to ``mujoco.sysid.optimize``
(MuJoCo's own Gauss-Newton least squares, ``mujoco.minimize``) as its Jacobian.
The intervals are ``mujoco.sysid.calculate_intervals`` on the whole Jacobian, so
the windows' starts' uncertainty widens the parameters' intervals as it should,
widened further where the windows disagree more than the noise explains
(:func:`_intervals`).

A floating base whose pose no log holds (a legged robot logs its encoders and its
IMU, not where its base is) starts each window from its IMU: the attitude from an
orientation sensor (``framequat`` of a site on the base), the angular velocity from
the gyro, both corrected with the other starts.  Its position and linear velocity
start at the model's and at rest: while the robot touches nothing no body-frame
reading depends on them; a robot standing on the ground would need them from its
contacts, which this does not do.

Residuals are each reading's error divided by that reading's noise (:mod:`.noise`:
stated, from the MJCF, an encoder's grid, or estimated only where the log can tell),
so signals in different units weigh by what they can tell, and a residual of about 1
is "within the log's own noise".  Each window's start corrections add residuals of
their own (:meth:`Problem.start_noise`): a start cannot depart from what the log says
further than its noise explains.
"""

from __future__ import annotations

import copy
import fnmatch
import io
import math
import os
import time as clock
from dataclasses import dataclass, field

import mujoco
import mujoco.rollout
import numpy as np
from absl import logging as absl_logging

from ..errors import ParameterError
from ..linearize import native_delay
from ..models import mujoco_warnings
from . import sysid
from .logs import Log, LogError
from .noise import Noise, resolve
from .spec import Quantity, SpecError

__all__ = ["Problem", "FitResult", "WINDOW", "START", "COMMANDS", "fit", "fit_and_replay", "residual_checks"]

# The constraint solver's tolerance in the fit's rollouts (see Problem.build): at MuJoCo's 1e-8 the biped's
# residual moves by a thousandth when a shank's mass moves by 1e-7 kg; at 1e-12 it moves smoothly, no slower.
SOLVER_TOLERANCE = 1e-12
# A window's start correction directions weaker than this (relative to its strongest) are left alone: on
# a robot with constraints some corrections of the read joints are undone by them (_Closure.followers)
# and move no reading (the biped: 3e-8 to 4e-7 of the strongest; the others 2e-3 and above).
START_RCOND = 1e-5
# Seconds per re-anchored rollout (see the module docstring for why).
WINDOW = 0.5
# The windows' starts are refined until an iteration lowers the misfit by less than this share of it, at most
# REFINE_ITERATIONS times: a free arm converges in 2 or 3, a quadruped standing on its feet (contacts) in 8 to 10.
REFINE_TOL = 1e-3
REFINE_ITERATIONS = 12
# A window's rejected step is halved at most down to this share of the Gauss-Newton step.
SHRINK_MIN = 1 / 16
# Fewest samples a window may hold: its start has two corrections per read dof, and a window of few more
# samples than that lets them follow the log whatever the model (a 30 % heavier link passes at 5 samples).
MIN_WINDOW_SAMPLES = 20
# How a log's commands act between its samples.  ``hold``: each command acts from its sample until the next, as a
# controller at the log's rate holds it (each physics step gets the held command's mean over the step, which is
# continuous in a fitted delay); ``linear``: interpolated between samples (a log slower than the commands it
# samples).  They coincide exactly for a log at the model's time step; a 500 Hz controller's log replayed at
# 1 ms with ``linear`` read its held commands as ramps, and its own model failed by 3x the noise.
COMMANDS = ("hold", "linear")
# The key under which per-signal misfits (Problem.rms) report the windows' starts' own misfit.
START = "start"
# Velocity from qpos when a log has no qvel: central difference over about this span (s);
# short enough that an arm's swing is still a straight line over it, long enough to average noise.
VELOCITY_SPAN = 0.01
# Bounds of a window start's correction: far beyond a log's noise, finite because mujoco.minimize needs them.
ANCHOR_QPOS = 0.5  # rad or m
ANCHOR_QVEL = 50.0  # rad/s or m/s
# The optimizer stops when a step changes x by less than this, relative: a step of 1e-6 of a
# value is a hundredth of the narrowest interval the arm's logs give (about 1e-4 of the value).
XTOL = 1e-6
# Levenberg-Marquardt's regularizer grows by this factor per rejected step.  mujoco.minimize's default
# (10^0.1) needs about ten rejections, each a rollout of every window, to raise it tenfold; on the arm's
# 20 s log 2 takes 150 rollouts instead of 240 to the same optimum (to 9 digits: benchmarks/identify_speed.py).
MU_FACTOR = 2.0
# A fitted value this near its bound (share of its typical size) stopped there: a one-sided interval.
AT_BOUND = 1e-6
# The residuals support calling the intervals 95 % ones when each reading's RMS is within this factor of
# its stated noise and the errors of neighbouring samples correlate less than WHITE (lag-1 autocorrelation:
# white noise's is 0 within about 2/sqrt(N); a model error that runs over a window's samples is 0.5 and more).
NOISE_AGREES = 1.5
WHITE = 0.2
# A parameter whose full typical change moves the whole log's normalized residual by less
# than this (norm of scale * dr/dtheta) is one the logs never move: far below one noise level.
NEVER_MOVES = 1e-3
# Contacts this near (m) count as touching when a window's start is put on the constraints: a few
# times a log's position noise (a base's height read 0.5 mm off), far below a lifted foot's clearance.
CONTACT_SNAP = 0.002
# The same for a floating base started from its IMU, whose height no log gives: it starts at the
# model's (a guess some centimetres off), so its contacts are looked for this far (m); a foot lifted
# less than this is put down.
BASE_SNAP = 0.05
# How much more a read dof costs to move than an unread one, putting a start on the constraints:
# the unread joints (a passive knee) take up a closure, the read ones move by their noise at most.
UNREAD_WEIGHT = 1e3
# A touching contact is put on the ground only when the joints no log reads make at least this share of its
# normal's Jacobian (an unread base's height under a wheel: about 1; an arm's links, all read: 0).
UNREAD_SHARE = 1e-3
# Gauss-Newton steps onto the constraints: a closure read 1 mm open is closed to round-off in 3.
CLOSURE_STEPS = 5
# A closure this near (m) is closed: round-off of a model a metre across.
CLOSED = 1e-12
# Directions of the constraints' Jacobian weaker than this (relative to its largest singular value)
# are not solved for: a row no motion moves (see _Closure._least); the others are at 0.1 and above.
CLOSURE_RCOND = 1e-3


@dataclass
class _Signal:
    key: str
    kind: str
    index: np.ndarray  # into qpos / qvel / sensordata
    measured: np.ndarray  # (N, w)
    sigma: np.ndarray  # (w,)


@dataclass
class _Window:
    log: int
    start: int  # first sample
    stop: int  # one past the last sample
    qpos: np.ndarray  # the log's state at the start, (nq,)
    qvel: np.ndarray  # (nv,)
    grid: np.ndarray = field(default_factory=lambda: np.zeros(0))  # samples' positions on the step grid
    span: tuple[int, int] = (0, 0)  # the samples whose difference gives the start's velocity
    # The velocity's noise per unit of the position's (1/s): sqrt(2) / span for a central difference, more for the
    # one-sided three-point difference at a log's first sample.
    spread: float = 0.0
    # Per dof (nv,), how far the three-point difference at a log's first sample departs from the two-point one
    # (what a constant acceleration explains, and what a contact settling in the first samples does not): a
    # truncation the start's uncertainty includes.  Zero for a central difference.
    disagree: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # The start corrections with a misfit of their own, and its noise (Problem.start_noise): (2 d,) each.
    prior: tuple[np.ndarray, np.ndarray] = field(default_factory=lambda: (np.zeros(0, bool), np.zeros(0)))
    # How every dof follows a correction of the read ones on the constraints: (nv, d) for positions and
    # for velocities (_Closure.followers); None for a model without constraints.
    follow: tuple[np.ndarray, np.ndarray] | None = None


@dataclass
class FitResult:
    """What :func:`fit` found.

    Attributes:
      targets: the fitted quantities, in order.
      value: fitted values, one array per target.
      half_width: 95 % interval half-widths, one array per target (inf: undetermined).
      moved: how much each target's typical change moves the normalized residual (norm), per target.
      identified: per target, whether the logs pin it down.
      residual_before, residual_after: RMS normalized residual per signal and log
        (``{log file: {signal: rms}}``), at the model's values and at the fitted ones.
      seconds: the fit's wall time.
      iterations: the optimizer's Jacobian evaluations.
      x: the optimum (targets, then the windows' start corrections).
      at_bound: per target, -1 / 1 where a component stopped at its lower / upper bound, else 0.
      intervals: what the residuals say of the intervals (:func:`residual_checks`): ``level`` (0.95),
        ``supported`` (the residuals are the noise the intervals assume) and ``checked`` (what was checked).
    """

    targets: list[Quantity]
    value: list[np.ndarray]
    half_width: list[np.ndarray]
    moved: list[float]
    identified: list[bool]
    residual_before: dict[str, dict[str, float]]
    residual_after: dict[str, dict[str, float]]
    seconds: float
    iterations: int
    x: np.ndarray = field(default_factory=lambda: np.zeros(0))
    at_bound: list[np.ndarray] = field(default_factory=list)
    intervals: dict = field(default_factory=lambda: {"level": 0.95, "supported": True, "checked": ""})

    def bounds(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Target ``k``'s interval ``(low, high)``: value -+ half-width, a bound itself where the value sits on it."""
        t, v, h, b = self.targets[k], self.value[k], self.half_width[k], self.at_bound[k] if self.at_bound else 0
        low = np.where(b < 0, t.low, np.maximum(v - h, t.low))  # never past what the quantity can be (a friction < 0)
        return low, np.where(b > 0, t.high, np.minimum(v + h, t.high))


class Problem:
    """Logs, a model and what may change in it: residuals and their Jacobian for the least squares.

    The residual holds, per window, every reading's error over the window in units of its
    noise, then the window start's own misfit: each correction of a start that no reading
    of the window's first sample sees (a velocity taken from a central difference of the
    encoders, a reading used only for starts) divided by how uncertain the log leaves it
    (:meth:`start_noise`).  So a start can move only as far as the log's noise allows, and
    cannot absorb a wrong model's error, however short the windows.

    Args:
      spec: the model's ``MjSpec`` (fitted bodies' inertials already explicit, :func:`.spec.parse_fit`).
      targets: the fitted quantities.
      logs: the logs, read against the model.
      window: seconds per re-anchored rollout.
      threads: rollout threads (``None``: the machine's cores, at most 4).
      noise: each reading's noise: ``--noise`` options (strings or a mapping, :func:`.noise.resolve`), or
        per log ``{signal: Noise}`` already resolved.
      start_only: signals (globs) read for the windows' starts but not compared (``qvel:*``).
      commands: how the logs' commands act between samples, ``hold`` or ``linear`` (:data:`COMMANDS`).
      start: a keyframe of the model whose pose every joint no log reads starts each window from (a
        floating base's position: the robot standing where the log stands), instead of the model's ``qpos0``.

    Raises:
      NoiseError: a reading whose noise is neither stated nor estimable.
      LogError: a ``start_only`` pattern that matches no reading.
      ParameterError: ``commands`` not one of :data:`COMMANDS`.
    """

    def __init__(self, spec: mujoco.MjSpec, targets: list[Quantity], logs: list[Log], window: float = WINDOW,
                 threads: int | None = None, noise=None, start_only=(), commands: str = "hold",
                 start: str | None = None):
        if commands not in COMMANDS:
            raise ParameterError(f"--commands {commands!r}: one of {', '.join(COMMANDS)}")
        self.commands = commands
        self.start = start
        self.spec = spec
        self.native_delay = native_delay(spec.compile())
        for actuator in spec.actuators:  # the delay is applied to the commands (module docstring)
            actuator.delay, actuator.nsample = 0.0, 0
        self.targets = targets
        self.logs = logs
        self.model = spec.compile()
        m = self.model
        self.rest_qpos = np.array(m.qpos0, float)
        if start is not None:
            key = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, str(start))
            if key < 0:
                names = ", ".join(m.key(k).name for k in range(m.nkey)) or "none"
                raise ParameterError(f"--start {start}: the model has no such keyframe ({names})")
            self.rest_qpos = np.array(m.key_qpos[key], float)
        self.dt = float(m.opt.timestep)
        self.params = sysid.ParameterDict()
        for target in targets:
            self.params.add(target.parameter)
        self.p = sum(t.size for t in targets)
        self.delay_index = next((i for i, t in enumerate(targets) if t.kind == "delay"), None)
        resolved = noise if isinstance(noise, list) and all(isinstance(n, dict) for n in noise) and noise \
            else resolve(m, logs, noise)
        self.noise: list[dict[str, Noise]] = resolved
        self.start_only = _start_only(logs, start_only)
        self.signals = [[_Signal(key, kind, ids, values, resolved[li][key].value)
                         for key, (kind, _, values, ids) in log.signals.items()
                         if kind != "ctrl" and key not in self.start_only]
                        for li, log in enumerate(logs)]
        if not any(self.signals):
            raise LogError("every reading is --start-only: nothing is left to compare the model with")
        for li, log in enumerate(logs):
            _refuse_twice(m, log, {s.key: s for s in self.signals[li]})
        for log in logs:  # a command the log does not hold would be replayed as 0 and blamed on a mass
            logged = {name for kind, name, _, _ in log.signals.values() if kind == "ctrl"}
            missing = [m.actuator(a).name for a in range(m.nu) if m.actuator(a).name not in logged]
            if missing:
                raise LogError(f"{log.path.name}: no ctrl:{missing[0]} column" + (f" (nor {len(missing) - 1} more)"
                               if len(missing) > 1 else "") + "; the replay would take its command as 0 and blame "
                               "the model: log every actuator's command (a column of zeros for a motor that was off)")
        self.ctrls = [log.ctrl(m) for log in logs]
        # Each joint's position and velocity readings, per log: a qpos:/qvel: column or an encoder the model holds
        # as a sensor (jointpos, jointvel): {("qpos", joint): key}.
        self.encoders = [_encoders(m, log) for log in logs]
        read = {name for found in self.encoders for _, name in found}
        self.imu = _imus(m, logs, read)
        self.closure = _Closure(m, read, self.imu)
        # The dofs whose start is corrected: those of the joints a log reads (a joint no log reads
        # starts where the model puts it, at rest; correcting it would be a column the logs cannot see),
        # and the rotation of a floating base started from its IMU (see _imus).
        self.dof_joint: list[int] = []
        for j in range(m.njnt):
            if m.joint(j).name in read:
                self.dof_joint += [j] * _dof_count(m, j)
        for j, _, _ in self.imu:
            self.dof_joint += [-1 - j] * 3  # an IMU-started base's rotation: -1 - its joint
        dofs = [_dofs(m, j) for j in range(m.njnt) if m.joint(j).name in read]
        dofs += [np.arange(m.jnt_dofadr[j] + 3, m.jnt_dofadr[j] + 6) for j, _, _ in self.imu]
        self.dofs = np.concatenate(dofs).astype(int) if dofs else np.zeros(0, int)
        self.na = 2 * self.dofs.size
        self.windows: list[_Window] = []
        self._motion: dict[tuple[int, int, int], np.ndarray] = {}  # start_noise's dof series, per (log, joint, dof)
        for li, log in enumerate(logs):
            self._cut(li, log, window)
        # Floating bases no log reads whose start the log does not pin: pinned is an IMU on the base (its attitude
        # and rate) and a contact at every window's start (wheels or feet on the floor: the closure puts them
        # there).  Otherwise a window starts the base where the model (or --start) puts it, at rest, which a
        # robot on its feet is not, and check_model cannot tell a wrong model from a wrong start.
        with_imu = {j for j, _, _ in self.imu}
        self.unpinned = [m.joint(j).name or f"joint {j}" for j in range(m.njnt)
                         if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE and m.joint(j).name not in read
                         and not (j in with_imu and all(_touching(m, int(m.jnt_bodyid[j]), w.qpos)
                                                        for w in self.windows))]
        self.steps = max(int(np.ceil(w.grid[-1] + 1e-9)) + 2 for w in self.windows)
        for win in self.windows:
            win.follow = self.closure.followers(win.qpos, self.dofs)
        self.n = self.p + self.na * len(self.windows)
        self.threads = threads if threads is not None else min(os.cpu_count() or 1, 4)
        self.datas = [mujoco.MjData(m) for _ in range(max(self.threads, 1))]
        self.pool = mujoco.rollout.Rollout(nthread=self.threads if self.threads > 1 else 0)
        template = np.empty(mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS))
        mujoco.mj_getState(m, mujoco.MjData(m), template, mujoco.mjtState.mjSTATE_FULLPHYSICS)
        self.template = template
        self.rows = sum(b - a for a, b in self.window_rows())

    def start_noise(self, li: int, window: _Window) -> tuple[np.ndarray, np.ndarray]:
        """Which of a window's start corrections carry their own misfit, and the noise that scales it.

        A correction of a read joint's position is seen by the window's first sample of its
        ``qpos`` reading, and a velocity's by its ``qvel`` reading (or a base's by its gyro):
        those need nothing more.  Every other correction departs from what the log says
        with nothing to pay: a velocity taken from a central difference of the encoders is
        uncertain by ``sqrt(s_before^2 + s_after^2) / span`` (their noise over the span; at a log's first
        sample the three-point difference's ``sqrt(26) / (2 h)``), a
        ``--start-only`` reading by its own noise.

        Returns:
          ``(mask (2 d,), sigma (2 d,))``: the corrections with a misfit of their own, and their noise
          (rad or m, rad/s or m/s).
        """
        m, log, noises = self.model, self.logs[li], self.noise[li]
        compared = {s.key for s in self.signals[li]}
        nd = self.dofs.size
        mask, sigma = np.zeros(2 * nd, bool), np.ones(2 * nd)
        for i, j in enumerate(self.dof_joint):
            if j < 0:  # an IMU-started base: its attitude from the orientation sensor, its rate from the gyro
                _, (gyro, _), (quat, _) = next(entry for entry in self.imu if entry[0] == -1 - j)
                for part, key, factor in ((0, quat, 2.0), (1, gyro, 1.0)):  # a quaternion's half angle
                    if key and key not in compared and key in noises:
                        mask[part * nd + i], sigma[part * nd + i] = True, factor * float(np.median(noises[key].value))
                continue
            name = m.joint(j).name
            qpos_key = self.encoders[li].get(("qpos", name), f"qpos:{name}")
            qvel_key = self.encoders[li].get(("qvel", name), f"qvel:{name}")
            if qpos_key in log.signals and qpos_key not in compared:
                mask[i], sigma[i] = True, float(np.median(noises[qpos_key].value))
            if qvel_key in log.signals:
                if qvel_key not in compared:
                    mask[nd + i], sigma[nd + i] = True, float(np.median(noises[qvel_key].value))
            elif qpos_key in log.signals:
                k = int(self.dofs[i] - m.jnt_dofadr[j])
                # The dof's series is the same for every window of the log; its noise may be restated
                # (check model's --tolerance), so it is read each time.
                reading, s = _dof_motion(m, j, k, log.signals[qpos_key][2], noises[qpos_key].value,
                                         self._motion.get((li, j, k)))
                self._motion[li, j, k] = reading
                # The difference's own error: the noise through its weights (window.spread), and its truncation:
                # a sampled motion's difference is the velocity of some instant within a step of the sample (how
                # a simulator or a driver stamps it), off by up to the acceleration times a step.
                step = float(np.median(np.diff(log.time)))
                mask[nd + i] = True
                sigma[nd + i] = math.hypot(s * window.spread, _acceleration(reading, step, s) * step,
                                           float(window.disagree[self.dofs[i]]) if window.disagree.size else 0.0)
        return mask, sigma

    # -- the log's windows ---------------------------------------------------------------------------------
    def _cut(self, li: int, log: Log, window: float) -> None:
        m = self.model
        t = log.time
        period = float(np.median(np.diff(t)))
        if window / period < MIN_WINDOW_SAMPLES - 0.5 and window < log.duration:
            raise LogError(f"--window {window:g}: {window / period:.3g} samples per window at {log.path.name}'s "
                           f"{1 / period:.4g} Hz; a window needs at least {MIN_WINDOW_SAMPLES} (--window "
                           f"{MIN_WINDOW_SAMPLES * period:.3g} or more), or its start's corrections absorb what the "
                           f"model gets wrong")
        starts = [0]
        while True:
            nxt = int(np.searchsorted(t, t[starts[-1]] + window - 1e-9))
            if nxt >= t.size - 1:
                break
            starts.append(nxt)
        starts.append(t.size)
        encoders = self.encoders[li]
        qpos_log = {key: (_joint_index(m, "qpos", name), log.signals[key][2]) for (kind, name), key in encoders.items()
                    if kind == "qpos"}
        qvel_log = {key: (_joint_index(m, "qvel", name), log.signals[key][2]) for (kind, name), key in encoders.items()
                    if kind == "qvel"}
        span = max(1, int(round(VELOCITY_SPAN / max(float(np.median(np.diff(t))), 1e-9) / 2)))
        for a, b in zip(starts[:-1], starts[1:], strict=True):
            qpos = self._qpos_at(qpos_log, a)
            lo, hi = max(a - span, 0), min(a + span, t.size - 1)
            qvel = np.zeros(m.nv)
            if a - span < 0 and a + 2 * span < t.size:
                # A log's first sample has no past: a difference forward of it is the velocity half its span later,
                # off by the acceleration times that (a right model's 0.5 s log of an arm started hard failed at
                # 2 to 6 x).  The three-point difference through a, a + span and a + 2 span is exact for a
                # constant acceleration.
                lo, hi = a, a + 2 * span
                qvel, spread = _forward_velocity(m, t, [self._qpos_at(qpos_log, i) for i in (a, a + span, hi)],
                                                 (a, a + span, hi))
                two_point = np.zeros(m.nv)
                mujoco.mj_differentiatePos(m, two_point, t[a + span] - t[a], self._qpos_at(qpos_log, a),
                                           self._qpos_at(qpos_log, a + span))
                disagree = np.abs(qvel - two_point)
            else:
                mujoco.mj_differentiatePos(m, qvel, t[hi] - t[lo], self._qpos_at(qpos_log, lo),
                                           self._qpos_at(qpos_log, hi))
                spread, disagree = math.sqrt(2.0) / max(t[hi] - t[lo], 1e-12), np.zeros(0)
            for ids, values in qvel_log.values():
                qvel[ids] = values[a]
            for j, (gyro, gyro_site), (quat, quat_site) in self.imu:  # a floating base no log reads: its IMU
                if quat in log.signals:
                    reading = log.signals[quat][2][a]
                    body = np.zeros(4)
                    mujoco.mju_mulQuat(body, reading / np.linalg.norm(reading), _conjugate(quat_site))
                    qpos[m.jnt_qposadr[j] + 3 : m.jnt_qposadr[j] + 7] = body
                if gyro in log.signals:
                    rotation = np.zeros(9)
                    mujoco.mju_quat2Mat(rotation, gyro_site)
                    qvel[m.jnt_dofadr[j] + 3 : m.jnt_dofadr[j] + 6] = rotation.reshape(3, 3) @ log.signals[gyro][2][a]
            qpos, qvel = self.closure.project(qpos, qvel)
            grid = (t[a:b] - t[a]) / self.dt
            win = _Window(li, a, b, qpos, qvel, grid, span=(lo, hi), spread=spread, disagree=disagree)
            win.prior = self.start_noise(li, win)
            self.windows.append(win)

    def _qpos_at(self, qpos_log: dict, i: int) -> np.ndarray:
        q = self.rest_qpos.copy()
        for ids, values in qpos_log.values():
            q[ids] = values[i]
        return q

    # -- models, commands, rollouts ------------------------------------------------------------------------
    def theta(self, x: np.ndarray) -> list[np.ndarray]:
        """The targets' values in ``x`` (n,), one array per target."""
        out, i = [], 0
        for target in self.targets:
            out.append(np.asarray(x[i : i + target.size], float))
            i += target.size
        return out

    def build(self, x: np.ndarray) -> mujoco.MjModel:
        """The model with the targets at their values in ``x``."""
        for target, value in zip(self.targets, self.theta(x), strict=True):
            target.parameter.update_from_vector(value)
        try:
            model = sysid.apply_param_modifiers(self.params, self.spec)
        except ValueError as exc:  # MuJoCo's compiler refuses the values (an inertia that breaks A + B >= C)
            values = ", ".join(f"{t.spec} = {v[0]:.6g}" if v.size == 1 else f"{t.spec} = {v}"
                               for t, v in zip(self.targets, self.theta(x), strict=True))
            raise SpecError(f"the model with {values} does not compile ({' '.join(str(exc).split())})") from None
        # The constraint solver run to convergence: stopped at MuJoCo's default (1e-8) a contact's or a
        # joint friction's force jumps with a parameter's smallest change, and a finite-difference
        # Jacobian of the residual is noise.  The model written out keeps its own tolerance.
        model.opt.tolerance = min(model.opt.tolerance, SOLVER_TOLERANCE)
        return model

    def x0(self) -> np.ndarray:
        """The model's values, and no correction of the windows' starts."""
        return np.concatenate([t.nominal for t in self.targets] + [np.zeros(self.na * len(self.windows))])

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        nd = self.dofs.size
        anchor = np.concatenate([np.full(nd, ANCHOR_QPOS), np.full(nd, ANCHOR_QVEL)])
        anchors = np.tile(anchor, len(self.windows))
        low = np.concatenate([t.low for t in self.targets] + [-anchors])
        high = np.concatenate([t.high for t in self.targets] + [anchors])
        return low, high

    def delay(self, x: np.ndarray) -> float:
        if self.delay_index is None:
            return self.native_delay  # the model's own actuator delay, as MuJoCo would apply it
        return float(self.theta(x)[self.delay_index][0])

    def controls(self, delay: float) -> np.ndarray:
        """Each window's commands per step, (W, steps, nu): the log's, ``delay`` s late, between samples as
        :attr:`commands` says (:data:`COMMANDS`); before the first sample the first, after the last the last."""
        nu = self.model.nu
        out = np.zeros((len(self.windows), self.steps, nu))
        if nu == 0:
            return out
        k = np.arange(self.steps) * self.dt
        held = [self._held(li) for li in range(len(self.logs))]
        for w, win in enumerate(self.windows):
            t = self.logs[win.log].time
            when = t[win.start] + k - delay
            ctrl = self.ctrls[win.log]
            pieces = held[win.log]
            if pieces is None:
                for j in range(nu):
                    out[w, :, j] = np.interp(when, t, ctrl[:, j])
                continue
            knots, integral = pieces
            for j in range(nu):  # the held command's mean over each step: its integral's difference
                out[w, :, j] = (np.interp(when + self.dt, knots, integral[:, j])
                                - np.interp(when, knots, integral[:, j])) / self.dt
        return out

    def _held(self, li: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Log ``li``'s held commands as their running integral at the samples (piecewise linear between them):
        ``(knots (N + 2,), integral (N + 2, nu))``, padded before the first sample and after the last with those
        commands held; None where holding and interpolating coincide (``linear``, or one sample per step)."""
        t = self.logs[li].time
        if self.commands == "linear" or np.allclose(np.diff(t), self.dt, rtol=1e-9, atol=0.0):
            return None
        ctrl = self.ctrls[li]
        pad = (t[-1] - t[0]) + self.steps * self.dt + 2.0  # beyond any window's steps and any delay (under 1 s)
        knots = np.concatenate([[t[0] - pad], t, [t[-1] + pad]])
        pieces = ctrl[:-1] * np.diff(t)[:, None]
        integral = np.vstack([-ctrl[:1] * pad, np.zeros((1, ctrl.shape[1])), np.cumsum(pieces, axis=0)])
        integral = np.vstack([integral, integral[-1:] + ctrl[-1:] * pad])
        return knots, integral

    def starts(self, x: np.ndarray) -> np.ndarray:
        """Each window's initial state, (W, nstate), with its correction in ``x`` applied."""
        m = self.model
        nq, nv = m.nq, m.nv
        corrections = x[self.p :].reshape(len(self.windows), self.na)
        out = np.tile(self.template, (len(self.windows), 1))
        nd = self.dofs.size
        dq, dv = np.zeros(nv), np.zeros(nv)
        for w, win in enumerate(self.windows):
            qpos = win.qpos.copy()
            if win.follow is None:
                dq[self.dofs], dv[self.dofs] = corrections[w, :nd], corrections[w, nd:]
            else:  # the joints no log reads follow, so the start stays on the constraints
                dq, dv = win.follow[0] @ corrections[w, :nd], win.follow[1] @ corrections[w, nd:]
            mujoco.mj_integratePos(m, qpos, dq, 1.0)
            out[w, 0] = self.logs[win.log].time[win.start]
            out[w, 1 : 1 + nq] = qpos
            out[w, 1 + nq : 1 + nq + nv] = win.qvel + dv
        return out

    def rollout(self, models: list[mujoco.MjModel], starts: np.ndarray, controls: np.ndarray):
        """States (B, steps, nstate) and sensor readings (B, steps, nsensordata) of a batch."""
        state, sensordata = self.pool.rollout(models, self.datas, starts, controls)
        return state, sensordata

    def predict(self, x: np.ndarray, model: mujoco.MjModel | None = None, state=None, sensordata=None):
        """Normalized residual (rows,) at ``x``; the rollout may be given (a Jacobian column's)."""
        if state is None:
            model = model or self.build(x)
            state, sensordata = self.rollout([model] * len(self.windows), self.starts(x), self.controls(self.delay(x)))
        return self._residual(x, state, sensordata)

    def _bias(self, x: np.ndarray) -> dict[str, np.ndarray]:
        return {f"sensor:{t.element}": v for t, v in zip(self.targets, self.theta(x), strict=True)
                if t.kind == "sensor"}

    def _residual(self, x: np.ndarray, state: np.ndarray, sensordata: np.ndarray, per_signal: bool = False):
        m = self.model
        starts = self.starts(x)
        corrections = x[self.p :].reshape(len(self.windows), self.na)
        bias = self._bias(x)
        parts = []
        sums: list[dict[str, list[float]]] = [{} for _ in self.logs]
        for w, win in enumerate(self.windows):
            # the grid: index 0 the start, index k the state after k steps; sensors of step k read
            # the state at its start, so sensordata[k] belongs to grid k.
            states = np.vstack([starts[w][None, :], state[w]])
            g = win.grid
            i0 = np.floor(g).astype(int)
            frac = (g - i0)[:, None]
            for sig in self.signals[win.log]:
                if sig.kind == "sensor":
                    series = sensordata[w][:, sig.index]
                    if sig.key in bias:
                        series = series + bias[sig.key]
                else:
                    offset = 1 if sig.kind == "qpos" else 1 + m.nq
                    series = states[:, offset + sig.index]
                predicted = series[i0] * (1 - frac) + series[np.minimum(i0 + 1, series.shape[0] - 1)] * frac
                r = (sig.measured[win.start : win.stop] - predicted) / sig.sigma
                parts.append(r.ravel())
                if per_signal:
                    entry = sums[win.log].setdefault(sig.key, [0.0, 0])
                    entry[0] += float(np.sum(r * r))
                    entry[1] += r.size
            mask, sigma = win.prior
            if mask.any():  # the start's own misfit: how far its corrections leave what the log says
                r = -corrections[w][mask] / sigma[mask]
                parts.append(r)
                if per_signal:
                    entry = sums[win.log].setdefault(START, [0.0, 0])
                    entry[0] += float(np.sum(r * r))
                    entry[1] += r.size
        vector = np.concatenate(parts)
        if per_signal:
            return vector, {str(self.logs[i].path): {k: float(np.sqrt(s / max(n, 1))) for k, (s, n) in d.items()}
                            for i, d in enumerate(sums)}
        return vector

    # -- Jacobian: 1 + p + 2 d batched rollouts -----------------------------------------------------------
    def steps_of(self, x: np.ndarray) -> np.ndarray:
        """Finite-difference steps, (n,): 1e-5 of each target's scale (away from its upper bound)."""
        h = np.concatenate([1e-5 * t.scale for t in self.targets] +
                           [np.tile(np.concatenate([np.full(self.dofs.size, 1e-6), np.full(self.dofs.size, 1e-5)]),
                                    len(self.windows))])
        low, high = self.bounds()
        return np.where(x + h > high, -h, h)

    def jacobian(self, x: np.ndarray, r: np.ndarray | None = None) -> np.ndarray:
        """d residual / d x, (rows, n), by forward differences with the windows' starts perturbed together."""
        x = np.asarray(x, float).reshape(-1)
        if r is None:
            r = self.predict(x)
        r = np.asarray(r, float).reshape(-1)
        h = self.steps_of(x)
        jac = np.zeros((r.size, self.n))
        for i in range(self.p):
            xi = x.copy()
            xi[i] += h[i]
            jac[:, i] = (self.predict(xi) - r) / h[i]
        starts = self.start_columns(x, r)
        for w, (a, b) in enumerate(self.window_rows()):
            jac[a:b, self.p + w * self.na : self.p + (w + 1) * self.na] = starts[a:b]
        return jac

    def _current(self, x: np.ndarray) -> mujoco.MjModel:
        key = x[: self.p].tobytes()
        if getattr(self, "_cache_key", None) != key:
            self._cache_model = self.build(x)
            self._cache_key = key
        return self._cache_model

    def window_rows(self) -> list[tuple[int, int]]:
        out, a = [], 0
        for win in self.windows:
            b = a + (win.stop - win.start) * sum(s.sigma.size for s in self.signals[win.log]) + int(win.prior[0].sum())
            out.append((a, b))
            a = b
        return out

    def without_starts(self, columns: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """``columns`` (rows, k) less, window by window, what a correction of that window's start could explain.

        Args:
          columns: residual sensitivities to k quantities (d residual / d quantity), (rows, k).
          starts: the residual's sensitivity to each window's start corrections, stacked (rows, 2 d)
            (:meth:`start_columns`).

        Returns:
          (rows, k): each column's part that no start correction reproduces (its component
          orthogonal to its window's start columns, the window's start-misfit rows included).
          ``reduced.T @ reduced`` is the Schur complement of the starts' block.  Directions of a
          window's start columns weaker than :data:`START_RCOND` of its strongest (corrections
          the constraints undo) are not eliminated.
        """
        reduced = np.array(columns, float)
        for a, b in self.window_rows():
            u, sv, _ = np.linalg.svd(starts[a:b], full_matrices=False)
            u = u[:, sv > START_RCOND * sv[0]] if sv.size and sv[0] > 0 else u[:, :0]
            reduced[a:b] -= u @ (u.T @ reduced[a:b])
        return reduced

    def rms(self, x: np.ndarray) -> tuple[np.ndarray, dict[str, dict[str, float]]]:
        """The normalized residual (rows,) at ``x`` and each reading's RMS of it, per log (``{log: {signal: rms}}``)."""
        state, sensordata = _roll(self, x)
        return self._residual(x, state, sensordata, per_signal=True)

    def predictions(self, x: np.ndarray) -> list[dict[str, np.ndarray]]:
        """The model's prediction of every logged reading at ``x``: per log, ``{signal: (N, w)}``."""
        state, sensordata = _roll(self, x)
        r = self._residual(x, state, sensordata)
        out: list[dict[str, np.ndarray]] = [{s.key: np.zeros_like(s.measured) for s in sigs} for sigs in self.signals]
        a = 0
        for win in self.windows:
            n = win.stop - win.start
            for sig in self.signals[win.log]:
                b = a + n * sig.sigma.size
                err = r[a:b].reshape(n, sig.sigma.size) * sig.sigma
                out[win.log][sig.key][win.start : win.stop] = sig.measured[win.start : win.stop] - err
                a = b
            a += int(win.prior[0].sum())  # the start's own misfit: not a reading
        return out

    def errors(self, x: np.ndarray) -> list[dict[str, np.ndarray]]:
        """Normalized errors (measured - predicted) / noise of every reading at ``x``: per log, ``{signal: (N, w)}``."""
        pred = self.predictions(x)
        return [{s.key: (s.measured - pred[li][s.key]) / s.sigma for s in sigs} for li, sigs in enumerate(self.signals)]

    def refine_starts(self, x: np.ndarray, iterations: int = REFINE_ITERATIONS) -> np.ndarray:
        """``x`` with each window's start corrected to fit its window (the targets held), by Gauss-Newton.

        The corrections act on their own window only, so each iteration is 2 d + 1 batched
        rollouts and one small least squares per window.  Directions of a window's start no
        reading sees (:data:`START_RCOND`) are left alone.  A start on constraints (a closed
        loop, wheels on the floor), and any other, keeps a step only where it lowers that window's
        misfit, halving its next one where it did not (down to :data:`SHRINK_MIN`): stiff
        constraints, or a servo whose force saturates at a noisy start's error, make a window far
        from linear in its start.  The iterations stop once one lowers the whole misfit by less
        than :data:`REFINE_TOL` of it (an arm in free space: 2 or 3; a robot standing on its
        feet: up to :data:`REFINE_ITERATIONS`).  A window whose Gauss-Newton step promises less than
        :data:`REFINE_TOL` of its own misfit has converged: a step of it that is rejected is round-off,
        not a nonlinearity, and is not halved (halving it four times had cost the arm seven more
        iterations, each 2 d + 1 rollouts, for a misfit the same to 1e-11).
        """
        x = np.array(x, float)
        rows = self.window_rows()
        low, high = self.bounds()
        model = self._current(x)
        r = self.predict(x, model=model)
        shrink = np.ones(len(rows))
        converged = np.zeros(len(rows), bool)
        for _ in range(iterations):
            before = float(r @ r)
            jac = self.start_columns(x, r)
            trial = x.copy()
            for w, (a, b) in enumerate(rows):
                idx = self.p + w * self.na + np.arange(self.na)
                step = shrink[w] * np.linalg.lstsq(jac[a:b], -r[a:b], rcond=START_RCOND)[0]
                misfit = float(r[a:b] @ r[a:b])
                promised = misfit - float(np.sum((r[a:b] + jac[a:b] @ step) ** 2))
                converged[w] = promised < REFINE_TOL * misfit
                trial[idx] = np.clip(x[idx] + step, low[idx], high[idx])
            r_trial = self.predict(trial, model=model)
            halved = False
            for w, (a, b) in enumerate(rows):
                idx = self.p + w * self.na + np.arange(self.na)
                if r_trial[a:b] @ r_trial[a:b] < r[a:b] @ r[a:b]:
                    x[idx], r[a:b] = trial[idx], r_trial[a:b]
                elif shrink[w] > SHRINK_MIN and not converged[w]:
                    shrink[w] /= 2
                    halved = True
            if before - float(r @ r) < REFINE_TOL * before and not halved:
                break
        return x

    def start_columns(self, x: np.ndarray, r: np.ndarray) -> np.ndarray:
        """d residual / d (window start), stacked per window: (rows, 2 d)."""
        h = self.steps_of(x)
        W = len(self.windows)
        rows = self.window_rows()
        out = np.zeros((r.size, self.na))
        for j in range(self.na):
            xi = x.copy()
            idx = self.p + np.arange(W) * self.na + j
            xi[idx] += h[idx]
            dr = self.predict(xi, model=self._current(x)) - r
            for w in range(W):
                a, b = rows[w]
                out[a:b, j] = dr[a:b] / h[idx[w]]
        return out

    def check_finite(self, x: np.ndarray) -> None:
        """Refuse a model whose rollouts from the logs' states diverge (NaN or infinity): name the log and time.

        Raises:
          LogError: the first window whose prediction is not finite.
        """
        with mujoco_warnings() as warnings:  # MuJoCo resets a simulation that blows up, with a warning
            r = self.predict(x)
        if warnings:
            raise LogError(f"{self.logs[0].path if len(self.logs) == 1 else 'the logs'}: replaying the log, MuJoCo "
                           f"says: {warnings[0]}; is the log this model's robot, in SI units and radians?")
        if np.all(np.isfinite(r)):
            return
        for win, (a, b) in zip(self.windows, self.window_rows(), strict=True):
            if not np.all(np.isfinite(r[a:b])):
                log = self.logs[win.log]
                raise LogError(f"{log.path}: the model's rollout from the log's state at t = "
                               f"{log.time[win.start] - log.time[0]:.3f} s diverges (not a finite number); is the "
                               f"log this model's robot, in SI units and radians?")

    def close(self) -> None:
        self.pool.close()


class _Closure:
    """A window's start moved onto the model's constraints: loop closures closed, touching contacts touching.

    A state read from noisy encoders does not close a kinematic loop (a five-bar's
    equality constraint) nor put a wheel exactly on the floor, and a stiff, soft
    constraint answers a 0.1 mm gap with a transient that swamps the window.  So each
    start is moved, by the least change, onto ``e(q) = 0`` for every equality
    constraint and every contact nearer than :data:`CONTACT_SNAP` (:data:`BASE_SNAP`
    for a base started from its IMU; its distance made 0), by a few Gauss-Newton
    steps, and its velocity onto ``J v = 0`` for the same rows (a touching contact's
    point at rest: rolling, not slipping).  The change is
    least in a norm that weighs the dofs the logs read (and a base's IMU rotation)
    :data:`UNREAD_WEIGHT` times more than the rest, so a joint no log reads (a passive
    knee, a base's height) takes up the closure.  A model with neither equality
    constraints nor contacts is left as it is.
    """

    def __init__(self, m: mujoco.MjModel, read: set[str], imu: list):
        self.model = m
        self.data = mujoco.MjData(m)
        self.active = (m.neq > 0 or m.ngeom > 1)
        weight = np.full(m.nv, 1.0 / UNREAD_WEIGHT)
        for j in range(m.njnt):
            size = {int(mujoco.mjtJoint.mjJNT_FREE): 6, int(mujoco.mjtJoint.mjJNT_BALL): 3}.get(int(m.jnt_type[j]), 1)
            if m.joint(j).name in read:
                weight[m.jnt_dofadr[j] : m.jnt_dofadr[j] + size] = 1.0
        for j, _, _ in imu:
            weight[m.jnt_dofadr[j] + 3 : m.jnt_dofadr[j] + 6] = 1.0
        self.inverse_weight = 1.0 / weight
        self.snappable = weight < 1.0  # the dofs no log reads
        # A base no log places starts at the model's height, a guess: its contacts are looked for farther.
        self.snap = BASE_SNAP if imu else CONTACT_SNAP

    def _rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(position residual, its Jacobian, the velocity rows' Jacobian)`` at ``self.data``'s qpos."""
        m, d = self.model, self.data
        saved = m.geom_margin.copy()
        m.geom_margin[:] = saved + self.snap  # find contacts a little apart too (a wheel read 0.3 mm up)
        try:
            mujoco.mj_fwdPosition(m, d)
        finally:
            m.geom_margin[:] = saved
        jac = d.efc_J.reshape(d.nefc, m.nv) if d.nefc else np.zeros((0, m.nv))
        equality = np.flatnonzero(d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY)
        # A contact is put on the ground only where a joint no log reads can take it there (a wheel under a base
        # whose height no log holds): between bodies the readings place (an arm's links a millimetre apart, a foot
        # under a base placed by motion capture), the gap is what the log says, not a guess to correct.
        frames = [(c, self._contact_frame(c)) for c in d.contact[: d.ncon] if c.efc_address >= 0]
        kept = [(c, rows) for c, rows in frames
                if np.linalg.norm(rows[0, self.snappable]) > UNREAD_SHARE * np.linalg.norm(rows[0])]
        residual = np.concatenate([d.efc_pos[equality], [c.dist for c, _ in kept]])
        zero = np.zeros((0, m.nv))
        normals = np.vstack([jac[equality]] + [rows[:1] for _, rows in kept]) if kept else jac[equality]
        # The velocity rows: each kept contact's point at rest relative to what it touches (a wheel rolling, a
        # foot standing), along its normal and, with friction, along the ground.
        velocity = np.vstack([jac[equality]] + [rows[: 1 if c.dim == 1 else 3] for c, rows in kept] + [zero])
        return residual, normals, velocity

    def _contact_frame(self, c) -> np.ndarray:
        """A contact's relative point velocity per unit qvel in its frame, (3, nv): normal, then two tangents."""
        m, d = self.model, self.data
        out = np.zeros((3, m.nv))
        for geom, sign in ((c.geom2, 1.0), (c.geom1, -1.0)):
            body = int(m.geom_bodyid[geom])
            if body == 0:
                continue
            jacp = np.zeros((3, m.nv))
            mujoco.mj_jac(m, d, jacp, None, c.pos, body)
            out += sign * jacp
        return c.frame.reshape(3, 3) @ out

    def _least(self, jac: np.ndarray, residual: np.ndarray) -> np.ndarray:
        """The least weighted change ``dx`` with ``jac dx = -residual``, in the directions the rows see.

        A closure's row that no motion can change (a planar five-bar's lateral row: both of
        its points move together) has a singular value of 1e-4 of the others; solving it
        would blow a noisy reading up ten thousand fold, so directions below
        :data:`CLOSURE_RCOND` of the largest are left alone.
        """
        root = np.sqrt(self.inverse_weight)
        return root * np.linalg.lstsq(jac * root, -residual, rcond=CLOSURE_RCOND)[0]

    def followers(self, qpos: np.ndarray, dofs: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """How every dof moves with a correction of ``dofs`` at ``qpos`` (on the constraints), to first order.

        A read hip corrected alone would open its five-bar, a wheel's speed corrected alone
        would make it slip: each start then begins with a constraint's transient.  Instead
        the joints no log reads (a knee, the base's height and velocity) follow by the least
        weighted change that keeps the constraints' rows at zero.

        Returns:
          ``(positions, velocities)``, each (nv, len(dofs)): the dofs' change per unit
          correction; None when no constraint row is active (the correction is the change).
        """
        if not self.active:
            return None
        self.data.qpos[:] = qpos
        _, jac, velocity = self._rows()
        if jac.shape[0] == 0 and velocity.shape[0] == 0:
            return None
        embed = np.zeros((self.model.nv, dofs.size))
        embed[dofs, np.arange(dofs.size)] = 1.0
        root = np.sqrt(self.inverse_weight)[:, None]

        def follow(rows: np.ndarray) -> np.ndarray:
            if rows.shape[0] == 0:
                return embed
            return embed + root * np.linalg.lstsq(rows * root.T, -(rows @ embed), rcond=CLOSURE_RCOND)[0]

        return follow(jac), follow(velocity)

    def project(self, qpos: np.ndarray, qvel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(qpos, qvel)`` on the constraints (copies; unchanged for a model without any)."""
        if not self.active:
            return qpos, qvel
        m, d = self.model, self.data
        read_qpos, read_qvel = qpos, qvel
        qpos, qvel = qpos.copy(), qvel.copy()
        for _ in range(CLOSURE_STEPS):
            d.qpos[:] = qpos
            residual, jac, _ = self._rows()
            if residual.size == 0:
                return qpos, qvel
            if np.max(np.abs(residual)) < CLOSED:
                break
            mujoco.mj_integratePos(m, qpos, self._least(jac, residual), 1.0)
        d.qpos[:] = qpos
        _, _, velocity = self._rows()
        if velocity.shape[0]:
            qvel = qvel + self._least(velocity, velocity @ qvel)
        if not (np.all(np.isfinite(qpos)) and np.all(np.isfinite(qvel))):
            return read_qpos.copy(), read_qvel.copy()  # no closure reachable from the readings: start from them
        return qpos, qvel


def _conjugate(quat: np.ndarray) -> np.ndarray:
    return np.array([quat[0], -quat[1], -quat[2], -quat[3]])


def _imus(m: mujoco.MjModel, logs: list[Log], read: set[str]) -> list[tuple[int, tuple, tuple]]:
    """The floating bases no log reads but a logged gyro on them does: ``(joint, (gyro key, its site's quat
    in the body), (framequat key or "", its site's quat))`` each.

    A robot's logs seldom hold its base's pose (nothing measures it; an estimator
    guesses it).  Its IMU does: the gyro reads the base's angular velocity and an
    orientation sensor (``framequat`` of a site on the base) its attitude, in the
    site's frame.  Such a base starts each window there, and its rotation and angular
    velocity are corrected with the other starts.  Its position and linear velocity
    start at the model's and at rest, uncorrected: body-frame readings cannot see them
    while the robot touches nothing (in flight they change no reading; a robot on the
    ground would need them from its contacts, which is not done here).
    """
    logged = {name for log in logs for kind, name, _, _ in log.signals.values() if kind == "sensor"}
    out = []
    for j in range(m.njnt):
        if m.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE or m.joint(j).name in read:
            continue
        body = int(m.jnt_bodyid[j])
        gyro, quat = ("", np.array([1.0, 0.0, 0.0, 0.0])), ("", np.array([1.0, 0.0, 0.0, 0.0]))
        for sid in range(m.nsensor):
            name = m.sensor(sid).name
            if name not in logged:
                continue
            kind, objtype, obj = m.sensor_type[sid], m.sensor_objtype[sid], m.sensor_objid[sid]
            if kind == mujoco.mjtSensor.mjSENS_GYRO and m.site_bodyid[obj] == body:
                gyro = (f"sensor:{name}", np.array(m.site_quat[obj]))
            elif kind == mujoco.mjtSensor.mjSENS_FRAMEQUAT and objtype == mujoco.mjtObj.mjOBJ_SITE and \
                    m.site_bodyid[obj] == body and m.sensor_reftype[sid] == mujoco.mjtObj.mjOBJ_UNKNOWN:
                quat = (f"sensor:{name}", np.array(m.site_quat[obj]))
        if gyro[0]:
            out.append((j, gyro, quat))
    return out


def fit(problem: Problem, max_iters: int = 50) -> FitResult:
    """Least squares over the targets and the windows' starts with ``mujoco.sysid.optimize``; 95 % intervals.

    Args:
      problem: the :class:`Problem`.
      max_iters: the optimizer's iteration cap.

    Returns:
      The :class:`FitResult`.
    """
    started = clock.perf_counter()
    x0 = problem.x0()
    low, high = problem.bounds()
    params = sysid.ParameterDict()
    # One sysid Parameter for the whole vector: the targets' own Parameters carry the
    # modifiers (Problem.build); the windows' starts are nuisance values with no modifier.
    params.add(sysid.Parameter("x", x0, low, high))
    calls = {"jac": 0}

    def residual_fn(x, _params):
        x = np.asarray(x, float)
        if x.ndim == 2:
            return [np.column_stack([problem.predict(x[:, k]) for k in range(x.shape[1])])], None, None
        return [problem.predict(x)], None, None

    def jacobian(x, r):
        calls["jac"] += 1
        return problem.jacobian(np.asarray(x).reshape(-1), np.asarray(r).reshape(-1))

    problem.check_finite(x0)
    x0 = problem.refine_starts(x0)  # the model's values, each window started where its log says
    params["x"].update_from_vector(x0)
    _, before = problem.rms(x0)
    trace = io.StringIO()  # mujoco.minimize's iteration log, kept off the terminal
    verbosity = absl_logging.get_verbosity()
    absl_logging.set_verbosity(absl_logging.ERROR)  # its note that delay and friction start at their bound 0
    try:
        opt, _ = sysid.optimize(params, residual_fn, optimizer="mujoco", verbose=False, max_iters=max_iters,
                                jacobian=jacobian, x_scale="jac", output=trace, xtol=XTOL,
                                mu_factor=MU_FACTOR)
    finally:
        absl_logging.set_verbosity(verbosity)
    x = np.asarray(opt["x"].value, float).reshape(-1)
    r, after = problem.rms(x)
    jac = problem.jacobian(x, r)
    half = _intervals(problem, r, jac)
    values = problem.theta(x)
    halves, moved, identified, bounded = [], [], [], []
    i = 0
    for target, value in zip(problem.targets, values, strict=True):
        cols = jac[:, i : i + target.size] * target.scale
        movement = float(np.linalg.norm(cols))
        hw = np.asarray(half[i : i + target.size], float)
        moved.append(movement)
        halves.append(hw)
        identified.append(bool(movement > NEVER_MOVES and np.all(np.isfinite(hw)) and np.all(hw < target.scale)))
        # A value the optimizer stopped at its bound: its interval is one-sided (the bound, then the value + half).
        reach = AT_BOUND * target.scale
        bounded.append(np.where(value <= target.low + reach, -1, np.where(value >= target.high - reach, 1, 0)))
        i += target.size
    return FitResult(problem.targets, values, halves, moved, identified, before, after,
                     clock.perf_counter() - started, calls["jac"], x, bounded, residual_checks(problem, r))


def fit_and_replay(problem: Problem, max_iters: int = 50):
    """:func:`fit`, and every log's readings as logged, as the model predicts them and as the fit does.

    Returns:
      ``(result, measured, nominal, identified)``: the :class:`FitResult`, then per log
      ``{signal: (N, w)}`` each (the model's and the fit's with each window's start refined).
    """
    result = fit(problem, max_iters)
    nominal = problem.predictions(problem.refine_starts(problem.x0()))
    measured = [{s.key: s.measured for s in signals} for signals in problem.signals]
    return result, measured, nominal, problem.predictions(result.x)


def residual_checks(problem: Problem, r: np.ndarray) -> dict:
    """Do the residuals at the fit support its intervals?  ``{"level", "supported", "checked"}``.

    The intervals assume each reading's errors are its stated noise: an RMS of about 1 in
    its units, and errors of neighbouring samples independent.  Both are checked per reading
    (the RMS within :data:`NOISE_AGREES` of 1, the lag-1 autocorrelation within each window
    below :data:`WHITE`); where either fails the intervals are still the wider of the noise's
    and the windows' spread (:func:`_intervals`), but not called 95 % ones.
    """
    rows = problem.window_rows()
    worst_rms, worst_rho = ("", 1.0), ("", 0.0)
    sums: dict[str, list[float]] = {}
    for win, (a, _b) in zip(problem.windows, rows, strict=True):
        n = win.stop - win.start
        for sig in problem.signals[win.log]:
            size = n * sig.sigma.size
            e = r[a : a + size].reshape(n, sig.sigma.size)
            a += size
            acc = sums.setdefault(sig.key, [0.0, 0.0, 0.0, 0.0])
            acc[0] += float(np.sum(e * e))
            acc[1] += e.size
            if n > 2:
                acc[2] += float(np.sum(e[1:] * e[:-1]))
                acc[3] += float(np.sum(e[:-1] * e[:-1]))
    problems = []
    for key, (ss, count, cross, auto) in sums.items():
        rms = math.sqrt(ss / max(count, 1))
        rho = cross / auto if auto > 0 else 0.0
        if abs(math.log(max(rms, 1e-300))) > abs(math.log(worst_rms[1])):
            worst_rms = (key, rms)
        if abs(rho) > abs(worst_rho[1]):
            worst_rho = (key, rho)
        if not 1 / NOISE_AGREES <= rms <= NOISE_AGREES:
            problems.append(f"{key} misses by {rms:.2g} x its noise")
        if abs(rho) > WHITE:
            problems.append(f"{key}'s errors run together (lag-1 autocorrelation {rho:.2f})")
    checked = (f"each reading's RMS error against its noise (the farthest: {worst_rms[0]}, {worst_rms[1]:.2f}) and "
               f"the correlation of neighbouring errors (the largest: {worst_rho[0]}, {worst_rho[1]:.2f})")
    if problems:
        return {"level": 0.95, "supported": False,
                "checked": f"not calibrated 95 % intervals: {'; '.join(problems[:3])} (checked {checked})"}
    return {"level": 0.95, "supported": True, "checked": f"95 % intervals: checked {checked}"}


def _intervals(problem: Problem, r: np.ndarray, jac: np.ndarray) -> np.ndarray:
    """The targets' 95 % half-widths, (p,): the wider of the noise's and the windows' spread.

    The windows' starts are eliminated first: each window's target columns lose their
    part along its own start columns (what a start's correction could explain instead),
    leaving ``J_red`` (rows, p), whose ``J_red^T J_red`` is the Schur complement of the
    starts' block, so their uncertainty widens the targets' intervals.  Directions of
    a window's start columns weaker than :data:`START_RCOND` of its strongest are
    directions no reading sees (a correction the constraints undo) and are not
    eliminated.  Then:

    - ``mujoco.sysid.calculate_intervals`` on ``J_red`` (every residual independent, the
      residual's variance counted over the rows less all unknowns);
    - the windows' spread: each window one independent draw, the clustered sandwich
      ``H^-1 (sum_w g_w g_w^T) H^-1`` with ``g_w = J_red,w^T r_w``, ``H = J_red^T J_red``, Student's t
      with W - 1 degrees of freedom.  It stays honest when the model replays the log less
      well than its noise and the errors run together within a window.
    """
    from scipy import stats  # late: SciPy's stats costs every command's start-up ~0.5 s; only the intervals use it

    p, windows, rows = problem.p, len(problem.windows), problem.window_rows()
    starts = np.concatenate([jac[a:b, p + w * problem.na : p + (w + 1) * problem.na]
                             for w, (a, b) in enumerate(rows)]) if rows else np.zeros((0, problem.na))
    reduced = problem.without_starts(jac[:, :p], starts)
    # calculate_intervals divides by (rows - p); the starts are unknowns too
    scale = np.sqrt((r.size - p) / max(r.size - jac.shape[1], 1))
    _, noise = sysid.calculate_intervals([r * scale], reduced)
    if windows < 2:
        return np.asarray(noise, float)
    hinv = np.linalg.pinv(reduced.T @ reduced, rcond=1e-12)
    scores = np.array([reduced[a:b].T @ r[a:b] for a, b in rows])  # (W, p)
    cov = hinv @ (scores.T @ scores) @ hinv * windows / (windows - 1)
    spread = stats.t.ppf(0.975, windows - 1) * np.sqrt(np.maximum(np.diag(cov), 0.0))
    return np.maximum(np.asarray(noise, float), spread)


def _roll(problem: Problem, x: np.ndarray):
    model = problem.build(x)
    return problem.rollout([model] * len(problem.windows), problem.starts(x), problem.controls(problem.delay(x)))


def _dof_count(m: mujoco.MjModel, j: int) -> int:
    return {int(mujoco.mjtJoint.mjJNT_FREE): 6, int(mujoco.mjtJoint.mjJNT_BALL): 3}.get(int(m.jnt_type[j]), 1)


def _dofs(m: mujoco.MjModel, j: int) -> np.ndarray:
    return np.arange(m.jnt_dofadr[j], m.jnt_dofadr[j] + _dof_count(m, j))


def _start_only(logs: list[Log], patterns) -> set[str]:
    """The readings (keys) that ``--start-only`` patterns name: used for the windows' starts, not compared.

    Raises:
      LogError: a pattern that names no reading of any log.
    """
    keys = {key for log in logs for key, (kind, *_rest) in log.signals.items() if kind != "ctrl"}
    out: set[str] = set()
    for pattern in patterns or ():
        hits = {k for k in keys if fnmatch.fnmatchcase(k, pattern)}
        if not hits:
            raise LogError(f"--start-only {pattern}: matches no reading of the logs ({', '.join(sorted(keys)[:8])})")
        out |= hits
    return out


def _dof_motion(m: mujoco.MjModel, j: int, k: int, reading: np.ndarray, noise: np.ndarray,
                series: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Dof ``k`` of joint ``j`` as a series from the joint's position reading, and its noise.

    A hinge's or slide's dof is its reading; a free joint's first three are its position's components.  A
    rotation (a ball's, a free joint's last three) is the rotation vector from the first sample, in the joint's
    frame as its velocity is: its noise is twice its quaternion components' (a quaternion holds half the angle).

    Args:
      reading: the joint's position reading, (n, nq of the joint): rad, m or a unit quaternion.
      noise: the reading's noise per component, (nq of the joint,).
      series: the series found before for this dof of this reading (None: found here).

    Returns:
      ``(series (n,), noise)`` in the dof's units (rad or m).
    """
    kind = int(m.jnt_type[j])
    first = 3 if kind == int(mujoco.mjtJoint.mjJNT_FREE) else 0  # where a rotation's quaternion starts
    rotation = kind == int(mujoco.mjtJoint.mjJNT_BALL) or (first == 3 and k >= 3)
    if not rotation:
        return reading[:, k], float(np.median(noise[:3] if first == 3 else noise))
    if series is None:
        quats = reading[:, first:first + 4] / np.linalg.norm(reading[:, first:first + 4], axis=1, keepdims=True)
        turned = np.zeros(3)
        series = np.empty(len(quats))
        for n, q in enumerate(quats):
            mujoco.mju_subQuat(turned, q, quats[0])
            series[n] = turned[k - first]
    return series, 2.0 * float(np.median(noise[first:first + 4]))


def _forward_velocity(m: mujoco.MjModel, t: np.ndarray, qpos: list[np.ndarray], samples: tuple[int, int, int]
                      ) -> tuple[np.ndarray, float]:
    """The velocity at the first of three samples from the quadratic through them, and its noise per unit of the
    positions' (1/s): ``(qvel (nv,), spread)``.

    With ``d1``, ``d2`` the displacements (tangent space: quaternions too) from the first sample to the
    others, ``h1``, ``h2`` their times after it, ``v = (d1 h2^2 - d2 h1^2) / (h1 h2 (h2 - h1))``; for
    ``h2 = 2 h1``, ``(4 d1 - d2) / (2 h1)``, whose noise is ``sqrt(26) / (2 h1)`` times the positions'.
    """
    h1, h2 = t[samples[1]] - t[samples[0]], t[samples[2]] - t[samples[0]]
    d1, d2 = np.zeros(m.nv), np.zeros(m.nv)
    mujoco.mj_differentiatePos(m, d1, 1.0, qpos[0], qpos[1])
    mujoco.mj_differentiatePos(m, d2, 1.0, qpos[0], qpos[2])
    denominator = h1 * h2 * (h2 - h1)
    weights = np.array([-(h2 * h2 - h1 * h1), h2 * h2, -h1 * h1]) / denominator
    return (d1 * h2 * h2 - d2 * h1 * h1) / denominator, float(np.linalg.norm(weights))


def _acceleration(reading: np.ndarray, step: float, noise: float) -> float:
    """A reading's RMS acceleration over the log, its noise's share of the second differences taken out, (units)/s^2."""
    if reading.size < 3:
        return 0.0
    d2 = np.diff(reading, n=2)
    return math.sqrt(max(float(np.mean(d2 * d2)) - 6.0 * noise**2, 0.0)) / step**2


def _encoders(m: mujoco.MjModel, log: Log) -> dict[tuple[str, str], str]:
    """A log's readings of joints' positions and velocities: ``{("qpos" or "qvel", joint): signal key}``.

    A ``qpos:``/``qvel:`` column reads its joint; so does a sensor the model declares as that joint's
    encoder (``jointpos``, ``jointvel``), logged as ``sensor:<name>``.
    """
    out: dict[tuple[str, str], str] = {}
    kinds = {int(mujoco.mjtSensor.mjSENS_JOINTPOS): "qpos", int(mujoco.mjtSensor.mjSENS_JOINTVEL): "qvel"}
    for key, (kind, name, _values, _ids) in log.signals.items():
        if kind in ("qpos", "qvel"):
            out[(kind, name)] = key
        elif kind == "sensor":
            sid = m.sensor(name).id
            reads = kinds.get(int(m.sensor_type[sid]))
            if reads is not None:
                out.setdefault((reads, m.joint(int(m.sensor_objid[sid])).name), key)
    return out


def _touching(m: mujoco.MjModel, body: int, qpos: np.ndarray) -> bool:
    """Whether the tree of ``body`` (a floating base) touches anything outside it at ``qpos``: a contact within
    :data:`CONTACT_SNAP` (the closure puts a start's wheels on the floor to round-off, where MuJoCo may or may not
    count a contact at distance 0)."""
    if not np.any(m.geom_contype | m.geom_conaffinity):
        return False
    m = copy.copy(m)
    m.geom_margin[:] = np.maximum(m.geom_margin, CONTACT_SNAP)
    data = mujoco.MjData(m)
    data.qpos[:] = qpos
    mujoco.mj_forward(m, data)
    root = m.body_rootid
    for c in data.contact[: data.ncon]:
        mine = [root[m.geom_bodyid[g]] == body for g in (c.geom1, c.geom2)]
        if mine[0] != mine[1]:
            return True
    return False


def _refuse_twice(m: mujoco.MjModel, log: Log, compared: dict[str, _Signal]) -> None:
    """Refuse one joint's reading compared twice: a ``qpos:``/``qvel:`` column and the joint's encoder sensor
    (``jointpos``/``jointvel``) that agree far closer than their noises would let two sensors agree.

    Counted twice, one reading's evidence would narrow every interval and sharpen every test by sqrt(2)
    (a check's stated power improved 1.25x).  Two real sensors of one joint (a motor's encoder and the
    output's) differ by their noises and both count.

    Raises:
      LogError: naming both columns and how far apart they are in units of their noise.
    """
    kinds = {int(mujoco.mjtSensor.mjSENS_JOINTPOS): "qpos", int(mujoco.mjtSensor.mjSENS_JOINTVEL): "qvel"}
    for key, (kind, name, _values, _ids) in log.signals.items():
        if kind != "sensor" or key not in compared:
            continue
        sid = m.sensor(name).id
        reads = kinds.get(int(m.sensor_type[sid]))
        column = f"{reads}:{m.joint(int(m.sensor_objid[sid])).name}" if reads else None
        if column is None or column not in compared:
            continue
        a, b = compared[key], compared[column]
        apart = float(np.std(a.measured - b.measured)) / math.hypot(float(np.max(a.sigma)), float(np.max(b.sigma)))
        if apart < 0.5:  # independent noises: about 1
            raise LogError(f"{log.path.name}: {column} and {key} are one reading twice (they differ by {apart:.2g} x "
                           f"their noise; two sensors' noises would make it about 1): counted twice it claims twice "
                           f"the evidence; compare one (--start-only {key})")


def _joint_index(m: mujoco.MjModel, kind: str, name: str) -> np.ndarray:
    """A joint's addresses in qpos or qvel."""
    j = m.joint(name).id
    if kind == "qpos":
        return np.arange(m.jnt_qposadr[j], m.jnt_qposadr[j] + _qpos_count(m, j))
    return _dofs(m, j)


def _qpos_count(m: mujoco.MjModel, j: int) -> int:
    return {int(mujoco.mjtJoint.mjJNT_FREE): 7, int(mujoco.mjtJoint.mjJNT_BALL): 4}.get(int(m.jnt_type[j]), 1)
