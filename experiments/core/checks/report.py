"""The one report type of every check, inverse dynamics included, and its one text renderer.

A :class:`CheckReport` holds, per compared *part* of the quantity (a Jacobian; the
mass-matrix, velocity and gravity terms of an inverse dynamics ...), the per-entry
statistics of ``error = yours - MuJoCo's`` (:class:`Part`), and in words what is off,
where, and what the error is.  ``to_dict()`` is what ``metrics.json`` stores;
:func:`text` is what the CLI prints."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Part", "CheckReport", "text", "group_entries", "off_entries", "GROUP_LINES", "TERMS", "TERM_LABEL",
           "INVERSE_DYNAMICS"]

# Lines of grouped entries printed without --verbose: a report stays readable on an
# 85-dof robot; the complete list is in metrics.json and under --verbose.
GROUP_LINES = 6
# Names listed in one line before "... and N more".
NAMES_PER_LINE = 8
# An entry whose error varies by under a millionth of its size is a constant offset.
CONSTANT = 1e-6
# The quantity of ``check derivation``: its parts are the terms of tau = M(q) qdd + c(q, qd) + g(q).
INVERSE_DYNAMICS = "inverse-dynamics"
TERMS = ("mass_matrix", "velocity", "gravity")
TERM_LABEL = {"mass_matrix": "mass matrix", "velocity": "velocity terms", "gravity": "gravity"}


@dataclass
class Part:
    """One compared part of a quantity: per-entry statistics of ``yours - MuJoCo's``.

    Attributes:
      name: ``"jacobian"``, ``"position"``, ...; an inverse dynamics' :data:`TERMS`.
      symbol: how an entry is written, ``J`` in ``J[linear z, elbow]``.
      labels: per axis of the part, a name per index (``()`` for a scalar part).
      passed: every entry within ``atol + rtol |MuJoCo's|`` at every state.
      max_abs_error, scale: largest ``|error|``, and largest ``|MuJoCo's|``, over states and entries.
      worst_entry, worst_sample: index of the worst entry, and the state it is at.
      mean_error, entry_max_abs, entry_range, entry_passed: per entry (arrays of the part's
        shape), the mean error (a constant offset shows here exactly), the largest ``|error|``,
        ``max - min`` over the states and "within tolerance at every state".
      per_sample: the largest ``|error|`` at each of the first states (plots).
      states: how many states the statistics are over.
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
    entry_max_abs: np.ndarray
    entry_range: np.ndarray
    entry_passed: np.ndarray
    per_sample: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    states: int = 0

    @classmethod
    def from_stats(cls, name: str, symbol: str, labels: tuple, stats) -> Part:
        """A part from :class:`~crossdyn.experiments.core.checks.common.EntryStats` after the last chunk."""
        return cls(name=name, symbol=symbol, labels=tuple(tuple(axis) for axis in labels),
                   passed=bool(stats.ok.all()), max_abs_error=float(stats.max_abs.max()),
                   scale=float(stats.scale.max()), worst_entry=stats.worst[2], worst_sample=int(stats.worst[1]),
                   mean_error=stats.mean(), entry_max_abs=stats.max_abs.copy(), entry_range=stats.hi - stats.lo,
                   entry_passed=stats.ok.copy(), per_sample=stats.per_sample(), states=int(stats.n))

    @property
    def spread(self) -> float:
        """The largest half-range ``(max - min) / 2`` of an entry's error: zero (to round-off) for a constant offset."""
        return float((np.asarray(self.entry_range) / 2).max())

    def entry(self, index) -> str:
        """``J[linear z, elbow]``: an entry written with its axes' names."""
        index = tuple(int(i) for i in np.atleast_1d(index)) if np.ndim(index) or index != () else ()
        if not self.labels:
            return self.symbol
        return f"{self.symbol}[{', '.join(str(axis[i]) for axis, i in zip(self.labels, index, strict=False))}]"

    def constant(self, index) -> bool:
        """The entry's error is one constant offset over the states (to :data:`CONSTANT` of its size)."""
        return self.states > 1 and bool(self.entry_range[index] / 2 <= CONSTANT * self.entry_max_abs[index])

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
                "mean_error": np.asarray(self.mean_error).tolist(),
                "entry_max_abs": np.asarray(self.entry_max_abs).tolist(),
                "entry_spread": (np.asarray(self.entry_range) / 2).tolist(),
                "entry_passed": np.asarray(self.entry_passed).tolist()}


def group_entries(part: Part, symmetric: bool = False) -> list[str]:
    """The part's off entries in words, one line per group, so a big robot's report stays short.

    A vector part groups its entries by their offset (``b[knee], b[hip] each off by
    0.25, constant``); a matrix part by column (``column 'elbow': rows linear x, linear
    z off by up to 0.3``).  ``symmetric`` counts only the upper triangle (a mass matrix).
    """
    off = ~np.asarray(part.entry_passed, dtype=bool)
    if not off.any():
        return []
    if np.ndim(part.entry_passed) <= 1:
        return _vector_lines(part, [int(i) for i in np.flatnonzero(off)] if off.ndim else [()])
    if symmetric:
        off = off & np.triu(np.ones_like(off, dtype=bool))
    lines = []
    for col in np.flatnonzero(off.any(axis=0)):
        rows = np.flatnonzero(off[:, col])
        worst = float(np.max(part.entry_max_abs[rows, col]))
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


def _key(part: Part, index) -> str:
    """How an entry is off: by its mean, constant or not; one state has no "constant" to say."""
    mean = f"off by {float(np.asarray(part.mean_error)[index]):.4g}"
    if part.states <= 1:
        return mean
    return f"{mean}, constant" if part.constant(index) else "state-dependent"


def _names(names: list[str]) -> str:
    if len(names) <= NAMES_PER_LINE:
        return ", ".join(names)
    return ", ".join(names[:NAMES_PER_LINE]) + f" and {len(names) - NAMES_PER_LINE} more"


def _vector_lines(part: Part, indices) -> list[str]:
    groups: dict[str, list[int]] = {}
    for i in indices:
        groups.setdefault(_key(part, i), []).append(i)
    constant = [k for k in groups if k != "state-dependent"]
    if len(constant) > 3:  # many different offsets: one line for all of them
        merged = sorted(i for k in constant for i in groups.pop(k))
        values = [float(part.mean_error[i]) for i in merged]
        groups[f"off by constants from {min(values):.4g} to {max(values):.4g}"] = merged
    lines = []
    for key, members in groups.items():
        names = _names([part.entry(i) for i in members])
        if key == "state-dependent":
            lines.append(f"{names} off by up to {max(part.entry_max_abs[i] for i in members):.4g}, state-dependent")
        else:
            lines.append(f"{names} {'each ' if len(members) > 1 else ''}{key}")
    return lines


@dataclass
class CheckReport:
    """The result of one check; ``to_dict()`` is what ``metrics.json`` stores, :func:`text` what the CLI prints.

    Attributes:
      quantity: ``"kinematics"``, ``"jacobian"``, ``"mass-matrix"``, ``"bias"``,
        ``"energy"``, ``"forward-dynamics"``, ``"linearization"`` or
        ``"inverse-dynamics"`` (:data:`INVERSE_DYNAMICS`, ``check derivation``).
      label: the user's function, as named in messages.
      passed: every part agrees (energy: up to the named constant; inverse dynamics: the torque too).
      parts: the compared parts, by name (:attr:`terms` for inverse dynamics).
      truth: what the function was compared with, one line.
      attribution: sentences saying what the error is; empty when nothing fits exactly.
      conventions: MuJoCo's coordinate conventions for the model's free and ball joints.
      notes: other sentences (a function called state by state, a constant allowed ...).
      warnings: MuJoCo's own warnings about the model while computing the truth.
      atol, rtol: the tolerance, ``|error| <= atol + rtol |MuJoCo's|``.
      samples, seed, sampling, ranges: how many states, their seed (None for given states), where
        they came from in words, and random ones' ranges (``{"q_range": [low, high], ...}``).
      dynamics: the truth's mode where it applies (``rigid-body``/``as-modeled``), else None.
      extra: quantity-specific numbers for ``metrics.json`` (the energy's constant, ...).
      symmetric: the parts of which only the upper triangle is named (a mass matrix).
      torque: inverse dynamics only, as are the rest: the torque ``tau`` compared as a whole.
      per_joint: per dof ``{"name", "max_abs_error", "max_rel_error"}`` of the torque.
      worst_state: ``{"index", "q", "qd", "qdd"}`` of the worst torque error.
      parameters: sentences naming the bodies' inertial parameters the mismatch is a change of.
      left_out: per model element, ``{"element", "in", "out"}``: what the mode left out or put in.
      switched_off: what the truth switched off (``"contacts off: 36 rows were active at state 0"``).
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
    torque: Part | None = None
    per_joint: list[dict] = field(default_factory=list)
    worst_state: dict = field(default_factory=dict)
    parameters: list[str] = field(default_factory=list)
    left_out: list[dict] = field(default_factory=list)
    switched_off: list[str] = field(default_factory=list)

    @property
    def explanation(self) -> list[str]:
        """What the error is (:attr:`attribution`), then, for a part check, the conventions a reader needs
        to act on it: the lines an assertion helper adds under the diagnosis."""
        if self.quantity == INVERSE_DYNAMICS:
            return self.attribution
        return [*self.attribution, *(self.conventions if self.attribution and not self.passed else [])]

    @property
    def failing_parts(self) -> list[str]:
        return [name for name, part in self.parts.items() if not part.passed]

    # The inverse dynamics' names for its parts.
    terms = property(lambda self: self.parts, doc="The parts, by the name an inverse dynamics gives them.")
    failing_terms = failing_parts

    @property
    def names(self) -> list[str]:
        """The dof names of an inverse dynamics' torque (empty for a part check)."""
        return list(self.torque.labels[0]) if self.torque is not None else []

    @property
    def max_abs_error(self) -> float:
        """The largest error: of the torque for an inverse dynamics, else over every part."""
        if self.torque is not None:
            return self.torque.max_abs_error
        return max((p.max_abs_error for p in self.parts.values()), default=0.0)

    @property
    def max_rel_error(self) -> float:
        """:attr:`max_abs_error` relative to the largest value of MuJoCo's it is compared with."""
        scale = self.torque.scale if self.torque is not None else max((p.scale for p in self.parts.values()),
                                                                        default=0.0)
        return float(self.max_abs_error / max(scale, np.finfo(float).tiny))

    @property
    def per_sample(self) -> dict[str, np.ndarray]:
        """The largest error at each of the first states, per part (and ``"torque"``), for plots."""
        torque = {"torque": self.torque.per_sample} if self.torque is not None else {}
        return {**torque, **{name: part.per_sample for name, part in self.parts.items()}}

    @property
    def diagnosis(self) -> str:
        """One line: what agrees, what does not, by how much and where (never a whole state)."""
        if self.quantity == INVERSE_DYNAMICS:
            return _term_diagnosis(self)
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
        if self.quantity == INVERSE_DYNAMICS:
            return off_entries(self)
        return [f"{name}: {line}" for name, part in self.parts.items()
                for line in group_entries(part, symmetric=name in self.symmetric)]

    def to_dict(self) -> dict:
        if self.quantity == INVERSE_DYNAMICS:
            return _term_dict(self)
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
        """The report as the CLI prints it (:func:`text`)."""
        return text(self, title, verbose)


def text(report: CheckReport, title: str, verbose: bool = False) -> str:
    """The report as the CLI prints it; lists cut to :data:`GROUP_LINES` lines unless ``verbose``."""
    lines = [f"{'PASS' if report.passed else 'MISMATCH'}: {title}", f"  truth: {report.truth}",
             f"  {report.diagnosis}"]
    entries = report.entries()
    if entries:
        lines.append("  off entries:")
        shown = entries if verbose else entries[:GROUP_LINES]
        lines += [f"    {line}" for line in shown]
        if len(shown) < len(entries):
            lines.append(f"    ... and {len(entries) - len(shown)} more lines (all in metrics.json; --verbose)")
    _section(lines, "explained", [*report.attribution, *report.parameters])
    if report.left_out:
        lines.append(f"  what --dynamics {report.dynamics} put in (+) or left out (-):")
        rows = report.left_out if verbose else report.left_out[:GROUP_LINES]
        for row in rows:
            cells = [f"+{k} {v}" for k, v in row["in"].items()] + [f"-{k} {v}" for k, v in row["out"].items()]
            lines.append(f"    {row['element']}: {'; '.join(cells)}")
        if len(rows) < len(report.left_out):
            lines.append(f"    ... and {len(report.left_out) - len(rows)} more elements (metrics.json; --verbose)")
    for heading, items in (("switched off in the truth", report.switched_off), ("conventions", report.conventions),
                           ("notes", report.notes), ("MuJoCo's warnings about the model", report.warnings),
                           ("states", report.sampling)):
        _section(lines, heading, items)
    lines += _by_joint(report, verbose) if report.per_joint else _by_part(report, verbose)
    return "\n".join(lines)


def _section(lines: list[str], heading: str, items: list[str]) -> None:
    if items:
        lines.append(f"  {heading}:")
        lines += [f"    {line}" for line in items]


def _by_part(report: CheckReport, verbose: bool) -> list[str]:
    """Each part's worst error and scale: on a mismatch, or with ``verbose``."""
    if not (verbose or not report.passed):
        return []
    width = max(len(name) for name in report.parts)
    return ["  worst error by part:"] + [
        f"    {name + ':':<{width + 1}} max |error| {part.max_abs_error:.3e} (scale {part.scale:.3e})"
        for name, part in report.parts.items()]


def _by_joint(report: CheckReport, verbose: bool) -> list[str]:
    """The torque per joint: every joint with ``verbose``; on a mismatch only those whose torque is off."""
    rows = report.per_joint if verbose else [] if report.passed else \
        [row for row in report.per_joint if row["max_abs_error"] > report.atol]
    shown = rows if verbose else rows[:2 * GROUP_LINES]
    if not shown:
        return []
    width = max(len(row["name"]) for row in shown) + 1
    lines = ["  worst torque error by joint:" if verbose else "  joints whose torque is off:"]
    lines += [f"    {row['name'] + ':':<{width}} max |error| {row['max_abs_error']:.3e}  "
              f"(relative {row['max_rel_error']:.2e})" for row in shown]
    if len(shown) < len(rows):
        lines.append(f"    ... and {len(rows) - len(shown)} more joints off (metrics.json; --verbose)")
    return lines


# --- the inverse dynamics' words: its terms, its diagnosis, its off entries and its metrics ---------------------


def _term_sentence(part: Part, names: list[str]) -> str:
    """``mass matrix off by up to 0.25 on entry M[0,1] (q1, q2) (a constant offset)``, or ``agree to 1e-16``."""
    label = TERM_LABEL[part.name]
    if part.name == "mass_matrix":
        i, j = part.worst_entry
        where = f"entry M[{i},{j}] ({names[i]}, {names[j]})"
    else:
        where = f"{names[part.worst_entry[0]]}"
    if part.passed:
        return f"{label} agree to {part.max_abs_error:.1e}"
    kind = "a constant offset" if part.spread <= CONSTANT * part.max_abs_error else "state-dependent"
    return f"{label} off by up to {part.max_abs_error:.3e} on {where} ({kind})"


def _term_diagnosis(report: CheckReport) -> str:
    if report.passed:
        return (f"agree: max |error| {report.max_abs_error:.1e} over {report.samples} states "
                f"(mass matrix, velocity and gravity terms each within tolerance)")
    failing = report.failing_terms
    text = "; ".join(_term_sentence(report.terms[t], report.names) for t in failing)
    clean = [t for t in TERMS if report.terms[t].passed]
    if clean:
        worst = max(report.terms[t].max_abs_error for t in clean)
        text += f"; {' and '.join(TERM_LABEL[t] for t in clean)} agree to {worst:.1e}"
    if not failing:
        text = f"torques differ by up to {report.max_abs_error:.3e} although each term agrees"
    # The state itself is in metrics.json (worst_state): 87 numbers on a dog do not fit a line.
    return f"{text} (worst torque error {report.max_abs_error:.3e} at state {report.worst_state['index']})"


def _entry_name(term: str, index: tuple[int, ...], names: list[str]) -> str:
    if term == "mass_matrix":
        return f"M[{index[0]},{index[1]}]"
    return f"{'c' if term == 'velocity' else 'g'}[{index[0]}] ({names[index[0]]})"


def _summary(members: list, names: list[str]) -> str:
    """``M[0,0], M[1,1] and 25 more (rows of root, FL_hip)``: the first entries, then the joints they touch."""
    shown = ", ".join(m[0] for m in members[:NAMES_PER_LINE])
    if len(members) <= NAMES_PER_LINE:
        return shown
    rows = []
    for _, index in members:
        joint = names[index[0]].rsplit(".", 1)[0]  # the joint a dof belongs to (root of root.rz)
        if joint not in rows:
            rows.append(joint)
    listed = ", ".join(rows[:6]) + (f" and {len(rows) - 6} more" if len(rows) > 6 else "")
    return f"{shown} and {len(members) - NAMES_PER_LINE} more ({len(members)} entries, in the rows of {listed})"


def off_entries(report: CheckReport) -> list[str]:
    """An inverse dynamics' off entries, one line per failing term, grouped by mean offset and constant-or-not.

    Example: ``"mass matrix: M[0,0], M[1,1] each off by 0.25, constant"``.  A group of
    more than :data:`NAMES_PER_LINE` entries names its first ones, then the joints whose rows hold the rest.
    """
    lines = []
    for term in report.failing_terms:
        t = report.terms[term]
        ok, mean = np.asarray(t.entry_passed), np.asarray(t.mean_error)
        max_abs, spread = np.asarray(t.entry_max_abs), np.asarray(t.entry_range) / 2
        groups: dict[str, list] = {}
        for index in zip(*np.nonzero(~ok), strict=False):
            name = _entry_name(term, index, report.names)
            if spread[index] <= CONSTANT * max_abs[index]:
                groups.setdefault(f"off by {mean[index]:.4g}, constant", []).append((name, index))
            else:
                groups.setdefault("state-dependent", []).append((name, index, max_abs[index]))
        constant = [k for k in groups if k != "state-dependent"]
        if len(constant) > 3:  # many different offsets (a wrong mass on a big robot): one group for all
            merged = [m for k in constant for m in groups.pop(k)]
            values = [float(mean[m[1]]) for m in merged]
            groups[f"off by constants from {min(values):.4g} to {max(values):.4g}"] = merged
        parts = []
        for key, members in groups.items():
            text = _summary([(m[0], m[1]) for m in members], report.names)
            if key == "state-dependent":
                worst = max(m[2] for m in members)
                parts.append(f"{text} off by up to {worst:.4g}, state-dependent")
            else:
                each = "each " if len(members) > 1 and not key.startswith("off by constants") else ""
                parts.append(f"{text} {each}{key}")
        lines.append(f"{TERM_LABEL[term]}: " + "; ".join(parts))
    return lines


def _term_dict(report: CheckReport) -> dict:
    """What ``metrics.json`` stores of an inverse dynamics (its own layout, kept as it was)."""
    terms = {name: {"passed": bool(t.passed), "max_abs_error": float(t.max_abs_error), "scale": float(t.scale),
                    "worst_entry": list(t.worst_entry), "worst_sample": int(t.worst_sample),
                    "mean_error": np.asarray(t.mean_error).tolist(), "spread": float(t.spread),
                    "entry_max_abs": np.asarray(t.entry_max_abs).tolist(),
                    "entry_range": np.asarray(t.entry_range).tolist(),
                    "entry_passed": np.asarray(t.entry_passed).tolist()} for name, t in report.terms.items()}
    return {"passed": bool(report.passed), "max_abs_error": float(report.max_abs_error),
            "max_rel_error": float(report.max_rel_error), "per_joint": report.per_joint, "terms": terms,
            "failing_terms": report.failing_terms, "diagnosis": report.diagnosis, "worst_state": report.worst_state,
            "tolerance": {"atol": report.atol, "rtol": report.rtol}, "samples": report.samples, "seed": report.seed,
            "dynamics": report.dynamics, "left_out": report.left_out, "switched_off": report.switched_off,
            "explanation": report.attribution, "parameters": report.parameters, "conventions": report.conventions,
            "notes": report.notes, "model_warnings": report.warnings, "sampling": report.sampling,
            "state_ranges": report.ranges}
