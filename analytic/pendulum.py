"""Pendulum: a rigid body on one hinge, derived by Lagrange.

The worked example of the guide "Add a system".  ``q`` is the angle from hanging
straight down (rad).  With ``m`` the body's mass, ``lc`` the distance from the
hinge to its centre of mass and ``inertia`` its moment of inertia about its centre
of mass (about the hinge axis), the kinetic and potential energies are::

    T = 1/2 (inertia + m lc^2) qd^2,      V = -m g lc cos(q)

and Lagrange's equation is the inverse dynamics::

    tau = (inertia + m lc^2) qdd + m g lc sin(q)

(no velocity term: one hinge has no Coriolis or centrifugal torque).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PendulumParams", "inverse_dynamics"]


@dataclass(frozen=True)
class PendulumParams:
    """The pendulum's numbers (read from the MJCF by ``crossdyn.experiments.pendulum``).

    Attributes:
      m: mass, kg.
      lc: hinge to centre of mass, m.
      inertia: moment of inertia about the centre of mass, about the hinge axis, kg m^2.
      g: gravity, m/s^2 (positive, acting along -z).
    """

    m: float
    lc: float
    inertia: float
    g: float = 9.81


def inverse_dynamics(p: PendulumParams, q, qd, qdd) -> np.ndarray:
    """Hinge torque ``tau``, ``(..., 1)`` N m.

    Args:
      p: the pendulum's numbers.
      q, qd, qdd: angle, rate and acceleration, ``(..., 1)``, rad, rad/s, rad/s^2.
    """
    del qd  # one hinge: no velocity-dependent torque
    q, qdd = np.asarray(q, dtype=float), np.asarray(qdd, dtype=float)
    return (p.inertia + p.m * p.lc**2) * qdd + p.m * p.g * p.lc * np.sin(q)
