"""Name the passive effect a mismatch equals, and the mode that would agree.

A derivation checked ``rigid-body`` that models the robot's damping is off in its
velocity terms by exactly ``b qd``; one checked ``as-modeled`` that leaves out the
rotor inertia is off on M's diagonal by the armature.  :class:`Attribution` tests
whether the term-wise error equals the sum of some of the model's effects (each
MuJoCo's own: the terms with only that effect kept, minus the rigid-body terms):
``+`` those the derivation includes (rigid-body), ``-`` those it leaves out
(as-modeled), and reports the smallest such set in words.  The pseudo effect
``"springref"`` names a spring written about ``qpos0`` where the model's
``qpos_spring`` puts its rest elsewhere (:func:`springref_model`).
"""

from __future__ import annotations

import copy
from itertools import combinations

import mujoco
import numpy as np

from .checks.names import joint_label
from .truth_scope import carriers

__all__ = ["Attribution", "springref_model", "SPRINGREF"]

SPRINGREF = "springref"

# What each effect looks like in the term-wise error, in words.
_WORDS = {
    "armature": "the mass-matrix diagonal is off by exactly the armature (rotor inertia) of {who}",
    "damping": "the velocity terms are off by exactly the damping force b qd of {who}",
    "stiffness": "the gravity term is off by exactly the spring force k (q - q_spring) of {who}",
    "gravcomp": "the gravity term is off by exactly the gravity compensation of {who}",
    SPRINGREF: "the gravity term is off by exactly k (springref - qpos0), the spring force at the reference pose, "
               "on {who}: your springs pull toward qpos0, the model's rest at their springref (qpos_spring)",
}


def _stiff_joints(model: mujoco.MjModel) -> list[int]:
    """Hinge and slide joints with a spring whose rest (qpos_spring) is not the reference pose (qpos0)."""
    out = []
    for j in range(model.njnt):
        adr = int(model.jnt_qposadr[j])
        if int(model.jnt_type[j]) in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)) \
                and model.jnt_stiffness[j] != 0 and model.qpos_spring[adr] != model.qpos0[adr]:
            out.append(j)
    return out


def springref_model(model: mujoco.MjModel) -> mujoco.MjModel | None:
    """A copy whose joint springs rest at ``qpos0`` instead of ``qpos_spring``, or None if none differs."""
    joints = _stiff_joints(model)
    if not joints:
        return None
    out = copy.copy(model)
    for j in joints:
        adr = int(out.jnt_qposadr[j])
        out.qpos_spring[adr] = out.qpos0[adr]
    return out


def _springref_carriers(model: mujoco.MjModel) -> list[tuple[str, str]]:
    rows = []
    for j in _stiff_joints(model):
        adr = int(model.jnt_qposadr[j])
        rows.append((joint_label(model, j), f"k {model.jnt_stiffness[j]:g}, springref {model.qpos_spring[adr]:g}, "
                     f"qpos0 {model.qpos0[adr]:g}: k (springref - qpos0) = "
                     f"{model.jnt_stiffness[j] * (model.qpos_spring[adr] - model.qpos0[adr]):.4g}"))
    return rows


class Attribution:
    """Running test of "the error equals these effects", over chunks of states.

    Args:
      model: the model as it comes (for the names of the elements).
      dynamics: the mode the error was measured against.
      effects: the effects the model carries (``truth.effects_present``).
      atol, rtol: the check's tolerance, applied to the residual
        ``error -/+ effects`` against the reference term.
    """

    def __init__(self, model: mujoco.MjModel, dynamics: str, effects: tuple[str, ...], atol: float, rtol: float,
                 springref: bool = False):
        self.model, self.dynamics, self.effects = model, dynamics, tuple(e for e in effects if e != SPRINGREF)
        self.atol, self.rtol = atol, rtol
        self.sign = 1.0 if dynamics == "rigid-body" else -1.0
        self.signs = {e: self.sign for e in self.effects}
        self.signs[SPRINGREF] = 1.0  # the derivation's springs are about qpos0: error = + the difference
        self.sets = [s for k in range(1, len(self.effects) + 1) for s in combinations(self.effects, k)]
        if springref:
            self.sets.insert(0, (SPRINGREF,))
        self.holds = {s: True for s in self.sets}

    def add(self, error: dict[str, np.ndarray], reference: dict[str, np.ndarray],
            contributions: dict[str, dict[str, np.ndarray]]) -> None:
        """One chunk: per term ``error`` and ``reference`` ``(n, ...)``, per effect its terms."""
        for s in self.sets:
            if not self.holds[s]:
                continue
            for term, err in error.items():
                residual = err - sum(self.signs[e] * contributions[e][term] for e in s)
                if not np.all(np.abs(residual) <= self.atol + self.rtol * np.abs(reference[term])):
                    self.holds[s] = False
                    break

    def sentences(self) -> list[str]:
        """The explanation: one sentence per effect, then the verdict; empty if nothing fits."""
        found = next((s for s in self.sets if self.holds[s]), None)
        if found is None:
            return []
        if found == (SPRINGREF,):
            who = "; ".join(f"{element} ({value})" for element, value in _springref_carriers(self.model))
            return [_WORDS[SPRINGREF].format(who=who), "write each spring force as -k (q - springref)"]
        out = []
        for effect in found:
            who = ", ".join(f"{element} ({value})" for element, value in carriers(self.model, effect))
            sentence = _WORDS[effect].format(who=who)
            if self.sign < 0:  # as-modeled: the error is minus what is left out (the off entries' sign)
                sentence = sentence.replace("off by exactly the ", "off by exactly minus the ", 1)
            out.append(sentence)
        named = " and ".join(found)
        rest = [e for e in self.effects if e not in found]
        if self.dynamics == "rigid-body":
            verdict = f"the derivation includes {named}, which --dynamics rigid-body removes"
            verdict += ("; --dynamics as-modeled agrees" if not rest else
                        f"; --dynamics as-modeled would also need {' and '.join(rest)}")
        else:
            verdict = f"the derivation leaves out {named}"
            verdict += ("; --dynamics rigid-body agrees" if not rest else
                        f" (it does include {' and '.join(rest)}); add {named} to agree as-modeled")
        out.append(verdict)
        return out
