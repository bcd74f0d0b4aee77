"""Checks of every part of a hand derivation against MuJoCo, one module per quantity.

- :mod:`.kinematics`: ``fn(q) -> position`` or ``(position, rotation)`` of a site or body;
- :mod:`.jacobian`: ``fn(q) -> (6, nv)`` or ``(3, nv)``, world-aligned or local, open or closed loops;
- :mod:`.mass_matrix`: ``fn(q) -> M (nv, nv)``;
- :mod:`.bias`: ``fn(q, qd) -> c + g`` (or ``fn(q) -> g``);
- :mod:`.energy`: ``fn(q, qd) -> (kinetic, potential)``, the potential up to a constant;
- :mod:`.forward_dynamics`: ``fn(q, qd, tau) -> qdd``;
- :mod:`.linearization`: ``fn(q, qd, u) -> (A, B)`` against ``linearize``.

Each takes the options of :class:`.options.CheckOptions` and returns the one report
type, :class:`.report.CheckReport`, as ``check derivation`` (inverse dynamics) does.
"""

from __future__ import annotations

import importlib

__all__ = ["check", "QUANTITIES"]

# command name -> (module, function)
QUANTITIES = {
    "kinematics": ("kinematics", "check_kinematics"),
    "jacobian": ("jacobian", "check_jacobian"),
    "mass-matrix": ("mass_matrix", "check_mass_matrix"),
    "bias": ("bias", "check_bias"),
    "energy": ("energy", "check_energy"),
    "forward-dynamics": ("forward_dynamics", "check_forward_dynamics"),
    "linearization": ("linearization", "check_linearization"),
}


def check(quantity: str, fn, model, **options):
    """Run the check of ``quantity`` (a key of :data:`QUANTITIES`) and return its report."""
    module, name = QUANTITIES[quantity]
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)(fn, model, **options)
