"""Is the loop the design?  A run's measured decay per closed-loop mode beside the designed poles.

A regulator's design predicts the closed loop ``x' = (A - B K) x`` (or ``x+ = (Ad -
Bd K) x`` at the control rate): each mode ``k`` (pole ``lambda_k``, right eigenvector
``v_k``) carries a modal coordinate ``z_k = (V^-1 x)_k`` that, in the linear loop,
decays as ``e^(Re(lambda_k) t)``.  :func:`compare_to_design` projects a run's states
on the design's modes (``v_k`` of unit length, so ``|z_k|`` is the mode's share of the
state), fits the slope of ``log |z_k|`` over the stretch where the mode decays above
round-off and the noise floor, and sets it beside ``Re(lambda_k)``.

When a measured rate and its pole disagree by more than :data:`DISAGREE` times (or the
mode does not decay) it names the likely causes the trace shows: the actuators clamped
to their ``ctrlrange`` (how many steps), commands reaching them later than the design
assumed, a continuous design's pole beyond the control rate, a mode held at the noise
floor.  A mode the run never excited is said to be so, with no decay reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import ParameterError
from .loop.trace import Trace
from .regulator import FLOOR_MARGIN, RATE_LIMIT, Regulator, settled_level

__all__ = ["compare_to_design", "DesignComparison", "ModeCheck", "DISAGREE", "UNEXCITED"]

# A run whose state's norm over its last tenth exceeds this many times its largest over its first tenth diverged:
# no mode decays, whatever a fit of a clamped or fallen run's last stretch says.
DIVERGED = 10.0
# A measured rate more than this factor from its pole's real part (either way) is a disagreement: within it
# sit the nonlinearity of a run from a finite tilt and the sampling's O(|lambda| dt) shift.
DISAGREE = 2.0
# A mode whose largest |z| is below this fraction of the state's largest norm was not excited by the run: it holds
# only round-off (1e-16 of the state) and what the other modes leak into it through the nonlinearity.
UNEXCITED = 1e-6
# A discrete design's mode whose pole is inside this radius falls a thousandfold per period: nothing to fit.
STEP_FALL = 1e-3
# A mode whose eigenvalue condition number 1 / |w^H v| exceeds this is nearly defective (a delay's chain of
# nearly equal poles): its coordinate amplifies the state by as much and says nothing of the mode.
CONDITION = 1e6
# What a mode too close to another to measure is said to be.
CROWDED = "too close to another mode"
# Below this many rows a slope is not measured: a line through fewer says little about an exponential.
MIN_ROWS = 5
# The fit stops where |z| has fallen to this fraction of its peak (three decades): a fast mode falls that far
# within its own stretch of the run, after which the slower modes' nonlinear remains and round-off hold it.
DECADES = 1e-3


@dataclass(frozen=True)
class ModeCheck:
    """One closed-loop mode of the design against the run.

    Attributes:
      designed: the designed pole, 1/s (a discrete design's ``log(z) / dt``); one of each complex pair.
      measured: the fitted decay rate of ``|z|``, 1/s, or None when it could not be measured.
      peak: the largest ``|z|`` in the run, the state's units.
      rows: how many rows the fit used.
      note: why no rate was measured, or "" when one was.
    """

    designed: complex
    measured: float | None
    peak: float
    rows: int
    note: str = ""

    @property
    def agrees(self) -> bool | None:
        """Within :data:`DISAGREE` of the designed real part; None when nothing was measured."""
        if self.measured is None:
            return None
        if self.measured >= 0 or self.designed.real >= 0:
            return self.measured < 0 and self.designed.real < 0
        ratio = self.measured / self.designed.real
        return 1.0 / DISAGREE <= ratio <= DISAGREE

    def line(self) -> str:
        pole = f"{self.designed.real:.4g}" + (f" +- {abs(self.designed.imag):.4g}j" if self.designed.imag else "")
        if self.measured is None:
            return f"pole {pole} 1/s: {self.note}"
        verdict = "" if self.agrees else f"  <- more than {DISAGREE:g}x off"
        return f"pole {pole} 1/s: measured decay {self.measured:.4g} 1/s over {self.rows} rows{verdict}"


@dataclass(frozen=True)
class DesignComparison:
    """:func:`compare_to_design`'s answer.

    Attributes:
      modes: one :class:`ModeCheck` per designed mode (complex pairs once), slowest first.
      causes: the likely causes of a disagreement the trace shows (empty when all agree).
      control_dt: the run's control period, s.
    """

    modes: list[ModeCheck]
    causes: list[str] = field(default_factory=list)
    control_dt: float = 0.0
    # How the run diverged, in words ("" when it did not): the loop is then not the design, whatever the modes say.
    diverged: str = ""

    @property
    def agrees(self) -> bool | None:
        """Every measured mode within :data:`DISAGREE` of its designed pole; False when the run diverged; None when
        no mode was measured (the run never excited the design's modes): nothing to compare."""
        if self.diverged:
            return False
        if all(m.measured is None for m in self.modes):
            return None
        return all(m.agrees is not False for m in self.modes)

    @property
    def sentence(self) -> str:
        """One sentence: "" when every measured mode agrees, else which disagree and the likely causes (or that
        no mode was measured)."""
        if self.diverged:
            causes = f" (likely {'; '.join(self.causes)})" if self.causes else ""
            return f"the loop is not the design: the run diverged ({self.diverged}){causes}"
        if self.agrees is None:
            why = "; ".join(dict.fromkeys(m.note for m in self.modes if m.note)) or "no rows to fit"
            return f"no mode of the design was measured ({why}): this run cannot say whether the loop is the design"
        off = [m for m in self.modes if m.agrees is False]
        if not off:
            return ""
        which = "; ".join(f"pole {m.designed.real:.4g} 1/s decays at {m.measured:.4g}" for m in off)
        causes = "; ".join(self.causes) if self.causes else "no cause the trace shows (the model or the weights?)"
        return f"the loop is not the design ({which}; more than {DISAGREE:g}x off): likely {causes}"

    def __str__(self) -> str:
        crowded = [m for m in self.modes if m.note.startswith(CROWDED)]
        lines = [m.line() for m in self.modes if m not in crowded]
        if len(crowded) > 1:  # a delay's chain: one line for the lot
            reals = [m.designed.real for m in crowded]
            lines.append(f"{len(crowded)} poles from {max(reals):.4g} to {min(reals):.4g} 1/s (with their pairs): "
                         "too close to one another to tell apart (a delay's chain of nearly equal poles)")
        else:
            lines += [m.line() for m in crowded]
        if self.sentence:
            lines.append(self.sentence)
        return "\n".join(lines)


def compare_to_design(trace: Trace, design: Regulator, *, start: float = 0.0) -> DesignComparison:
    """The run's decay of each mode the design predicts, beside its designed pole (see the module docstring).

    Args:
      trace: a run of ``design`` (``simulate``'s trace).
      design: the regulator that ran (continuous, or discrete with its delay).
      start: fit only rows at or after this time, s.

    Raises:
      ParameterError: the trace has fewer than two rows, or its states do not fit the design.
    """
    if trace.t.size < 2:
        raise ParameterError("compare_to_design: the trace has fewer than two rows (run longer)")
    lin = design.linearization
    if trace.qpos.shape[1] != lin.qpos.size or trace.qvel.shape[1] != lin.nv:
        raise ParameterError(f"compare_to_design: the trace's states ({trace.qpos.shape[1]} qpos, "
                             f"{trace.qvel.shape[1]} qvel) are not the design's model's ({lin.qpos.size}, {lin.nv})")
    dt = float(trace.t[1] - trace.t[0])
    values, closed, x = _closed_loop(trace, design)
    # A discrete design's modes that fall by more than STEP_FALL in one period (a delay's chain among them) end
    # within a row or two: there is no decay to fit, and they are left out.
    keep = [k for k in range(values.size) if values[k].imag >= 0
            and (design.dt is None or abs(values[k]) >= STEP_FALL)]
    rates = values[keep] if design.dt is None else np.log(values[keep]) / design.dt
    rows = trace.t >= start
    coordinates, conditions = _coordinates(closed, values[keep], x[rows])
    amplitude = np.abs(coordinates)
    peaks = amplitude.max(axis=0) if amplitude.size else np.zeros(len(keep))
    largest = float(np.linalg.norm(x[rows], axis=1).max()) if rows.any() else 0.0
    # A discrete design's mode that falls its three decades in fewer than MIN_ROWS rows decays faster than the
    # run's rows resolve: nothing to judge (a 7-dof arm's three fastest had been blamed on one clamped step).  A
    # continuous design's pole beyond the rate is judged: the loop cannot be it (_causes names the rate).
    resolved = np.log(1 / DECADES) / (MIN_ROWS * dt) if design.dt is not None else np.inf
    modes = [ModeCheck(complex(rate), None, float(peaks[j]), 0, f"decays faster than the run's rows resolve "
                                                                f"(|Re| {abs(rate.real):.4g} 1/s at {dt:g} s a row)")
             if -rate.real > resolved else
             _mode(complex(rate), trace.t[rows], amplitude[:, j], float(peaks[j]), largest)
             if conditions[j] < CONDITION else
             ModeCheck(complex(rate), None, float(peaks[j]), 0, f"{CROWDED} to tell apart "
                                                                  f"(eigenvalue condition {conditions[j]:.2g})")
             for j, rate in enumerate(rates)]
    modes.sort(key=lambda m: -m.designed.real)
    diverged = _diverged(x[rows])
    comparison = DesignComparison(modes, [], dt, diverged)
    if comparison.agrees is not False:
        return comparison
    return DesignComparison(modes, _causes(trace, design, modes, dt), dt, diverged)


def _diverged(x: np.ndarray) -> str:
    """How the run's state ``x (N, n)`` diverged, or "": not finite, or its last tenth far above its first."""
    if not np.all(np.isfinite(x)):
        return "its state is not finite"
    norms = np.linalg.norm(x, axis=1)
    tenth = max(1, norms.size // 10)
    early, late = float(norms[:tenth].max(initial=0.0)), float(norms[-tenth:].max(initial=0.0))
    if late > DIVERGED * max(early, 1e-300) and late > 0:
        return f"its state grew from {early:.3g} to {late:.3g}, {late / max(early, 1e-300):.3g} x, over the run"
    return ""


def _closed_loop(trace: Trace, design: Regulator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The design's closed-loop eigenvalues ``(n,)`` and matrix ``(n, n)``, and the run's states in it ``(N, n)``."""
    lin, K = design.linearization, design.design.K
    target = lin.qpos if design.target is None else design.target
    x = np.array([lin.deviation(q - target + lin.qpos, v) for q, v in zip(trace.qpos, trace.qvel, strict=True)])
    if design.dt is None:
        closed = lin.A - lin.B @ K
    else:
        assert design.plant is not None  # a design at a rate keeps its discrete model
        Ad, Bd = design.plant
        closed = Ad - Bd @ K
        if design.delay:  # the design's state carries the commands still on their way: du of the last periods
            du = trace.command - lin.ctrl
            past = [np.vstack([np.zeros((j, lin.nu)), du[:-j]]) for j in range(design.delay, 0, -1)]
            x = np.hstack([x, *past])
    return np.linalg.eigvals(closed), closed, x


def _coordinates(closed: np.ndarray, values: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's coordinate along each mode of ``values``, ``(N, len(values))``, and each mode's condition number.

    ``z_k = w_k^H x / (w_k^H v_k)`` with ``v_k`` the unit right and ``w_k`` the left eigenvector:
    the mode's share of the state, taken one mode at a time (inverting the whole eigenvector
    matrix would mix in a delay chain's nearly parallel ones).
    """
    n = closed.shape[0]
    out, conditions = np.empty((x.shape[0], values.size), dtype=complex), np.empty(values.size)
    for j, value in enumerate(values):
        shifted = closed - value * np.eye(n)
        v = _null(shifted)
        w = _null(shifted.conj().T)
        overlap = w.conj() @ v
        conditions[j] = 1.0 / max(abs(overlap), 1e-300)
        out[:, j] = x @ w.conj() / overlap
    return out, conditions


def _null(matrix: np.ndarray) -> np.ndarray:
    """The unit vector ``matrix`` maps nearest zero (its last right singular vector)."""
    return np.linalg.svd(matrix)[2][-1].conj()


def _mode(pole: complex, t: np.ndarray, a: np.ndarray, peak: float, largest: float) -> ModeCheck:
    """One mode's fitted decay from its ``|z|`` along the run ``a (N,)``.

    The fit spans at most the time the designed pole takes to fall :data:`DECADES` from the mode's peak: past it
    a fast mode's coordinate holds what the slower modes leak into it through the nonlinearity (a 7-dof arm's
    poles at -48 to -389 1/s then "decayed" at -3 1/s, the slow modes' rate); a loop that is not the design
    shows within that span."""
    if not largest > 0 or peak < UNEXCITED * largest:
        return ModeCheck(pole, None, peak, 0, f"not excited by this run (its largest |z| {peak:.3g}, "
                                             f"{peak / largest if largest > 0 else 0:.1g} of the state's largest): "
                                             "no decay to measure")
    first = int(np.argmax(a))
    level = settled_level(t, a)
    floor = max(DECADES * peak, FLOOR_MARGIN * level if level is not None else 0.0)
    below = np.flatnonzero(a[first:] <= floor)
    stop = first + (int(below[0]) if below.size else a.size - first)
    if pole.real < 0 and t.size > 1:
        span = np.log(1 / DECADES) / -pole.real  # s: the designed decay's three decades
        stop = min(stop, max(first + MIN_ROWS, int(np.searchsorted(t, t[first] + span, side="right"))))
    if stop - first < MIN_ROWS:
        why = ("held at the noise floor" if level is not None and FLOOR_MARGIN * level >= DECADES * peak
               else "it decays faster than the rows resolve")
        return ModeCheck(pole, None, peak, stop - first, f"fewer than {MIN_ROWS} rows above the floor ({why}): "
                                                         "no decay measured")
    slope, _ = np.polyfit(t[first:stop], np.log(a[first:stop]), 1)
    note = "held at the noise floor" if level is not None and stop < a.size else ""
    return ModeCheck(pole, float(slope), peak, stop - first, note)


def _causes(trace: Trace, design: Regulator, modes: list[ModeCheck], dt: float) -> list[str]:
    """What in the trace can explain modes that do not decay as designed."""
    causes = []
    if np.asarray(trace.saturated).any():
        causes.append("saturation: " + trace.saturation().split(": ", 1)[1])
    late = _delay_of(trace)
    if late is not None and late != design.delay:
        causes.append(f"delay: commands reach the actuators {late} control period{'s' if late != 1 else ''} "
                      f"({late * dt:g} s) late, the design assumed {design.delay}")
    if design.dt is None:
        fastest = max((m.designed for m in modes), key=abs, default=0j)
        if abs(fastest) * dt > RATE_LIMIT:
            causes.append(f"the control rate: the continuous design's pole {fastest.real:.4g} 1/s has |lambda| dt = "
                          f"{abs(fastest) * dt:.3g} > {RATE_LIMIT:g} at {dt:g} s (design with dt=)")
    elif abs(design.dt - dt) > 1e-9 * dt:
        causes.append(f"the control rate: designed for {design.dt:g} s, run at {dt:g} s")
    floored = [m for m in modes if m.agrees is False and "noise floor" in m.note]
    if floored and not causes:
        causes.append("noise floor: " + ", ".join(f"pole {m.designed.real:.4g}" for m in floored)
                      + " settle on a level (the sensors' noise, or what the other modes leave) instead of decaying")
    return causes


def _delay_of(trace: Trace, longest: int = 50) -> int | None:
    """Whole control periods between the commands and what reached the actuators, when a shift explains them."""
    command, ctrl = trace.command, trace.ctrl
    if command.shape[0] < 3 or np.array_equal(command, ctrl):
        return 0
    low, high = ctrl.min(axis=0), ctrl.max(axis=0)
    for k in range(1, min(longest, command.shape[0] - 2) + 1):
        late, early = ctrl[k:], command[:-k]
        free = (late > low) & (late < high)  # entries at a column's extremes may be clamped: judged apart
        if free.any() and np.array_equal(late[free], early[free]):
            return k
    return None
