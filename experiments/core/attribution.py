"""Name the passive effect a mismatch equals, and the mode that would agree.

A derivation checked with ``--dynamics rigid-body`` that models the robot's
damping is off in its velocity terms by exactly ``b qd`` on the damped joints; one
checked ``as-modeled`` that leaves out the rotor inertia is off on M's diagonal by
exactly the armature.  :class:`Attribution` tests, state by state and entry by
entry, whether the term-wise error equals the sum of some of the model's effects
(:data:`crossdyn.experiments.core.truth.EFFECTS`), each effect's contribution being
MuJoCo's own (the terms with only that effect kept, minus the rigid-body terms):

- rigid-body: ``error = + sum of the effects the derivation includes``;
- as-modeled: ``error = - sum of the effects it leaves out``.

The smallest such set is reported in words, with the elements carrying it.
"""

from __future__ import annotations

from itertools import combinations

import mujoco
import numpy as np

from crossdyn.experiments.core.report import carriers

__all__ = ["Attribution"]

# What each effect looks like in the term-wise error, in words.
_WORDS = {
    "armature": "the mass-matrix diagonal is off by exactly the armature (rotor inertia) of {who}",
    "damping": "the velocity terms are off by exactly the damping force b qd of {who}",
    "stiffness": "the gravity term is off by exactly the spring force k (q - q_spring) of {who}",
    "gravcomp": "the gravity term is off by exactly the gravity compensation of {who}",
}


class Attribution:
    """Running test of "the error equals these effects", over chunks of states.

    Args:
      model: the model as it comes (for the names of the elements).
      dynamics: the mode the error was measured against.
      effects: the effects the model carries (``truth.effects_present``).
      atol, rtol: the check's tolerance, applied to the residual
        ``error -/+ effects`` against the reference term.
    """

    def __init__(self, model: mujoco.MjModel, dynamics: str, effects: tuple[str, ...], atol: float, rtol: float):
        self.model, self.dynamics, self.effects = model, dynamics, effects
        self.atol, self.rtol = atol, rtol
        self.sign = 1.0 if dynamics == "rigid-body" else -1.0
        self.sets = [s for k in range(1, len(effects) + 1) for s in combinations(effects, k)]
        self.holds = {s: True for s in self.sets}

    def add(self, error: dict[str, np.ndarray], reference: dict[str, np.ndarray],
            contributions: dict[str, dict[str, np.ndarray]]) -> None:
        """One chunk: per term ``error`` and ``reference`` ``(n, ...)``, per effect its terms."""
        for s in self.sets:
            if not self.holds[s]:
                continue
            for term, err in error.items():
                residual = err - self.sign * sum(contributions[e][term] for e in s)
                if not np.all(np.abs(residual) <= self.atol + self.rtol * np.abs(reference[term])):
                    self.holds[s] = False
                    break

    def sentences(self) -> list[str]:
        """The explanation: one sentence per effect, then the verdict; empty if nothing fits."""
        found = next((s for s in self.sets if self.holds[s]), None)
        if found is None:
            return []
        out = []
        for effect in found:
            who = ", ".join(f"{element} ({value})" for element, value in carriers(self.model, effect))
            out.append(_WORDS[effect].format(who=who))
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
