"""Hand-written passive terms of a MuJoCo model, a helper module beside the derivations.

``passive_arm.py`` imports it as ``import passive_terms``, the way ``python
passive_arm.py`` would find a module in its own folder: crossdyn imports a
derivation file with its folder first on ``sys.path``.

Each term is the generalized force ``mj_inverse`` adds to ``M qdd + c + g`` (it
subtracts ``qfrc_passive``), written from MuJoCo's documented formulas, with the
parameters read from the compiled model (the MJCF stays the single source):

- armature: ``a_i qdd_i`` (rotor inertia on M's diagonal);
- joint damping: ``b_i qd_i``;
- fixed-tendon damping: ``J^T b J qd`` with ``J`` the tendon's joint coefficients;
- joint stiffness: ``k_i (q_i - q_spring_i)`` about ``qpos_spring`` (springref);
- gravity compensation: ``-gc_b g_b(q)``, ``g_b`` the gravity torque of body b alone.
"""

import dataclasses

import numpy as np

from crossdyn.analytic.rnea import rnea


def armature(model, qdd):
    return np.asarray(model.dof_armature) * qdd


def damping(model, qd):
    """Joint damping plus fixed-tendon damping, ``(..., nv)``."""
    tau = np.asarray(model.dof_damping) * qd
    for t in range(model.ntendon):
        coef = np.zeros(model.nv)
        for w in range(model.tendon_adr[t], model.tendon_adr[t] + model.tendon_num[t]):
            coef[model.jnt_dofadr[model.wrap_objid[w]]] = model.wrap_prm[w]
        tau = tau + coef * (model.tendon_damping[t] * (qd @ coef))[..., None]
    return tau


def stiffness(model, q):
    """Springs of hinge and slide joints about ``qpos_spring`` (not ``qpos0``)."""
    return np.asarray(model.jnt_stiffness)[model.dof_jntid] * (q - np.asarray(model.qpos_spring))


def gravcomp(model, tree, q):
    """Minus each compensated body's share of the gravity torque."""
    tau = np.zeros(np.shape(q))
    zero = np.zeros(np.shape(q))
    for b in np.flatnonzero(model.body_gravcomp[1:]):
        alone = dataclasses.replace(tree, mass=np.where(np.arange(tree.mass.size) == b, tree.mass, 0.0))
        tau = tau - model.body_gravcomp[b + 1] * rnea(alone, q, zero, zero)
    return tau
