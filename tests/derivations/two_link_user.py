"""A user's own two-link derivations, as ``crossdyn check derivation`` loads them.

Written the way a user would: one state at a time, plain NumPy, the page docs/derivations/two-link.md's closed
form typed out.  The parameters are read from the MJCF (the single source), so
only the *formulas* differ between the functions below:

- ``correct``: docs/derivations/two-link.md (the lecture's D-coefficients with the link inertias I1, I2);
- ``correct_batch``: the same, vectorized over a leading batch axis;
- ``lecture_no_link_inertia``: without I1, I2 (docs/derivations/errata.md) -> the mass matrix is off;
- ``gravity_flipped``: potential energy with the wrong sign -> gravity is off;
- ``coriolis_dropped``: tau1 without -2 h qd1 qd2 -> the velocity terms are off;
- ``wrong_shape``, ``raises``: broken on purpose, for the error messages.

Usage: ``crossdyn check derivation tests/derivations/two_link_user.py:correct --mjcf two_link_arm``.
"""

import numpy as np

from crossdyn.experiments.core.models import load_model
from crossdyn.experiments.two_link import two_link_params

P = two_link_params(load_model("two_link_arm"))


def _tau(q, qd, qdd, i1, i2, g, coriolis=1.0):
    c2, s2 = np.cos(q[..., 1]), np.sin(q[..., 1])
    s1, s12 = np.sin(q[..., 0]), np.sin(q[..., 0] + q[..., 1])
    h = P.m2 * P.l1 * P.p2 * s2
    d11 = P.m1 * P.p1**2 + i1 + P.m2 * (P.l1**2 + P.p2**2 + 2 * P.l1 * P.p2 * c2) + i2
    d12 = P.m2 * (P.p2**2 + P.l1 * P.p2 * c2) + i2
    d22 = P.m2 * P.p2**2 + i2
    tau1 = (d11 * qdd[..., 0] + d12 * qdd[..., 1] - coriolis * 2 * h * qd[..., 0] * qd[..., 1]
            - h * qd[..., 1] ** 2 + (P.m1 * P.p1 + P.m2 * P.l1) * g * s1 + P.m2 * g * P.p2 * s12)
    tau2 = d12 * qdd[..., 0] + d22 * qdd[..., 1] + h * qd[..., 0] ** 2 + P.m2 * g * P.p2 * s12
    return np.stack([tau1, tau2], axis=-1)


def correct(q, qd, qdd):
    assert np.ndim(q) == 1, "written for one state"
    return _tau(q, qd, qdd, P.i1, P.i2, P.g)


def correct_batch(q, qd, qdd):
    return _tau(np.asarray(q), np.asarray(qd), np.asarray(qdd), P.i1, P.i2, P.g)


def lecture_no_link_inertia(q, qd, qdd):
    return _tau(q, qd, qdd, 0.0, 0.0, P.g)


def gravity_flipped(q, qd, qdd):
    return _tau(q, qd, qdd, P.i1, P.i2, -P.g)


def coriolis_dropped(q, qd, qdd):
    return _tau(q, qd, qdd, P.i1, P.i2, P.g, coriolis=0.0)


def wrong_shape(q, qd, qdd):
    return np.zeros(3)


def raises(q, qd, qdd):
    raise ZeroDivisionError("the user's bug")


NOT_A_FUNCTION = 3
