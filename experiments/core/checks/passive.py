"""Is an error one of the model's passive effects?  The quantity checks' use of :mod:`..attribution`.

A mass matrix off by exactly the armature on its diagonal, bias forces off by the
damping force ``b qd`` or by a spring about ``qpos0`` instead of its ``springref``:
:class:`PassiveEffects` computes each effect's contribution to the quantity with
MuJoCo itself (the quantity on a copy of the model that keeps only that effect,
minus the rigid-body one) and tests, state by state, whether the error is a sum
of them (:class:`~crossdyn.experiments.core.attribution.Attribution`).
"""

from __future__ import annotations

from collections.abc import Callable

import mujoco
import numpy as np

from crossdyn.experiments.core.attribution import SPRINGREF, Attribution, springref_model
from crossdyn.experiments.core.truth import effects_present, truth_model

__all__ = ["PassiveEffects"]


class PassiveEffects:
    """The effects of ``relevant`` the model carries, their contributions, and the running test.

    Args:
      model: the model as it comes.
      dynamics: the mode the error was measured against.
      relevant: the effects that can show in this quantity (armature in a mass
        matrix; damping, stiffness, gravcomp in bias forces).
      atol, rtol: the check's tolerance.
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
