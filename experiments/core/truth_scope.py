"""What a check's truth leaves out, in words: which elements carry each effect, what the mode put in or
left out, and what the truth switched off (the report itself is :mod:`crossdyn.experiments.core.checks.report`'s).
"""

from __future__ import annotations

import mujoco
import numpy as np

from .checks.names import body_name, equality_label, joint_label
from .truth import EFFECTS

__all__ = ["carriers", "elements", "switched_off"]

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
