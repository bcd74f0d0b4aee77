"""A derivation for a floating-base model: the lecture's spatial RNEA on the free tree.

``crossdyn check derivation tests/derivations/tree_rnea.py:free_tree --mjcf free_tree``
checks a 10-dof floating-base tree (MuJoCo's free-joint layout) term by term.
"""

from crossdyn.analytic.rnea import rnea
from crossdyn.experiments.core.checks.tree import tree_from_model
from crossdyn.experiments.core.models import load_model

TREE = tree_from_model(load_model("free_tree"))


def free_tree(q, qd, qdd):
    return rnea(TREE, q, qd, qdd)
