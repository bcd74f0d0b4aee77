"""The unit-vector method's mass matrix and bias, built from the RNEA, against MuJoCo's.

Shared by the systems that check the RNEA (:mod:`crossdyn.experiments.rnea`, on each of
its models) and the unit-vector method (:mod:`crossdyn.experiments.unit_vector`).
"""

from __future__ import annotations

import functools

import mujoco
import numpy as np

from ...analytic.rnea import rnea
from ...analytic.unit_vector import mass_matrix_and_bias
from ..core.checks.common import sample_states
from ..core.checks.tree import tree_from_model
from ..core.truth import bias_force, mass_matrix

__all__ = ["MATRIX_RTOL", "unit_vector_errors"]

# Unit-vector A and b vs mj_fullM / qfrc_bias: 1e-10 x the largest entry; both are
# sums of a few dozen products, so round-off is ~1e-15 x scale.
MATRIX_RTOL = 1e-10


def unit_vector_errors(model: mujoco.MjModel, samples: int, seed: int) -> dict:
    """Unit-vector ``A``, ``b`` (with ``rnea`` inside) vs ``mj_fullM`` and ``qfrc_bias``."""
    tree = tree_from_model(model)
    qpos, qvel, _ = sample_states(model, samples, seed)
    A, b = mass_matrix_and_bias(functools.partial(rnea, tree), qpos, qvel)
    M_ref, b_ref = mass_matrix(model, qpos), bias_force(model, qpos, qvel)
    return {
        "mass_matrix_max_abs_error": float(np.abs(A - M_ref).max()),
        "mass_matrix_scale": float(np.abs(M_ref).max()),
        "bias_max_abs_error": float(np.abs(b - b_ref).max()),
        "bias_scale": float(np.abs(b_ref).max()),
        "mass_matrix_symmetric_to": float(np.abs(A - np.swapaxes(A, 1, 2)).max()),
    }
