"""Rigid-body derivations of the test models that carry constraints or come from URDF.

- ``contact_arm``: the lecture's spatial RNEA on ``tests/models/contact_arm.xml``,
  whose contacts, joint limit and equality constraint are active at sampled
  states; the check switches them off and compares the open tree;
- ``urdf_arm``: the same on ``tests/models/urdf_arm.urdf`` (MuJoCo's URDF import);
- ``urdf_arm_damped``: plus the URDF's ``<dynamics damping>``, ``b qd``.
"""

from pathlib import Path

import numpy as np

from crossdyn.analytic.rnea import rnea
from crossdyn.experiments.core.derivation import tree_from_model
from crossdyn.experiments.core.models import load_model

MODELS = Path(__file__).parent.parent / "models"
CONTACT = tree_from_model(load_model(MODELS / "contact_arm.xml"))
URDF_MODEL = load_model(MODELS / "urdf_arm.urdf")
URDF = tree_from_model(URDF_MODEL)


def contact_arm(q, qd, qdd):
    return rnea(CONTACT, q, qd, qdd)


def urdf_arm(q, qd, qdd):
    return rnea(URDF, q, qd, qdd)


def urdf_arm_damped(q, qd, qdd):
    return rnea(URDF, q, qd, qdd) + np.asarray(URDF_MODEL.dof_damping) * qd
