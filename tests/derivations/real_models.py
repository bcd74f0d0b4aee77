"""Rigid-body derivations of the test models that carry constraints or come from URDF.

- ``contact_arm``: the lecture's spatial RNEA on ``tests/models/contact_arm.xml``,
  whose contacts, joint limit and equality constraint are active at sampled
  states; the check switches them off and compares the open tree;
- ``urdf_arm``: the same on ``tests/models/urdf_arm.urdf`` (MuJoCo's URDF import);
- ``urdf_arm_damped``: plus the URDF's ``<dynamics damping>``, ``b qd``;
- ``go2``: the same RNEA on Unitree's Go2 (``tests/models/go2/go2.xml``, a
  floating base and 12 leg joints); ``go2_heavy_base``: its parameter table with
  the base's mass written as 7.5 kg where the model has 6.921 kg.
"""

from pathlib import Path

import numpy as np

from crossdyn.analytic.rnea import rnea
from crossdyn.experiments.core.checks.tree import tree_from_model
from crossdyn.experiments.core.models import load_model

MODELS = Path(__file__).parent.parent / "models"
CONTACT = tree_from_model(load_model(MODELS / "contact_arm.xml"))
URDF_MODEL = load_model(MODELS / "urdf_arm.urdf")
URDF = tree_from_model(URDF_MODEL)


GO2_MODEL = load_model(MODELS / "go2" / "go2.xml")
GO2 = tree_from_model(GO2_MODEL)
_heavy = load_model(MODELS / "go2" / "go2.xml")
_heavy.body_mass[_heavy.body("base_link").id] = 7.5
GO2_HEAVY_BASE = tree_from_model(_heavy)


def contact_arm(q, qd, qdd):
    return rnea(CONTACT, q, qd, qdd)


def urdf_arm(q, qd, qdd):
    return rnea(URDF, q, qd, qdd)


def urdf_arm_damped(q, qd, qdd):
    return rnea(URDF, q, qd, qdd) + np.asarray(URDF_MODEL.dof_damping) * qd


def go2(q, qd, qdd):
    return rnea(GO2, q, qd, qdd)


def go2_heavy_base(q, qd, qdd):
    return rnea(GO2_HEAVY_BASE, q, qd, qdd)
