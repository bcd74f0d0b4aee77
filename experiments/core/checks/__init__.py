"""Checks of every part of a hand derivation against MuJoCo, one module per quantity (:data:`QUANTITIES`):
kinematics, Jacobian, mass matrix, bias forces, energy, forward dynamics and linearization.  Each takes
the options of :class:`.options.CheckOptions` and returns the one report type, :class:`.report.CheckReport`,
as ``check derivation`` (inverse dynamics) does."""

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
