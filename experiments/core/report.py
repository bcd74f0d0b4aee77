"""A check's report in words: what the mode left out, what was switched off, which entries are off.

- :func:`carriers`: which joints, tendons, actuators or bodies carry an effect
  (armature, damping, stiffness, gravcomp) and with what value.
- :func:`elements`: per element, what ``--dynamics`` put in or left out of the truth.
- :func:`switched_off`: sentences on the constraints the truth switches off and how
  many rows the model as it comes had active ("contacts off: 36 rows were active
  at state 0").
- :func:`off_entries`: every off entry, grouped by term, with its mean offset and
  whether it is constant ("M[0,0], M[1,1] each off by 0.25, constant").
- :func:`text`: the whole report as the CLI prints it.
"""

from __future__ import annotations

import mujoco
import numpy as np

from crossdyn.experiments.core.checks.names import body_name, equality_label, joint_label
from crossdyn.experiments.core.truth import EFFECTS

__all__ = ["carriers", "elements", "switched_off", "off_entries", "text"]

_OWNER = {"dof": "joint", "jnt": "joint", "tendon": "tendon", "actuator": "actuator", "body": "body"}
_MJOBJ = {"joint": mujoco.mjtObj.mjOBJ_JOINT, "tendon": mujoco.mjtObj.mjOBJ_TENDON,
          "actuator": mujoco.mjtObj.mjOBJ_ACTUATOR, "body": mujoco.mjtObj.mjOBJ_BODY}


def _label(model: mujoco.MjModel, kind: str, index: int) -> str:
    if kind == "joint":
        return joint_label(model, index)  # an unnamed joint is named by its body
    if kind == "body":
        return f"body {body_name(model, index)!r}"
    name = mujoco.mj_id2name(model, _MJOBJ[kind], index)
    return f"{kind} {name!r}" if name else f"{kind} #{index}"


def _values(model: mujoco.MjModel, field: str) -> dict[str, str]:
    """Nonzero entries of one model array, by owning element: ``{"joint 'a'": "0.5", ...}``."""
    array = getattr(model, field, None)
    if array is None or not np.any(array != 0):
        return {}
    kind = _OWNER[field.split("_")[0]]
    rows = np.asarray(array).reshape(len(array), -1)
    owner = np.asarray(model.dof_jntid) if field.startswith("dof_") else np.arange(len(rows))
    out: dict[str, list] = {}
    for row in np.flatnonzero(np.any(rows != 0, axis=1)):
        value = rows[row]
        text = f"{value[0]:g}" if value.size == 1 else "poly [" + ", ".join(f"{v:g}" for v in value) + "]"
        out.setdefault(_label(model, kind, int(owner[row])), []).append(text)
    return {element: (v[0] if len(set(v)) == 1 else "[" + ", ".join(v) + "]") for element, v in out.items()}


def carriers(model: mujoco.MjModel, effect: str) -> list[tuple[str, str]]:
    """``(element, value)`` for each joint, tendon, actuator or body carrying ``effect``."""
    found: dict[str, str] = {}
    for field in EFFECTS[effect]:
        for element, value in _values(model, field).items():
            found[element] = f"{found[element]}, {value}" if element in found else value
    return list(found.items())


def elements(model: mujoco.MjModel, dynamics: str) -> list[dict]:
    """Per element, what the truth of ``dynamics`` put in or left out.

    Returns:
      ``[{"element": "joint 'shoulder'", "in": {"damping": "0.5"}, "out": {"frictionloss": "0.2", ...}}]``:
      armature, damping, stiffness and gravcomp are "in" as-modeled and "out"
      rigid-body; frictionloss and limits are always "out".
    """
    table: dict[str, dict] = {}

    def put(element, side, what, value):
        table.setdefault(element, {"element": element, "in": {}, "out": {}})[side][what] = value

    side = "in" if dynamics == "as-modeled" else "out"
    for effect in EFFECTS:
        for element, value in carriers(model, effect):
            put(element, side, effect, value)
    for field in ("dof_frictionloss", "tendon_frictionloss"):
        for element, value in _values(model, field).items():
            put(element, "out", "frictionloss", value)
    for j in np.flatnonzero(model.jnt_limited):
        lo, hi = model.jnt_range[j]
        put(_label(model, "joint", int(j)), "out", "limit", f"[{lo:g}, {hi:g}]")
    for t in np.flatnonzero(model.tendon_limited) if model.ntendon else ():
        lo, hi = model.tendon_range[t]
        put(_label(model, "tendon", int(t)), "out", "limit", f"[{lo:g}, {hi:g}]")
    return list(table.values())


def _active(tally, kind: str, what: str) -> str | None:
    if kind not in tally.first:
        return None
    state, rows = tally.first[kind]
    return (f"{what} off: {rows} row{'s' if rows != 1 else ''} {'were' if rows != 1 else 'was'} active at "
            f"state {state} (at {tally.states[kind]} of {tally.total} states)")


def switched_off(model: mujoco.MjModel, tally) -> list[str]:
    """Sentences on what the truth switched off, with the rows ``tally`` saw active.

    Args:
      model: the model as it comes.
      tally: a :class:`~crossdyn.experiments.core.truth.ConstraintTally` over the states checked.
    """
    out = []
    if line := _active(tally, "contacts", "contacts"):
        out.append(line)
    if line := _active(tally, "limits", "limits"):
        out.append(line)
    elif np.any(model.jnt_limited) or (model.ntendon and np.any(model.tendon_limited)):
        out.append("limits off: none was reached at the states checked")
    for e in np.flatnonzero(model.eq_active0) if model.neq else ():
        kind = mujoco.mjtEq(int(model.eq_type[e])).name.removeprefix("mjEQ_").lower()
        out.append(f"{equality_label(model, int(e))} ({kind}) off: this checks the open tree")
    friction = [*_values(model, "dof_frictionloss"), *_values(model, "tendon_frictionloss")]
    if friction:
        where = ", ".join(friction[:3])
        if len(friction) > 3:  # a legged robot has it on every joint: say how many, name a few
            where = f"{len(friction)} elements ({where} and {len(friction) - 3} more; metrics.json lists them)"
        out.append(f"frictionloss left out on {where}: dry friction is not a function of "
                   "(q, qd, qdd), so it is never compared")
    if model.opt.density or model.opt.viscosity or np.any(model.opt.wind):
        out.append(f"fluid forces left out (density {model.opt.density:g}, viscosity {model.opt.viscosity:g}): "
                   "they are never compared")
    return out


def _entry_name(term: str, index: tuple[int, ...], names: list[str]) -> str:
    if term == "mass_matrix":
        return f"M[{index[0]},{index[1]}]"
    return f"{'c' if term == 'velocity' else 'g'}[{index[0]}] ({names[index[0]]})"


# Entries named in one line of the report before the rest are summarised by joint.
NAMES_PER_LINE = 8
# Lines of the per-term off entries and of the element tables printed without --verbose.
GROUP_LINES = 6


def _summary(members: list, names: list[str], model_joints) -> str:
    """``M[0,0], M[1,1] and 25 more (rows of root, FL_hip)``: the first entries, then the joints they touch."""
    shown = ", ".join(m[0] for m in members[:NAMES_PER_LINE])
    if len(members) <= NAMES_PER_LINE:
        return shown
    rows = []
    for _, index in members:
        joint = model_joints(index[0]) if model_joints else names[index[0]]
        if joint not in rows:
            rows.append(joint)
    listed = ", ".join(rows[:6]) + (f" and {len(rows) - 6} more" if len(rows) > 6 else "")
    return f"{shown} and {len(members) - NAMES_PER_LINE} more ({len(members)} entries, in the rows of {listed})"


def _joint_of(names: list[str]):
    """The joint a dof name belongs to (``root`` of ``root.rz``)."""
    return lambda i: names[i].rsplit(".", 1)[0] if "." in names[i] else names[i]


def off_entries(report) -> list[str]:
    """Every off entry, one line per failing term, grouped by mean offset and constant-or-not.

    Example: ``"mass matrix: M[0,0], M[1,1] each off by 0.25, constant"``.  An
    entry is constant when its error's half-range is under ``CONSTANT`` of its
    largest size (``crossdyn.experiments.core.crosscheck``).  A group of more than
    :data:`NAMES_PER_LINE` entries names its first ones, then the joints whose rows
    hold the rest (a wrong base mass touches 27 entries of M, c and g on a
    quadruped; all of them are in metrics.json).
    """
    from crossdyn.experiments.core.crosscheck import _TERM_LABEL, CONSTANT

    lines = []
    joint_of = _joint_of(report.names)
    for term in report.failing_terms:
        t = report.terms[term]
        ok, mean = np.array(t.entry_passed), np.array(t.mean_error)
        max_abs, spread = np.array(t.entry_max_abs), np.array(t.entry_range) / 2
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
            text = _summary([(m[0], m[1]) for m in members], report.names, joint_of)
            if key == "state-dependent":
                worst = max(m[2] for m in members)
                parts.append(f"{text} off by up to {worst:.4g}, state-dependent")
            else:
                each = "each " if len(members) > 1 and not key.startswith("off by constants") else ""
                parts.append(f"{text} {each}{key}")
        lines.append(f"{_TERM_LABEL[term]}: " + "; ".join(parts))
    return lines


_MODE = {
    "rigid-body": "rigid-body dynamics M(q) qdd + c(q, qd) + g(q): armature, damping, stiffness and "
                  "gravity compensation removed",
    "as-modeled": "as modeled: rigid-body dynamics plus armature, damping, stiffness and gravity compensation",
}


def text(report, title: str, verbose: bool = False) -> str:
    """The report as the CLI prints it: verdict, mode, diagnosis, off entries, explanation, tables.

    The per-joint table is printed on a mismatch or with ``verbose``; long
    element lists are cut to :data:`GROUP_LINES` lines unless ``verbose``.
    """
    lines = [f"{'PASS' if report.passed else 'MISMATCH'}: {title}",
             f"  truth: {_MODE[report.dynamics]}",
             f"  {report.diagnosis}"]
    off = off_entries(report)
    if off:
        lines.append("  off entries:")
        lines += [f"    {line}" for line in off]
    explained = list(report.explanation) + list(getattr(report, "parameters", []))
    if explained:
        lines.append("  explained:")
        lines += [f"    {line}" for line in explained]
    if report.left_out:
        lines.append(f"  what --dynamics {report.dynamics} put in (+) or left out (-):")
        rows = report.left_out if verbose else report.left_out[:GROUP_LINES]
        for row in rows:
            cells = [f"+{k} {v}" for k, v in row["in"].items()] + [f"-{k} {v}" for k, v in row["out"].items()]
            lines.append(f"    {row['element']}: {'; '.join(cells)}")
        if len(rows) < len(report.left_out):
            lines.append(f"    ... and {len(report.left_out) - len(rows)} more elements (metrics.json; --verbose)")
    if report.switched_off:
        lines.append("  switched off in the truth:")
        lines += [f"    {line}" for line in report.switched_off]
    for heading, items in (("conventions", getattr(report, "conventions", [])), ("notes", getattr(report, "notes", [])),
                           ("MuJoCo's warnings about the model", getattr(report, "warnings", [])),
                           ("states", getattr(report, "sampling", []))):
        if items:
            lines.append(f"  {heading}:")
            lines += [f"    {line}" for line in items]
    # The per-joint table: every joint with --verbose; on a mismatch only the joints whose torque is off
    # (an 85-dof robot's table would bury the report), the rest in metrics.json.
    rows = report.per_joint if verbose else [] if report.passed else \
        [row for row in report.per_joint if row["max_abs_error"] > report.atol]
    shown = rows if verbose else rows[:2 * GROUP_LINES]
    if shown:
        lines.append("  worst torque error by joint:" if verbose else "  joints whose torque is off:")
        width = max(len(row["name"]) for row in shown) + 1
    for row in shown:
        lines.append(f"    {row['name'] + ':':<{width}} max |error| {row['max_abs_error']:.3e}  "
                     f"(relative {row['max_rel_error']:.2e})")
    if len(shown) < len(rows):
        lines.append(f"    ... and {len(rows) - len(shown)} more joints off (metrics.json; --verbose)")
    return "\n".join(lines)
