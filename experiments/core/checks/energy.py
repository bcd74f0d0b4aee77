"""``crossdyn check energy``: hand-derived kinetic and potential energy against MuJoCo's.

A potential is defined up to a constant, so it is compared up to one constant over
all states, which the report names.  On a mismatch the report tests: a kinetic energy
a factor off, the armature in or out, the potential's sign, inertial parameters.
"""

from __future__ import annotations

import functools
import os

import mujoco
import numpy as np

from ....analytic.regressor import energy_regressor
from .. import user_code
from ..models import with_options
from . import inertial
from .common import EntryStats, Hypotheses, UserFunction, model_warnings, progress
from .mass_matrix import INERTIAL_STATES
from .options import SAMPLED, begin
from .passive import PassiveEffects
from .report import CheckReport, Part
from .tree import rigid_tree

__all__ = ["check_energy", "energies"]

_TRUTH = {"rigid-body": "MuJoCo's energy (mjENBL_ENERGY): kinetic 1/2 qd^T M qd, potential of gravity; no "
                        "armature, no springs",
          "as-modeled": "MuJoCo's energy (mjENBL_ENERGY): kinetic 1/2 qd^T M qd with the armature, potential of "
                        "gravity and of the springs about their springref"}
# Factors a kinetic energy is commonly off by (a missing or doubled 1/2).
_FACTORS = (2.0, 0.5)


def energies(model: mujoco.MjModel, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo's ``(kinetic (n,), potential (n,))`` at each state (a copy with the energy flag on), J."""
    flags = int(model.opt.enableflags) | int(mujoco.mjtEnableBit.mjENBL_ENERGY)
    copy = with_options(model, enableflags=flags)
    data = mujoco.MjData(copy)
    T, U = np.empty(q.shape[0]), np.empty(q.shape[0])
    for k in range(q.shape[0]):
        data.qpos[:], data.qvel[:] = q[k], qd[k]
        mujoco.mj_forward(copy, data)
        U[k], T[k] = data.energy
    return T, U


@user_code.quiet_arithmetic
def check_energy(fn, model: mujoco.MjModel | str | os.PathLike, **options) -> CheckReport:
    """Check ``fn(q, qd) -> (kinetic, potential)`` (J) against MuJoCo's energy, the potential up to a constant.

    ``fn``, ``model``, the ``options`` (``dynamics`` and the sampling ones, with ``qd_range``)
    and the errors are every check's (:class:`~crossdyn.experiments.core.checks.options.CheckOptions`).

    Returns:
      The :class:`~crossdyn.experiments.core.checks.report.CheckReport`, parts ``kinetic`` and
      ``potential`` (up to the constant in ``extra["potential_constant"]``).
    """
    check = begin("check_energy", fn, model, options, (*SAMPLED, "dynamics", "qd_range"))
    model, label, o = check.model, check.label, check.options
    atol, rtol = o.atol, o.rtol
    truth = check.truth()
    source = check.source(("q", "qd"))
    user = UserFunction(check.fn, label, [((), ())], "(kinetic, potential) energies, J")
    kinetic, potential = EntryStats(()), EntryStats(())
    offset: float | None = None
    shift_sum, shift_n = 0.0, 0
    with model_warnings() as warned:
        for q, qd in progress(source.chunks(), source.total, f"checking {label}"):
            T_user, U_user = user(q, qd)
            T, U = energies(truth, q, qd)
            kinetic.add(T_user - T, T, atol, rtol)
            diff = U_user - U
            if offset is None:
                offset = float(diff[0])  # the potential's constant, taken at the first state
            potential.add(diff - offset, U, atol, rtol)
            shift_sum, shift_n = shift_sum + float((diff - offset).sum()), shift_n + diff.shape[0]
        constant = (offset or 0.0) + shift_sum / shift_n
        parts = {"kinetic": Part.from_stats("kinetic", "T", (), kinetic),
                 "potential": Part.from_stats("potential", "U", (), potential)}
        passed = all(p.passed for p in parts.values())
        attribution = [] if passed else _attribute(model, truth, o.dynamics, user, source, atol, rtol, label)
    scale = max(parts["potential"].scale, 1.0)
    notes = [n for n in [user.note()] if n]
    extra: dict[str, object] = {"potential_constant": constant}
    if parts["potential"].passed and abs(constant) > atol + rtol * scale:
        words = (f"potential compared up to one constant: yours = MuJoCo's {constant:+.6g} J at every state "
                 "(another zero of potential energy; MuJoCo's is every centre of mass at the world origin's height)")
        notes.append(words)
        extra["allowed"] = f"potential = MuJoCo's {constant:+.4g} J"
    return check.report("energy", parts, _TRUTH[o.dynamics], attribution, source=source, warned=warned, notes=notes,
                        extra=extra)


def _attribute(model, truth, dynamics, user, source, atol, rtol, label) -> list[str]:
    passive = PassiveEffects(model, dynamics, ("armature",), atol, rtol)
    hyp = Hypotheses()
    first, kept = None, None
    for q, qd in progress(source.chunks(), source.total, f"explaining {label}"):
        T_user, U_user = user(q, qd)
        T, U = energies(truth, q, qd)
        for factor in _FACTORS:
            hyp.test(f"kinetic x{factor:g}", T_user, factor * T, atol, rtol)
        if first is None:
            first = (float(U_user[0]), float(U[0]))
        # The potential's sign, up to its constant: U_yours - U_yours(0) = -(U - U(0)); named only where the
        # potential is off (a constant potential, gravity off, equals its own negative).
        hyp.test("potential", U_user - first[0], U - first[1], atol, rtol)
        hyp.test("potential sign", U_user - first[0], -(U - first[1]), atol, rtol)
        if passive:
            passive.add({"kinetic": T_user - T}, functools.partial(_kinetic, q=q, qd=qd))
        if kept is None:
            k = min(INERTIAL_STATES * 4, q.shape[0])  # one equation per state and energy: more states
            kept = (q[:k], qd[:k], T_user[:k] - T[:k], T[:k], U_user[:k] - U[:k], U[:k])
    out = passive.sentences() if passive else []
    if out:
        return [line.replace("mass-matrix diagonal is off by exactly the armature",
                             "kinetic energy is off by exactly 1/2 a qd^2 of the armature") for line in out]
    found = next((f for f in _FACTORS if hyp.all(f"kinetic x{f:g}")), None)
    if found is not None:
        out.append(f"your kinetic energy is {found:g} times MuJoCo's: "
                   + ("the 1/2 of 1/2 qd^T M qd is missing" if found == 2.0 else "a 1/2 too many"))
    if hyp.all("potential sign") and not hyp.all("potential"):
        out.append("your potential energy changes with the opposite sign of MuJoCo's: gravity points the other "
                   "way, or U = +m g h was written with h measured downward")
    tree = rigid_tree(model)
    if not out and tree is not None and kept is not None:
        out += _inertial(tree, *kept, atol, rtol)
    return out


def _kinetic(model: mujoco.MjModel, q: np.ndarray, qd: np.ndarray) -> dict[str, np.ndarray]:
    return {"kinetic": energies(model, q, qd)[0]}


def _inertial(tree, q, qd, err_T, T, err_U, U, atol, rtol) -> list[str]:
    """Both energies are linear in the inertial parameters; the potential's rows are relative to the first state."""
    Y_T, Y_U = energy_regressor(tree, q, qd)
    Y = np.vstack([Y_T, Y_U[1:] - Y_U[0]])
    error = np.concatenate([err_T, err_U[1:] - err_U[0]])
    reference = np.concatenate([T, U[1:]])
    return inertial.explain(tree, Y, error, reference, atol, rtol, unit="J")

