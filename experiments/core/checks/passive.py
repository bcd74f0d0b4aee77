"""Is an error one of the model's passive effects (armature, damping, a spring's reference)?

:class:`PassiveEffects` computes each effect's contribution to the quantity with
MuJoCo itself and tests, state by state, whether the error is a sum of them.
"""

from __future__ import annotations

from collections.abc import Callable

import mujoco
import numpy as np

from ..attribution import SPRINGREF, Attribution, springref_model
from ..truth import effects_present, truth_model

__all__ = ["PassiveEffects"]


class PassiveEffects:
    """The effects of ``relevant`` the model carries, their contributions, and the running test.

    ``relevant`` are the effects that can show in the quantity (armature in a mass
    matrix; damping, stiffness, gravcomp in bias forces); ``dynamics`` the mode the
    error was measured against.
    """

    def __init__(self, model: mujoco.MjModel, dynamics: str, relevant: tuple[str, ...], atol: float, rtol: float):
        self.effects = tuple(e for e in effects_present(model) if e in relevant)
        self.rigid = truth_model(model, "rigid-body")
        self.mode = truth_model(model, dynamics)
        self.one = {e: truth_model(model, keep=(e,)) for e in self.effects}
        shifted = springref_model(self.mode) if dynamics == "as-modeled" and "stiffness" in self.effects else None
        self.shifted = shifted
        self.attribution = Attribution(model, dynamics, self.effects, atol, rtol, springref=shifted is not None)

    def __bool__(self) -> bool:
        return bool(self.effects)

    def add(self, error: dict[str, np.ndarray], compute: Callable[[mujoco.MjModel], dict[str, np.ndarray]]) -> None:
        """One chunk: the error per term, and ``compute(model) -> terms`` evaluating the quantity on a model copy."""
        rigid, mode = compute(self.rigid), compute(self.mode)
        contributions = {e: {t: v - rigid[t] for t, v in compute(m).items()} for e, m in self.one.items()}
        if self.shifted is not None:
            contributions[SPRINGREF] = {t: v - mode[t] for t, v in compute(self.shifted).items()}
        self.attribution.add(error, mode, contributions)

    def sentences(self) -> list[str]:
        return self.attribution.sentences()
