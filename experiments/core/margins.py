"""A loop's gain and phase margins measured in MuJoCo, beside the design's.

:func:`measure_loop` breaks the loop at one plant input (an actuator) while the run
stays closed: it adds a known signal ``d`` to the controller's command there,
``u = u_c + d``, and runs the robot in MuJoCo with the run's imperfections and delays
in place.  Around the loop the controller answers ``u_c = -L u``, so at each excited
frequency ``L(jw) = -U_c(jw) / U(jw)`` (the ratio of the two signals' Fourier
coefficients over whole periods of ``d``): the loop transfer function as the robot's
nonlinear physics, contacts, the hold of each command over the control period, the
delays and the clamps produce it, as a frequency-response estimator (Simulink's
``frestimate``) does on a plant model.  An unstable plant is measured the same way,
since the loop stays closed.

``d`` is a multisine (Schroeder's phases, one run per loop, every frequency at once) or
a stepped sine (one run per frequency).  Its frequencies are whole multiples of the
lowest, and each is measured over whole periods after the loop settled.  The margins
come from the measured points: the gain crossover where ``|L|`` passes 1 (interpolated
in ``log w``), the phase margin there, the gain margin where the phase passes -180
deg, and the delay margin ``PM / w_c``.  The designed loop, for a
:class:`~crossdyn.experiments.core.regulator.Regulator` or any :class:`LoopDesign`
``(A, B, K)``, is ``K_i (sI - A + B_o K_o)^-1 B_i`` (the others' loops closed; the
discrete ``z`` form for a design at a rate), its margins python-control's ``margin``.
The design's model need not be the robot's: a controller designed on a simpler model
(the biped's wheeled pendulum) is measured on the whole robot, and the two answers are
reported side by side, with the model the designed one comes from.

A loop with several inputs is broken at one actuator at a time, the others closed.
When the actuators clamped to their ``ctrlrange`` during the measurement, the result
says so and names the amplitude below which the measured margins hold.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import mujoco
import numpy as np

from . import figures
from .errors import ParameterError
from .files import write_text
from .imperfections import Imperfection
from .loop.control_rate import period_in_effect
from .loop.kinds import CommandWriter, HasControlPeriod, Starting
from .loop.simulate import simulate
from .loop.trace import ctrl_clamp
from .models import as_model
from .regulator import Regulator
from .runner import Context

__all__ = ["measure_loop", "measure_setup", "write_margins", "LoopMeasurement", "LoopResponse", "LoopDesign",
           "Margins", "margins_of", "designed_loop", "register_loop", "registered_loops", "LoopSetup", "KEYS"]

# The JSON keys of the margins, each with "measured" and "designed".
KEYS = ("gain_margin_db", "phase_margin_deg", "crossover_rad_s", "delay_margin_s")
# Frequencies per loop by default: enough that the phase between two neighbours (a factor ~1.2 apart over two
# decades) is near a straight line in log w, which the margins interpolate along.
FREQUENCIES = 28
# The default band about the designed crossover: a decade and a half either side, and below the Nyquist rate.
BAND = 30.0
# The highest frequency measured, as a fraction of the Nyquist rate pi / dt: above it a period holds fewer than
# ~7 samples, and the hold's own response dominates.
NYQUIST_FRACTION = 0.3
# A discrete design's margins come from its response at DENSE frequencies from DENSE_FROM rad/s to the Nyquist
# rate: 1 % apart over five decades, where the phase between neighbours is a straight line to a few millidegrees.
DENSE, DENSE_FROM = 4000, 1e-2
# Points of the designed curve a Bode plot draws between the lowest and highest frequency measured.
CURVE = 200
# The injected signal's peak by default, as a fraction of the actuator's ctrlrange half-width: small enough that
# the loop stays near its operating point (linear) and far from the clamp.
AMPLITUDE_FRACTION = 0.05
# What makes a run no measurement of the loop (LoopResponse.problems): MuJoCo clamping more than this share of
# its actuator-steps (the loop gain it saw is a describing function's); the controller's command growing by more
# than this factor from the first period to the last (a loop that is not stable, or has left its operating
# point); the loop measured at half the amplitude (or in its two halves) differing by more than this share near
# the crossover (not linear, or not settled).
SATURATED = 0.05
GROWTH = 4.0
DISAGREE = 0.2
# Halvings of the default amplitude tried when a run saturates or grows, before it is reported as it is.
HALVINGS = 3


@dataclass(frozen=True)
class Margins:
    """A loop's stability margins (None where the loop does not cross: an infinite margin).

    Attributes:
      gain_margin_db: how far the gain may change before instability, dB (negative: a lower gain margin,
        the loop needs at least that much gain, as an unstable plant's does).
      phase_margin_deg: deg, at the gain crossover.
      crossover_rad_s: the gain crossover frequency (``|L| = 1``), rad/s.
      delay_margin_s: the delay the loop tolerates, ``PM / w_c``, s.
      phase_crossover_rad_s: where the phase passes -180 deg, rad/s.
    """

    gain_margin_db: float | None
    phase_margin_deg: float | None
    crossover_rad_s: float | None
    delay_margin_s: float | None
    phase_crossover_rad_s: float | None = None


@dataclass(frozen=True)
class LoopDesign:
    """A design's loop, to measure a controller against: the model ``x' = A x + B u`` (or ``x+ = A x + B u``
    at a period ``dt``) closed by ``u = -K x``.

    Attributes:
      A: ``(n, n)``; B: ``(n, m)``; K: ``(m, n)``, in the model's units.
      inputs: the actuators ``B``'s columns are, by name (None: the model's actuators, in order).
      dt: the period of a discrete design, s; None for a continuous one.
      plant: what the model ``(A, B)`` is, in words (reported beside the designed margins).
    """

    A: np.ndarray
    B: np.ndarray
    K: np.ndarray
    inputs: tuple[str, ...] | None = None
    dt: float | None = None
    plant: str = ""

    def __post_init__(self):
        n, m = np.shape(self.A)[0], np.shape(self.B)[1]
        if np.shape(self.A) != (n, n) or np.shape(self.B) != (n, m) or np.shape(self.K) != (m, n):
            raise ParameterError(f"LoopDesign: A {np.shape(self.A)}, B {np.shape(self.B)}, K {np.shape(self.K)} do "
                                 "not fit (need (n, n), (n, m), (m, n))")
        if self.inputs is not None and len(self.inputs) != m:
            raise ParameterError(f"LoopDesign: {len(self.inputs)} input names for the {m} columns of B")

    @classmethod
    def of(cls, reg: Regulator) -> LoopDesign:
        """A regulator's loop: its linearization (continuous), or its zero-order-hold model with any delay."""
        if reg.dt is None:
            return cls(reg.linearization.A, reg.linearization.B, reg.design.K,
                       plant="the regulator's linearization of the model at its operating point")
        assert reg.plant is not None  # a design at a rate keeps its discrete model
        plant = f"the zero-order-hold model of the regulator's linearization at {reg.dt:g} s"
        if not reg.delay:
            return cls(*reg.plant, reg.design.K, dt=reg.dt, plant=plant)
        # The delay is the plant's (its chain holds what reached the break, u); the regulator's memory of its own
        # commands u_c is the controller's: a chain of its own, driven by u_c = -K_x x - K_m m, so that the loop
        # broken at u is K_x x + K_m m over u, with the memory's dynamics inside the open loop.
        A, B, K = reg.plant[0], reg.plant[1], reg.design.K
        n, size = reg.linearization.A.shape[0], A.shape[0]
        shift, enter = A[n:, n:], B[n:]
        open_loop = np.zeros((2 * size - n, 2 * size - n))
        open_loop[:size, :size] = A
        open_loop[size:, :n], open_loop[size:, size:] = -enter @ K[:, :n], shift - enter @ K[:, n:]
        return cls(open_loop, np.vstack([B, np.zeros_like(enter)]),
                   np.hstack([K[:, :n], np.zeros((K.shape[0], size - n)), K[:, n:]]), dt=reg.dt,
                   plant=f"{plant}, with its {reg.delay}-period delay (the regulator's memory of its commands in "
                         "the controller)")

    def column(self, model: mujoco.MjModel, actuator: int) -> int | None:
        """The column of ``B`` that is the model's ``actuator``, or None when the design has no such input."""
        if self.inputs is None:
            return actuator if actuator < self.B.shape[1] else None
        name = model.actuator(actuator).name
        return self.inputs.index(name) if name in self.inputs else None


@dataclass(frozen=True)
class LoopResponse:
    """One loop, broken at one actuator, measured (and designed).

    Attributes:
      actuator: the actuator's name.
      frequencies: ``(F,)`` rad/s.
      measured: ``(F,)`` complex ``L(jw)`` measured in MuJoCo.
      designed: ``(F,)`` complex ``L(jw)`` of the design, or None without one.
      margins: measured :class:`Margins`.
      design_margins: the design's :class:`Margins` (python-control's ``margin``), or None.
      clamped_steps: actuator-steps MuJoCo clamped to the ctrlrange during the measurement's runs.
      steps: control steps of the measurement's runs.
      holds_below: the amplitude at this actuator (its unit) below which the margins hold: the
        distance from its operating command to its ctrlrange, when the measurement clamped; else None.
      plant: the model the designed loop comes from, in words ("" without a design).
      curve: the designed ``L`` between the measured frequencies, ``(w (D,), L (D,))``, for the plot; or None.
    """

    actuator: str
    frequencies: np.ndarray
    measured: np.ndarray
    designed: np.ndarray | None
    margins: Margins
    design_margins: Margins | None
    clamped_steps: int = 0
    steps: int = 0
    holds_below: float | None = None
    plant: str = ""
    curve: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    # Why the run is no measurement of the loop (fell, saturated, grew, not linear), one sentence each; empty: none.
    problems: list[str] = field(default_factory=list)
    # How far the loop measured at half the amplitude, and in the first and the second half of the window, departs
    # from it near the crossover (median relative difference; None: not measured).
    agreement: dict[str, float | None] = field(default_factory=dict)

    def sentences(self) -> list[str]:
        """The margins measured beside designed, and what limits them, one sentence each."""
        m, d = self.margins, self.design_margins
        lead = [f"no measurement of the loop at {self.actuator!r}: " + "; ".join(self.problems)
                + " (the figures below are what the run gave, not the loop's margins)"] if self.problems else []
        out = lead + [f"loop at {self.actuator!r}: phase margin {_pm(m)}, gain margin {_gm(m)}, "
                      f"delay margin {_dm(m)}"
               + ("" if d is None else
                  f" (designed: {_num(d.phase_margin_deg, '.3g', 'deg')} at {_num(d.crossover_rad_s, '.4g', 'rad/s')}"
                  f", {_num(d.gain_margin_db, '.3g', 'dB')}, {_num(d.delay_margin_s, '.3g', 's')}"
                  + (f", on {self.plant}" if self.plant else "") + ")")]
        if self.clamped_steps:
            out.append(f"MuJoCo clamped the actuators to their ctrlrange {self.clamped_steps} times in "
                       f"{self.steps} steps: the margins hold only below {self.holds_below:.4g} at "
                       f"{self.actuator!r} (what its ctrlrange leaves about the operating command); beyond it the "
                       "loop gain falls "
                       "and the measured one is a describing function's, not the design's")
        return out

    def to_json(self) -> dict:
        """The margins (``KEYS``, each ``measured`` and ``designed``) and the measured and designed points."""
        out: dict = {"actuator": self.actuator}
        for key in KEYS:
            out[key] = {"measured": _finite(getattr(self.margins, key)),
                        "designed": None if self.design_margins is None else
                        _finite(getattr(self.design_margins, key))}
        out["frequencies_rad_s"] = self.frequencies.tolist()
        out["measured_gain_db"] = (20 * np.log10(np.abs(self.measured))).tolist()
        out["measured_phase_deg"] = np.degrees(np.angle(self.measured)).tolist()
        if self.designed is not None:
            out["designed_gain_db"] = (20 * np.log10(np.abs(self.designed))).tolist()
            out["designed_phase_deg"] = np.degrees(np.angle(self.designed)).tolist()
        out["clamped_steps"], out["steps"] = self.clamped_steps, self.steps
        out["margins_hold_below"] = self.holds_below
        out["designed_on"] = self.plant or None
        out["valid"], out["problems"], out["agreement"] = not self.problems, list(self.problems), dict(self.agreement)
        out["sentences"] = self.sentences()
        return out


@dataclass(frozen=True)
class LoopMeasurement:
    """:func:`measure_loop`'s answer: one :class:`LoopResponse` per broken loop.

    Attributes:
      loops: the loops, in actuator order.
      control_dt: the control period, s.
      method: ``"multisine"`` or ``"sines"``.
      notes: what the report says before the loops' sentences: how the loops were broken and, when the
        measured robot is not the design's model, what each is.
    """

    loops: list[LoopResponse]
    control_dt: float
    method: str = "multisine"
    notes: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        """Whether every loop's runs are a measurement of it (no :attr:`LoopResponse.problems`)."""
        return not any(loop.problems for loop in self.loops)

    @property
    def weakest(self) -> LoopResponse:
        """The loop with the smallest measured phase margin (the first when none crosses)."""
        return min(self.loops, key=lambda lp: math.inf if lp.margins.phase_margin_deg is None
                   else lp.margins.phase_margin_deg)

    def sentences(self) -> list[str]:
        out = list(self.notes)
        for loop in self.loops:
            out += loop.sentences()
        return out

    def __str__(self) -> str:
        return "\n".join(self.sentences())

    def table(self) -> str:
        """Markdown: the margins measured beside designed, a row each (a column pair per loop), then the notes."""
        head = "".join(f" measured at {lp.actuator!r} | designed |" for lp in self.loops)
        rows = ["| margin |" + head, "|---|" + "---|---|" * len(self.loops)]
        for key, label in (("phase_margin_deg", "phase margin, deg"), ("crossover_rad_s", "crossover, rad/s"),
                           ("gain_margin_db", "gain margin, dB"), ("delay_margin_s", "delay margin, s")):
            cells = "".join(f" {_cell(getattr(lp.margins, key))} | "
                            f"{_cell(None if lp.design_margins is None else getattr(lp.design_margins, key))} |"
                            for lp in self.loops)
            rows.append(f"| {label} |{cells}")
        return "\n".join(rows) + "\n\n" + "\n\n".join(self.sentences()) + "\n"

    def to_json(self) -> dict:
        """``KEYS`` of the weakest loop at the top, each ``measured`` and ``designed``; every loop under ``loops``."""
        weakest = self.weakest.to_json()
        out = {key: weakest[key] for key in KEYS}
        out["weakest_loop"] = self.weakest.actuator
        out["broken_at"] = ("the plant input, one actuator at a time with the others' loops closed"
                            if len(self.loops) > 1 else f"the plant input {self.loops[0].actuator!r}")
        out["control_dt_s"], out["method"] = self.control_dt, self.method
        out["notes"] = self.sentences()
        out["loops"] = [loop.to_json() for loop in self.loops]
        return out

    def plot(self, title: str = ""):
        """A Bode plot per loop: measured points beside the designed curve, the crossovers marked."""
        fig, axes = figures.figure(2, len(self.loops), width=6.0 * len(self.loops), height=3.0)
        axes = np.asarray(axes).reshape(2, len(self.loops))
        for j, loop in enumerate(self.loops):
            mag, phase = axes[0, j], axes[1, j]
            w = loop.frequencies
            mag.semilogx(w, 20 * np.log10(np.abs(loop.measured)), "o", ms=4, label="measured in MuJoCo")
            phase.semilogx(w, _phase_deg(loop.measured), "o", ms=4, label="measured in MuJoCo")
            if loop.designed is not None:
                dense, curve = loop.curve if loop.curve is not None else (w, loop.designed)
                mag.semilogx(dense, 20 * np.log10(np.abs(curve)), "k-", lw=1, label="designed K (sI - A)^-1 B")
                # the curve's phase placed as the points' are: from the lowest frequency, both start there
                phase.semilogx(dense, _phase_deg(curve), "k-", lw=1, label="designed")
            for margins, style in ((loop.margins, "C0:"), (loop.design_margins, "k:")):
                if margins is not None and margins.crossover_rad_s is not None:
                    for ax in (mag, phase):
                        ax.axvline(margins.crossover_rad_s, color=style[:-1], ls=":", lw=1)
            mag.axhline(0.0, color="0.6", lw=0.8)
            phase.axhline(-180.0, color="0.6", lw=0.8)
            mag.set(ylabel="|L| (dB)", title=f"loop broken at {loop.actuator!r}: PM "
                    f"{_num(loop.margins.phase_margin_deg, '.3g', 'deg')} measured"
                    + ("" if loop.design_margins is None else
                       f", {_num(loop.design_margins.phase_margin_deg, '.3g', 'deg')} designed"))
            phase.set(xlabel="w (rad/s)", ylabel="phase of L (deg)")
            mag.legend(fontsize=7)
        if title:
            fig.suptitle(title)
        return fig


def _cell(value: float | None) -> str:
    return "none" if value is None else f"{value:.4g}"


def _num(value: float | None, spec: str, unit: str) -> str:
    return "none (no crossing)" if value is None else f"{format(value, spec)} {unit}"


def _pm(m: Margins) -> str:
    """The phase margin and its crossover, or what their absence means."""
    if m.phase_margin_deg is None:
        return "none: |L| never crosses 1 in the band measured (no gain crossover)"
    return f"{m.phase_margin_deg:.3g} deg at {_num(m.crossover_rad_s, '.4g', 'rad/s')}"


def _gm(m: Margins) -> str:
    if m.gain_margin_db is None:
        return "unbounded in the band measured (the phase never reaches -180 deg there)"
    return f"{m.gain_margin_db:.3g} dB"


def _dm(m: Margins) -> str:
    return "none (no gain crossover)" if m.delay_margin_s is None else f"{m.delay_margin_s:.3g} s"


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _phase_deg(L: np.ndarray) -> np.ndarray:
    """The phase, deg, unwrapped along frequency and placed in (-360, 0] at the lowest frequency."""
    phase = np.degrees(np.unwrap(np.angle(L)))
    return phase - 360.0 * np.ceil(phase[0] / 360.0) if phase.size else phase


# ----------------------------------------------------------------------------------------------- margins


def margins_of(frequencies: np.ndarray, L: np.ndarray) -> Margins:
    """The margins of a loop known at ``frequencies`` (rad/s, increasing) as ``L (F,)``, interpolated between points.

    The gain crossover is where ``log |L|`` passes 0 along ``log w`` (the one of smallest phase
    margin when several); the phase there is interpolated the same way; the phase crossover is
    where ``L`` passes the negative real axis (the one of smallest ``|GM|`` in dB).
    """
    w, L = np.asarray(frequencies, dtype=float), np.asarray(L, dtype=complex)
    lw, lm = np.log(w), np.log(np.abs(L))
    best_pm, best_wc = None, None
    for i in range(w.size - 1):
        if lm[i] == 0 or lm[i] * lm[i + 1] < 0:
            f = lm[i] / (lm[i] - lm[i + 1])
            phase = np.angle(L[i]) + f * _wrap(np.angle(L[i + 1]) - np.angle(L[i]))
            pm = math.degrees(_wrap(phase + math.pi))
            if best_pm is None or pm < best_pm:
                best_pm, best_wc = pm, math.exp(lw[i] + f * (lw[i + 1] - lw[i]))
    best_gm, best_wp = None, None
    g = np.angle(-L)  # 0 where L is on the negative real axis
    for i in range(w.size - 1):
        step = _wrap(g[i + 1] - g[i])
        if abs(g[i]) < math.pi / 2 and (g[i] == 0 or g[i] * (g[i] + step) < 0):
            f = g[i] / (g[i] - (g[i] + step))
            gm = -20.0 * (lm[i] + f * (lm[i + 1] - lm[i])) / math.log(10.0)
            if best_gm is None or abs(gm) < abs(best_gm):
                best_gm, best_wp = gm, math.exp(lw[i] + f * (lw[i + 1] - lw[i]))
    delay = math.radians(best_pm) / best_wc if best_pm is not None and best_wc and best_pm > 0 else None
    return Margins(best_gm, best_pm, best_wc, delay, best_wp)


def _wrap(angle: float) -> float:
    """An angle into (-pi, pi], rad."""
    return float(math.pi - (math.pi - angle) % (2 * math.pi))


def designed_loop(design: Regulator | LoopDesign, actuator: int) -> tuple[Callable[[np.ndarray], np.ndarray], Margins]:
    """The design's loop broken at its input ``actuator`` (the others closed): ``L(w)`` for rad/s, and its margins.

    Continuous: ``K_i (sI - A + B_o K_o)^-1 B_i``; a design at a rate: the same in ``z = e^(jw dt)``
    with the discrete ``(Ad, Bd)`` (a delay's chain in the plant, the regulator's memory of its commands
    in the controller: :meth:`LoopDesign.of`).  Margins: python-control's ``margin`` (on the dense
    frequency response of a design at a rate); the delay margin ``PM / w_c``.

    Args:
      design: a regulator, or a :class:`LoopDesign`.
      actuator: the input (a column of the design's ``B``; a regulator's are the model's actuators).
    """
    import control  # here: python-control's import costs every command that does not measure a loop

    loop = LoopDesign.of(design) if isinstance(design, Regulator) else design
    A, B, K, dt = (np.asarray(loop.A, dtype=float), np.asarray(loop.B, dtype=float), np.asarray(loop.K, dtype=float),
                   loop.dt)
    others = [k for k in range(B.shape[1]) if k != actuator]
    closed = A - B[:, others] @ K[others]
    system = control.ss(closed, B[:, [actuator]], K[[actuator]], np.zeros((1, 1)), dt=0 if dt is None else dt)

    def L(w: np.ndarray) -> np.ndarray:
        s = 1j * np.asarray(w, dtype=float) if dt is None else np.exp(1j * np.asarray(w, dtype=float) * dt)
        eye = np.eye(closed.shape[0])
        return np.array([(K[actuator] @ np.linalg.solve(x * eye - closed, B[:, actuator])) for x in np.atleast_1d(s)])

    if dt is not None:
        # On a discrete state space python-control's margin roots polynomials whose poles crowd z = 1 at a fast
        # rate (the cart-pole's at 2 ms: 33 deg for 65); on the exact response, dense up to the Nyquist rate, it
        # interpolates crossings as on measured data.
        system = control.frd(system, np.geomspace(DENSE_FROM, math.pi / dt * (1 - 1e-6), DENSE))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # python-control warns when a crossing is missing: an infinite margin
        gm, pm, wpc, wgc = control.margin(system)
    finite = [_finite(v) for v in (gm, pm, wpc, wgc)]
    gm_db = None if finite[0] is None or finite[0] <= 0 else 20.0 * math.log10(finite[0])
    pm_deg, wc = (finite[1], finite[3]) if finite[3] is not None and finite[3] > 0 else (None, None)
    delay = math.radians(pm_deg) / wc if pm_deg is not None and wc and pm_deg > 0 else None
    return L, Margins(gm_db, pm_deg, wc, delay, finite[2])


# ----------------------------------------------------------------------------------------------- measuring


class _Injected:
    """The controller with ``d[row]`` added to its command at one actuator (the loop broken there)."""

    def __init__(self, controller, nu: int, actuator: int, signal: np.ndarray):
        self.inner, self.actuator, self.signal, self.row = controller, actuator, signal, 0
        self.u = np.zeros(nu)
        self.control_dt = controller.control_dt if isinstance(controller, HasControlPeriod) else None

    def start(self, model: mujoco.MjModel, data: mujoco.MjData) -> None:
        self.row = 0
        if isinstance(self.inner, Starting):
            self.inner.start(model, data)

    def __call__(self, t: float, obs) -> np.ndarray:
        value = self.inner(t, obs)
        if isinstance(value, dict):  # by actuator name: resolved once the loop knows the model
            raise ParameterError("measure_loop: the controller returns a dict; return an array (nu,) to have its "
                                 "loop measured")
        self.u[:] = value
        self.u[self.actuator] += self.signal[self.row]
        self.row += 1
        return self.u


class _InjectedDirect(_Injected):
    """The same, for a controller that writes its command in place (``write_command``)."""

    def write_command(self, t: float, sensed: np.ndarray, command: np.ndarray) -> bool:
        if not self.inner.write_command(t, sensed, command):
            return False
        command[self.actuator] += self.signal[self.row]
        self.row += 1
        return True


def _grid(frequencies: np.ndarray, dt: float) -> tuple[np.ndarray, int]:
    """Frequencies snapped to whole multiples of the lowest one whose period is whole control periods: ``(w, N)``.

    ``N`` is the samples per period of the lowest frequency; ``w[k] = 2 pi m_k / (N dt)``.
    """
    w = np.sort(np.asarray(frequencies, dtype=float))
    if w.size == 0 or not np.isfinite(w).all() or w[0] <= 0:
        raise ParameterError(f"measure_loop: frequencies must be positive and finite, rad/s; got {frequencies!r}")
    nyquist = math.pi / dt
    if w[-1] >= nyquist:
        raise ParameterError(f"measure_loop: {w[-1]:g} rad/s is at or above the loop's Nyquist rate {nyquist:g} "
                             f"rad/s (control period {dt:g} s)")
    samples = max(4, int(round(2 * math.pi / (w[0] * dt))))
    base = 2 * math.pi / (samples * dt)
    multiples = np.unique(np.maximum(1, np.round(w / base)).astype(int))
    return multiples * base, samples


def _multisine(multiples: np.ndarray, samples: int, amplitude: float) -> np.ndarray:
    """One period (``samples``) of a multisine at ``multiples`` of the base frequency, Schroeder's phases, peak
    ``amplitude`` (the phases keep the peak near ``sqrt(2 F)`` times each sine's amplitude)."""
    n = np.arange(samples)
    count = multiples.size
    phases = -np.pi * np.arange(count) * (np.arange(count) + 1) / count
    signal = np.cos(2 * np.pi * np.outer(n, multiples) / samples + phases).sum(axis=1)
    return amplitude * signal / np.abs(signal).max()


def _estimate(u: np.ndarray, uc: np.ndarray, bins: np.ndarray) -> np.ndarray:
    """``L = -Uc / U`` at the DFT ``bins`` of the analysis window (whole periods)."""
    U, Uc = np.fft.rfft(u), np.fft.rfft(uc)
    return -Uc[bins] / U[bins]


def _actuator_index(model: mujoco.MjModel, actuator: str | int) -> int:
    if isinstance(actuator, (int, np.integer)) and not isinstance(actuator, bool) and 0 <= actuator < model.nu:
        return int(actuator)
    index = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, actuator) if isinstance(actuator, str) else -1
    if index < 0:
        names = [model.actuator(i).name or str(i) for i in range(model.nu)]
        raise ParameterError(f"measure_loop: no actuator {actuator!r} (the model's: {', '.join(names) or 'none'})")
    return index


def measure_loop(model: mujoco.MjModel | str, controller, *, actuator: str | int | Sequence[str | int] | None = None,
                 frequencies: Sequence[float] | None = None, amplitude: float | None = None,
                 control_dt: float | None = None, keyframe: str | int | None = None, qpos=None, qvel=None,
                 imperfections: Sequence[Imperfection] = (), seed: int = 0, periods: int = 2, settle: int = 1,
                 method: str = "multisine", design: Regulator | LoopDesign | None = None,
                 stop: Callable | None = None,
                 progress: Callable[[int, int, str], None] | None = None) -> LoopMeasurement:
    """Measure the loop transfer function at a plant input in MuJoCo, and its margins (see the module docstring).

    Args:
      model: a compiled model, or a built-in name or MJCF path.
      controller: as ``simulate`` takes it (returning an array ``(nu,)``, or writing its command in place),
        e.g. a regulator; its ``start(model, data)``, if any, is called before each run.
      actuator: where to break the loop: a name or index, or several (each broken in turn, the others
        closed); default every actuator.
      frequencies: rad/s, snapped to whole multiples of the lowest (default: :data:`FREQUENCIES` over
        the designed crossover's band, :data:`BAND` either side, up to 0.3 of the Nyquist rate).
      amplitude: the injected signal's peak, the actuator's unit (default: 5 % of its ctrlrange's
        half-width; an actuator without a ctrlrange needs it).
      control_dt, keyframe, qpos, qvel, imperfections, seed: the run, as ``simulate`` takes them.
      periods: periods of the lowest frequency measured (each after ``settle`` periods of settling).
      method: ``"multisine"`` (one run per loop) or ``"sines"`` (one run per frequency).
      design: the design to compare with: a regulator or a :class:`LoopDesign` (default: the controller
        when it is a regulator).  An actuator that is not one of its inputs has no designed loop.
      stop: as ``simulate`` takes it (e.g. a fall); a run it stops is an error.
      progress: called ``progress(done, total, what)`` after each run.

    Returns:
      The :class:`LoopMeasurement`.

    Raises:
      ParameterError: a bad actuator, frequency, amplitude, count or method, or a run that diverged.
    """
    model = as_model(model)
    if method not in ("multisine", "sines"):
        raise ParameterError(f"measure_loop: method must be 'multisine' or 'sines', got {method!r}")
    for name, value, low in (("periods", periods, 1), ("settle", settle, 0)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
            raise ParameterError(f"measure_loop: {name} must be a whole number >= {low}, got {value!r}")
    if design is None and isinstance(controller, Regulator):
        design = controller
    own_dt = controller.control_dt if isinstance(controller, HasControlPeriod) else None
    dt = float(control_dt if control_dt is not None else own_dt
               or period_in_effect() or model.opt.timestep)  # simulate's default, decided here for the grid
    chosen = list(range(model.nu)) if actuator is None else \
        [actuator] if isinstance(actuator, (str, int, np.integer)) else list(actuator)
    indices = [_actuator_index(model, a) for a in chosen]
    if not indices:
        raise ParameterError("measure_loop: no actuator to break the loop at (the model has none)")
    loop_design = LoopDesign.of(design) if isinstance(design, Regulator) else design
    designs, plant = {}, ""
    if loop_design is not None:
        for i in indices:
            column = loop_design.column(model, i)
            if column is not None:
                designs[i] = designed_loop(loop_design, column)
        plant = loop_design.plant
    clamp = ctrl_clamp(model)
    runs: list[tuple[int, int | None]] = [(i, None) for i in indices] if method == "multisine" else []
    grids = {}
    for i in indices:
        band = frequencies if frequencies is not None else _band(designs.get(i), dt)
        grids[i] = _grid(np.asarray(band, dtype=float), dt)
        if method == "sines":
            runs += [(i, j) for j in range(grids[i][0].size)]
    amplitudes = {i: _amplitude(model, i, amplitude, clamp) for i in indices}
    results: dict[int, list] = {i: [] for i in indices}

    def run(i: int, j: int | None, peak: float) -> tuple:
        """One run with the loop broken at ``i`` (frequency ``j``, or all): ``(picked, L, clamped, steps, mean uc,
        growth, L of each half of the window or None)``."""
        w, samples = grids[i]
        multiples = np.round(w * samples * dt / (2 * math.pi)).astype(int)
        picked = multiples if j is None else multiples[[j]]
        one = _multisine(picked, samples, peak)
        count = (settle + periods) * samples
        signal = np.tile(one, settle + periods)
        wrapped = (_InjectedDirect if isinstance(controller, CommandWriter) else _Injected)(
            controller, model.nu, i, signal)
        trace = simulate(model, wrapped, count * dt, keyframe=keyframe, qpos=qpos, qvel=qvel, control_dt=dt,
                         imperfections=imperfections, seed=seed, stop=stop)
        name = model.actuator(i).name or f"actuator {i}"
        if trace.stopped is not None or trace.t.size < count:
            raise ParameterError(f"measure_loop: the run with the loop broken at {name!r} ended early "
                                 f"({trace.stopped}, t = {trace.t[-1]:.4g} s): a smaller amplitude, or a loop "
                                 "that is stable with the others closed")
        window = slice(settle * samples, count)
        u = trace.command[window, i]
        uc = u - signal[window]
        L = _estimate(u, uc, picked * periods)
        clamped = int(np.asarray(trace.saturated).sum())  # actuator-steps MuJoCo clamped to the ctrlrange
        whole = trace.command[:count, i] - signal
        first, last = (float(np.sqrt(np.mean(whole[k * samples : (k + 1) * samples] ** 2)))
                       for k in (0, settle + periods - 1))
        growth = last / max(first, 1e-12 * max(peak, 1e-300))
        halves = None
        if periods >= 2 and periods % 2 == 0:  # each half of the window: whole periods of every frequency
            half = periods // 2 * samples
            halves = [_estimate(u[k * half : (k + 1) * half], uc[k * half : (k + 1) * half], picked * (periods // 2))
                      for k in (0, 1)]
        return picked, L, clamped, trace.t.size, float(np.mean(uc)), growth, halves

    def unfit(piece: tuple) -> bool:
        return piece[2] > SATURATED * piece[3] or piece[5] > GROWTH

    for done, (i, j) in enumerate(runs, start=1):
        peak = amplitudes[i]
        piece = run(i, j, peak)
        for _ in range(HALVINGS if amplitude is None else 0):  # the amplitude the loop tolerates
            if not unfit(piece):
                break
            peak /= 2
            piece = run(i, j, peak)
        amplitudes[i] = peak if j is None else amplitudes[i]
        results[i].append((*piece, peak))
        if progress is not None:
            name = model.actuator(i).name or f"actuator {i}"
            what = name if j is None else f"{name} at {grids[i][0][j]:.4g} rad/s"
            progress(done, len(runs), what)
    loops = []
    for i in indices:
        w, samples = grids[i]
        pieces = results[i]
        L = np.concatenate([piece[1] for piece in pieces])
        clamped = sum(piece[2] for piece in pieces)
        steps = sum(piece[3] for piece in pieces)
        name = model.actuator(i).name or f"actuator {i}"
        designed = designs[i][0](w) if i in designs else None
        dense = np.geomspace(w[0], w[-1], CURVE)
        curve = (dense, designs[i][0](dense)) if i in designs else None
        # the operating command: a regulator's, else the controller's mean over the measurement
        operating = float(design.linearization.ctrl[i]) if isinstance(design, Regulator) else pieces[0][4]
        holds = _holds_below(clamp, i, operating) if clamped else None
        margins = margins_of(w, L)
        near = _near_crossover(L)
        agreement: dict[str, float | None] = {"halves": None, "half_amplitude": None}
        if all(piece[6] is not None for piece in pieces):
            first = np.concatenate([piece[6][0] for piece in pieces])
            second = np.concatenate([piece[6][1] for piece in pieces])
            agreement["halves"] = _departure(first[near], second[near])
        if method == "multisine" and not any(unfit(piece) for piece in pieces):
            smaller = run(i, None, pieces[0][7] / 2)
            agreement["half_amplitude"] = _departure(smaller[1][near], L[near])
        problems = _problems(pieces, clamped, steps, agreement)
        loops.append(LoopResponse(name, w, L, designed, margins, designs[i][1] if i in designs else None,
                                  clamped, steps, holds, plant if i in designs else "", curve, problems, agreement))
    if len(indices) > 1:
        notes = ["loops broken at the plant input one actuator at a time, the others closed"]
    elif model.nu > 1:
        others = "the other actuator's loop" if model.nu == 2 else f"the other {model.nu - 1} actuators' loops"
        notes = [f"loop broken at the plant input {loops[0].actuator!r}, {others} closed"]
    else:
        notes = []
    return LoopMeasurement(loops, dt, method, notes)


def _near_crossover(L: np.ndarray) -> np.ndarray:
    """The frequencies where ``|L|`` is within a factor 3 of 1 (where the margins are read), else all of them."""
    near = (np.abs(L) > 1 / 3) & (np.abs(L) < 3)
    return near if near.any() else np.ones(L.size, bool)


def _departure(a: np.ndarray, b: np.ndarray) -> float:
    """The median of ``|a - b| / |b|``: how far two measurements of one loop differ."""
    return float(np.median(np.abs(a - b) / np.maximum(np.abs(b), 1e-300))) if b.size else 0.0


def _problems(pieces: list[tuple], clamped: int, steps: int, agreement: dict) -> list[str]:
    """Why the runs are no measurement of the loop: saturated, grown, not repeatable, not linear."""
    out = []
    if clamped > SATURATED * steps:
        out.append(f"the actuators saturated {clamped} of {steps} steps (clamped to their ctrlrange)")
    grown = max(piece[5] for piece in pieces)
    if grown > GROWTH:
        out.append(f"the controller's command grew {grown:.3g} x from the first period to the last: the loop did not "
                   "stay at its operating point (it fell, or is not stable: a loop of the wrong sign does this)")
    if agreement.get("halves") is not None and agreement["halves"] > DISAGREE:
        out.append(f"the loop measured in the window's two halves differs by {agreement['halves']:.0%} near the "
                   "crossover (not settled, or not time-invariant)")
    if agreement.get("half_amplitude") is not None and agreement["half_amplitude"] > DISAGREE:
        out.append(f"the loop measured at half the amplitude differs by {agreement['half_amplitude']:.0%} near the "
                   "crossover: not linear at this amplitude")
    return out


def _band(designed: tuple | None, dt: float) -> np.ndarray:
    """Log-spaced frequencies about the designed crossover (or 0.3 to 30 rad/s without one), below the Nyquist rate."""
    top = NYQUIST_FRACTION * math.pi / dt
    centre = designed[1].crossover_rad_s if designed is not None and designed[1].crossover_rad_s else 3.0
    high = min(centre * BAND, top)
    low = min(centre / BAND, high / BAND)
    return np.geomspace(low, high, FREQUENCIES)


def _amplitude(model: mujoco.MjModel, i: int, amplitude: float | None, clamp) -> float:
    if amplitude is not None:
        if not (isinstance(amplitude, (int, float)) and math.isfinite(amplitude) and amplitude > 0):
            raise ParameterError(f"measure_loop: amplitude must be a positive number, got {amplitude!r}")
        return float(amplitude)
    if clamp is None or not math.isfinite(clamp[1][i] - clamp[0][i]):
        raise ParameterError(f"measure_loop: actuator {model.actuator(i).name!r} has no ctrlrange to scale the "
                             "injected signal by: give amplitude= (its unit)")
    return AMPLITUDE_FRACTION * float(clamp[1][i] - clamp[0][i]) / 2


def _holds_below(clamp, i: int, operating: float) -> float:
    """The ctrlrange's distance from the operating command at actuator ``i``: the largest amplitude not clamped."""
    low, high = clamp[0][i], clamp[1][i]
    return float(max(0.0, min(high - operating, operating - low)))


# ----------------------------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class LoopSetup:
    """What ``crossdyn margins EXPERIMENT`` measures: the experiment's model and controller and its run.

    Attributes:
      model: the compiled model.
      controller: the controller (a regulator's design is compared with, unless ``design`` is given).
      control_dt: s.
      keyframe: the pose to start from.
      imperfections: the run's imperfections.
      frequencies: rad/s, or None for the default band.
      actuator: where to break the loop (default every actuator in turn).
      qpos: the state to start from (default the keyframe's).
      design: the design to compare with, when the controller is not a regulator.
      stop: the run's stop (e.g. a fall), as ``simulate`` takes it.
      seed: the seed of the imperfections' draws.
      note: what the measured and the designed loop each are, when they are not the same model (a
        sentence the report carries).
    """

    model: mujoco.MjModel
    controller: object
    control_dt: float
    keyframe: str | int | None = None
    imperfections: tuple = ()
    frequencies: tuple[float, ...] | None = None
    actuator: str | None = None
    qpos: np.ndarray | None = None
    design: LoopDesign | None = None
    stop: Callable | None = None
    seed: int = 0
    note: str = ""


def measure_setup(setup: LoopSetup, *, imperfections: Sequence[Imperfection] = (), actuator: str | None = None,
                  **options) -> LoopMeasurement:
    """:func:`measure_loop` of an experiment's :class:`LoopSetup`, with its ``note`` among the notes.

    Args:
      setup: the loop.
      imperfections: more imperfections, after the setup's (e.g. a ``Delay``).
      actuator: break the loop here instead of the setup's actuator.
      **options: :func:`measure_loop`'s ``method``, ``progress``, ``periods``, ``amplitude``.
    """
    measured = measure_loop(setup.model, setup.controller, actuator=actuator or setup.actuator,
                            frequencies=setup.frequencies, control_dt=setup.control_dt, keyframe=setup.keyframe,
                            qpos=setup.qpos, imperfections=[*setup.imperfections, *imperfections], seed=setup.seed,
                            design=setup.design, stop=setup.stop, **options)
    if setup.note:
        measured.notes.append(setup.note)
    return measured


_LOOPS: dict[str, Callable[[dict, bool], LoopSetup]] = {}


def register_loop(name: str) -> Callable:
    """Decorator: ``fn(params, short) -> LoopSetup`` is the loop of experiment ``name`` (``crossdyn margins``)."""
    def wrap(fn: Callable[[dict, bool], LoopSetup]) -> Callable[[dict, bool], LoopSetup]:
        _LOOPS[name] = fn
        return fn

    return wrap


def registered_loops() -> dict[str, Callable[[dict, bool], LoopSetup]]:
    """The experiments whose loop ``crossdyn margins`` measures, by name."""
    return dict(_LOOPS)


def write_margins(ctx: Context, setup: LoopSetup, title: str) -> LoopMeasurement:
    """An experiment's loop measured (:func:`measure_setup`): ``bode.png`` and the table ``loop_margins.md`` in
    its folder, measured beside designed with the notes (files, not metrics: the metrics stay the run's)."""
    measured = measure_setup(setup)
    ctx.savefig(measured.plot(title), "bode.png")
    write_text(ctx.out_dir / "loop_margins.md", measured.table())
    return measured
