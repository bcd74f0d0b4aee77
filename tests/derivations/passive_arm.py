"""Derivations of ``tests/models/passive_arm.xml`` for ``crossdyn check derivation``.

- ``rigid_body``: the lecture's spatial RNEA of the rigid bodies (passes ``--dynamics rigid-body``);
- ``as_modeled``: plus armature, joint and tendon damping, the wrist spring and
  gravity compensation (passes ``--dynamics as-modeled``);
- ``omits_damping``, ``omits_armature``: as modeled but one effect forgotten.

Usage: ``crossdyn check derivation tests/derivations/passive_arm.py:as_modeled
--mjcf tests/models/passive_arm.xml --dynamics as-modeled``.
"""

from pathlib import Path

import passive_terms  # a helper beside this file, found as `python passive_arm.py` would
from crossdyn.analytic.rnea import rnea
from crossdyn.experiments.core.checks.tree import tree_from_model
from crossdyn.experiments.core.models import load_model

MODEL = load_model(Path(__file__).parent.parent / "models" / "passive_arm.xml")
TREE = tree_from_model(MODEL)


def rigid_body(q, qd, qdd):
    return rnea(TREE, q, qd, qdd)


def _with(q, qd, qdd, *, armature=True, damping=True):
    tau = rnea(TREE, q, qd, qdd) + passive_terms.stiffness(MODEL, q) + passive_terms.gravcomp(MODEL, TREE, q)
    if armature:
        tau = tau + passive_terms.armature(MODEL, qdd)
    if damping:
        tau = tau + passive_terms.damping(MODEL, qd)
    return tau


def as_modeled(q, qd, qdd):
    return _with(q, qd, qdd)


def omits_damping(q, qd, qdd):
    return _with(q, qd, qdd, damping=False)


def omits_armature(q, qd, qdd):
    return _with(q, qd, qdd, armature=False)
