"""The one report type of every quantity check, and its text.

A :class:`CheckReport` holds, per compared *part* of the quantity (a Jacobian, a
position and a rotation, kinetic and potential energy, the blocks of a
linearization), the running per-entry statistics of ``error = yours - MuJoCo's``
(:class:`Part`), and in words: a one-line diagnosis, the off entries grouped
(:func:`group_entries`), the attribution (what the error *is*: a sign, a frame, a
point, the armature, a body's mass ...), the coordinate conventions of the joints
the model has, notes and MuJoCo's own warnings about the model.  ``to_dict()`` is
what ``metrics.json`` stores; :meth:`CheckReport.text` is what the CLI prints
(the full list of entries under ``--verbose``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Part", "CheckReport", "group_entries", "GROUP_LINES"]

# Lines of grouped entries printed without --verbose: a report stays readable on an
# 85-dof robot; the complete list is in metrics.json and under --verbose.
GROUP_LINES = 6
# Names listed in one line before "... and N more".
NAMES_PER_LINE = 8
# An entry whose error varies by under a millionth of its size is a constant offset.
CONSTANT = 1e-6


@dataclass
class Part:
    """One compared part of a quantity: per-entry statistics of ``yours - MuJoCo's``.

    Attributes:
      name: ``"jacobian"``, ``"position"``, ``"rotation"``, ``"kinetic"``, ...
      symbol: how an entry is written, ``J`` in ``J[linear z, elbow]``.
      labels: per axis of the part, a name per index (``()`` for a scalar part).
      passed: every entry within ``atol + rtol |MuJoCo's|`` at every state.
      max_abs_error: largest ``|error|`` over states and entries.
      scale: largest ``|MuJoCo's|`` of the part.
      worst_entry: index of the worst entry; worst_sample: the state it is at.
      mean_error, max_abs, spread, ok: per entry, the mean error, the largest
        ``|error|``, half the range ``(max - min) / 2`` and "within tolerance",
        arrays of the part's shape.
      per_sample: the largest ``|error|`` at each of the first states (plots).
    """

    name: str
    symbol: str
    labels: tuple
    passed: bool
    max_abs_error: float
    scale: float
    worst_entry: tuple
    worst_sample: int
    mean_error: np.ndarray
    max_abs: np.ndarray
    spread: np.ndarray
    ok: np.ndarray
    per_sample: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    states: int = 0

    @classmethod
    def from_stats(cls, name: str, symbol: str, labels: tuple, stats) -> Part:
        """A part from :class:`~crossdyn.experiments.core.crosscheck.EntryStats` after the last chunk."""
        return cls(name=name, symbol=symbol, labels=tuple(tuple(axis) for axis in labels),
                   passed=bool(stats.ok.all()), max_abs_error=float(stats.max_abs.max()),
                   scale=float(stats.scale.max()), worst_entry=stats.worst[2], worst_sample=int(stats.worst[1]),
                   mean_error=stats.mean(), max_abs=stats.max_abs.copy(),
                   spread=(stats.hi - stats.lo) / 2, ok=stats.ok.copy(), per_sample=stats.per_sample(),
                   states=int(stats.n))

    def entry(self, index) -> str:
        """``J[linear z, elbow]``: an entry written with its axes' names."""
        index = tuple(int(i) for i in np.atleast_1d(index)) if np.ndim(index) or index != () else ()
        if not self.labels:
            return self.symbol
        return f"{self.symbol}[{', '.join(str(axis[i]) for axis, i in zip(self.labels, index, strict=False))}]"

    def constant(self, index) -> bool:
        """The entry's error is one constant offset over the states (to :data:`CONSTANT` of its size)."""
        return self.states > 1 and bool(self.spread[index] <= CONSTANT * self.max_abs[index])

    def describe(self) -> str:
        """``jacobian off by up to 0.3 at J[linear z, elbow] (state-dependent)``, or ``agrees to 1e-16``."""
        if self.passed:
            return f"{self.name} agrees to {self.max_abs_error:.1e}"
        where = f"{self.name} off by up to {self.max_abs_error:.3e} at {self.entry(self.worst_entry)}"
        if self.states <= 1:  # one operating point: no "constant" or "which state" to say
            return where
        kind = "a constant offset" if self.constant(self.worst_entry) else "state-dependent"
        return f"{where} ({kind}, state {self.worst_sample})"

    def to_dict(self) -> dict:
        return {"passed": bool(self.passed), "max_abs_error": float(self.max_abs_error), "scale": float(self.scale),
                "worst_entry": [int(i) for i in self.worst_entry], "worst_entry_name": self.entry(self.worst_entry),
                "worst_sample": int(self.worst_sample), "labels": [list(axis) for axis in self.labels],
                "mean_error": np.asarray(self.mean_error).tolist(), "entry_max_abs": np.asarray(self.max_abs).tolist(),
                "entry_spread": np.asarray(self.spread).tolist(), "entry_passed": np.asarray(self.ok).tolist()}


def group_entries(part: Part, symmetric: bool = False) -> list[str]:
    """The part's off entries in words, grouped so a big robot's report stays short.

    A vector part groups its entries by their offset (``b[knee], b[hip] each off by
    0.25, constant``; ``b[ankle] off by up to 3.1, state-dependent``); a matrix part
    by column (``column 'elbow': rows linear x, linear z off by up to 0.3``).
    ``symmetric`` counts only the upper triangle (a mass matrix).

    Returns:
      One line per group, every group (callers cap what they print).
    """
    off = ~np.asarray(part.ok, dtype=bool)
    if not off.any():
        return []
    if np.ndim(part.ok) == 0:
        return [_scalar_line(part, ())]
    if np.ndim(part.ok) == 1:
        return _vector_lines(part, np.flatnonzero(off))
    if symmetric:
        off = off & np.triu(np.ones_like(off, dtype=bool))
    lines = []
    for col in np.flatnonzero(off.any(axis=0)):
        rows = np.flatnonzero(off[:, col])
        worst = float(np.max(part.max_abs[rows, col]))
        constant = all(part.constant((r, col)) for r in rows)
        names = _names([str(part.labels[0][r]) for r in rows])
        if part.states <= 1:  # one state: nothing is constant or state-dependent
            what = (f"off by {part.mean_error[rows[0], col]:.4g}" if len(rows) == 1 else f"off by up to {worst:.4g}")
        elif constant and len(rows) == 1:
            what = f"off by {part.mean_error[rows[0], col]:.4g}, constant"
        else:
            what = f"off by up to {worst:.4g}, {'constant' if constant else 'state-dependent'}"
        lines.append(f"column {part.labels[1][col]!r}: {'row' if len(rows) == 1 else 'rows'} {names} {what}")
    return lines


def _scalar_line(part: Part, index) -> str:
    if part.states <= 1:  # one state: nothing is constant or state-dependent
        return f"{part.entry(index)} off by {float(np.asarray(part.mean_error)[index]):.4g}"
    if part.constant(index):
        return f"{part.entry(index)} off by {float(np.asarray(part.mean_error)[index]):.4g}, constant"
    return f"{part.entry(index)} off by up to {float(np.asarray(part.max_abs)[index]):.4g}, state-dependent"


def _names(names: list[str]) -> str:
    if len(names) <= NAMES_PER_LINE:
        return ", ".join(names)
    return ", ".join(names[:NAMES_PER_LINE]) + f" and {len(names) - NAMES_PER_LINE} more"


def _vector_lines(part: Part, indices) -> list[str]:
    groups: dict[str, list[int]] = {}
    for i in indices:
        if part.states <= 1:  # one state: nothing is constant or state-dependent
            groups.setdefault(f"off by {part.mean_error[i]:.4g}", []).append(int(i))
            continue
        key = f"off by {part.mean_error[i]:.4g}, constant" if part.constant(i) else "state-dependent"
        groups.setdefault(key, []).append(int(i))
    constant = [k for k in groups if k != "state-dependent"]
    if len(constant) > 3:  # many different offsets: one line for all of them
        merged = sorted(i for k in constant for i in groups.pop(k))
        values = [float(part.mean_error[i]) for i in merged]
        groups[f"off by constants from {min(values):.4g} to {max(values):.4g}"] = merged
    lines = []
    for key, members in groups.items():
        names = _names([part.entry(i) for i in members])
        if key == "state-dependent":
            lines.append(f"{names} off by up to {max(part.max_abs[i] for i in members):.4g}, state-dependent")
        else:
            lines.append(f"{names} {'each ' if len(members) > 1 else ''}{key}")
    return lines


@dataclass
class CheckReport:
    """The result of one quantity check; ``to_dict()`` is what ``metrics.json`` stores.

    Attributes:
      quantity: ``"kinematics"``, ``"jacobian"``, ``"mass-matrix"``, ``"bias"``,
        ``"energy"``, ``"forward-dynamics"`` or ``"linearization"``.
      label: the user's function, as named in messages.
      passed: every part agrees (or, for energy, agrees up to the named constant).
      parts: the compared parts, by name.
      truth: what the function was compared with, one line.
      attribution: sentences saying what the error is, in the quantity's terms;
        empty when nothing fits exactly.
      conventions: MuJoCo's coordinate conventions for the model's free and ball joints.
      notes: other sentences (a function called state by state, a constant that was
        allowed, the states used).
      warnings: MuJoCo's own warnings while computing the truth (about the model).
      atol, rtol: the tolerance, ``|error| <= atol + rtol |MuJoCo's|``.
      samples, seed: how the states were drawn (``seed`` None for given states).
      dynamics: the truth's mode where it applies (``rigid-body``/``as-modeled``), else None.
      extra: quantity-specific numbers for ``metrics.json`` (the energy's constant, ...).
      sampling: where the states came from, in words: random ones' ranges
        (:meth:`crossdyn.experiments.core.ranges.Ranges.describe`) or how many were given.
      ranges: the random states' ranges, ``{"q_range": [low, high], ...}``; empty for given states.
    """

    quantity: str
    label: str
    passed: bool
    parts: dict[str, Part]
    truth: str
    attribution: list[str] = field(default_factory=list)
    conventions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    atol: float = 0.0
    rtol: float = 0.0
    samples: int = 0
    seed: int | None = None
    dynamics: str | None = None
    extra: dict = field(default_factory=dict)
    symmetric: tuple[str, ...] = ()
    sampling: list[str] = field(default_factory=list)
    ranges: dict = field(default_factory=dict)

    @property
    def explanation(self) -> list[str]:
        """What the error is (:attr:`attribution`), then the conventions a reader needs to act on it:
        the name a derivation report (``check derivation``) gives the same lines."""
        return [*self.attribution, *(self.conventions if self.attribution and not self.passed else [])]

    @property
    def failing_parts(self) -> list[str]:
        return [name for name, part in self.parts.items() if not part.passed]

    @property
    def max_abs_error(self) -> float:
        return max((p.max_abs_error for p in self.parts.values()), default=0.0)

    @property
    def diagnosis(self) -> str:
        """One line: what agrees, what does not, by how much and where (never a whole state)."""
        names = " and ".join(self.parts)
        if self.passed:
            allowed = f"; {self.extra['allowed']}" if self.extra.get("allowed") else ""
            return (f"agree: max |error| {self.max_abs_error:.1e} over {self.samples:,} "
                    f"state{'s' if self.samples != 1 else ''} ({names} within tolerance{allowed})")
        failing = [self.parts[name].describe() for name in self.failing_parts]
        clean = [name for name, part in self.parts.items() if part.passed]
        text = "; ".join(failing)
        if clean:
            worst = max(self.parts[name].max_abs_error for name in clean)
            text += f"; {' and '.join(clean)} {'agrees' if len(clean) == 1 else 'agree'} to {worst:.1e}"
        return text

    def entries(self) -> list[str]:
        """Every off entry, grouped, each line prefixed with its part."""
        return [f"{name}: {line}" for name, part in self.parts.items()
                for line in group_entries(part, symmetric=name in self.symmetric)]

    def to_dict(self) -> dict:
        return {
            "quantity": self.quantity, "function": self.label, "passed": bool(self.passed),
            "diagnosis": self.diagnosis, "truth": self.truth, "max_abs_error": float(self.max_abs_error),
            "failing_parts": self.failing_parts, "parts": {name: p.to_dict() for name, p in self.parts.items()},
            "off_entries": self.entries(), "attribution": self.attribution, "conventions": self.conventions,
            "notes": self.notes, "model_warnings": self.warnings, "tolerance": {"atol": self.atol, "rtol": self.rtol},
            "samples": self.samples, "seed": self.seed, "dynamics": self.dynamics, "sampling": self.sampling,
            "state_ranges": self.ranges, **self.extra,
        }

    def text(self, title: str, verbose: bool = False) -> str:
        """The report as the CLI prints it; ``verbose`` lists every off entry and each part's worst error."""
        lines = [f"{'PASS' if self.passed else 'MISMATCH'}: {title}", f"  truth: {self.truth}", f"  {self.diagnosis}"]
        entries = self.entries()
        if entries:
            lines.append("  off entries:")
            shown = entries if verbose else entries[:GROUP_LINES]
            lines += [f"    {line}" for line in shown]
            if len(shown) < len(entries):
                lines.append(f"    ... and {len(entries) - len(shown)} more lines (all in metrics.json; --verbose)")
        for heading, items in (("explained", self.attribution), ("conventions", self.conventions),
                               ("notes", self.notes), ("MuJoCo's warnings about the model", self.warnings),
                               ("states", self.sampling)):
            if items:
                lines.append(f"  {heading}:")
                lines += [f"    {line}" for line in items]
        if verbose or not self.passed:
            lines.append("  worst error by part:")
            width = max(len(name) for name in self.parts)
            lines += [f"    {name + ':':<{width + 1}} max |error| {part.max_abs_error:.3e} (scale {part.scale:.3e})"
                      for name, part in self.parts.items()]
        return "\n".join(lines)
