"""A user's own derivation against MuJoCo: ``crossdyn check derivation`` and its API.

:func:`check_derivation` checks a function or ``FILE.py:FUNC`` against
``mj_inverse`` term by term; :func:`check_isolated` does it in a worker process,
where a derivation that ends its process is a one-line :class:`DerivationError`,
never a verdict; :func:`tree_from_model` reads the rigid-body
:class:`~crossdyn.analytic.rnea.Tree` of a compiled model.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path

import mujoco
import numpy as np

from crossdyn.analytic.rnea import Tree
from crossdyn.analytic.rotation import quat_to_matrix
from crossdyn.experiments.core import isolation, user_code
from crossdyn.experiments.core.checks.inverse_dynamics import check
from crossdyn.experiments.core.checks.report import CheckReport
from crossdyn.experiments.core.errors import CrossdynError, DerivationError, ModelError
from crossdyn.experiments.core.models import as_model, body_inertia, model_path

__all__ = ["tree_from_model", "load_derivation", "check_derivation", "check_isolated"]

_TYPES = {
    int(mujoco.mjtJoint.mjJNT_HINGE): "hinge",
    int(mujoco.mjtJoint.mjJNT_SLIDE): "slide",
    int(mujoco.mjtJoint.mjJNT_BALL): "ball",
    int(mujoco.mjtJoint.mjJNT_FREE): "free",
}


def tree_from_model(model: mujoco.MjModel) -> Tree:
    """Describe a compiled model as a :class:`~analytic.rnea.Tree`: its rigid-body part only.

    What MuJoCo adds on top (armature, damping, contacts, ...) is not in it, so its
    RNEA equals the truth of ``check derivation --dynamics rigid-body``.

    Raises:
      ModelError: the model's joints cannot be described as a tree (a free joint below the world, say).
    """
    nb = model.nbody - 1  # MuJoCo's body 0 is the world
    gravity = np.array(model.opt.gravity, dtype=float)
    if model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_GRAVITY:
        gravity = np.zeros(3)
    inertia = np.array([body_inertia(model, b + 1) for b in range(nb)]).reshape(nb, 3, 3)
    kinds = tuple(_TYPES[int(k)] for k in model.jnt_type)
    ref = np.array([model.qpos0[model.jnt_qposadr[j]] if kinds[j] in ("hinge", "slide") else 0.0
                    for j in range(model.njnt)])
    try:
        tree = Tree(
            parent=np.asarray(model.body_parentid[1:], dtype=int) - 1,
            pos=np.array(model.body_pos[1:], dtype=float),
            rot=quat_to_matrix(model.body_quat[1:]).reshape(nb, 3, 3),
            mass=np.array(model.body_mass[1:], dtype=float),
            com=np.array(model.body_ipos[1:], dtype=float),
            inertia=inertia,
            joint_body=np.asarray(model.jnt_bodyid, dtype=int) - 1,
            joint_type=kinds,
            joint_axis=np.array(model.jnt_axis, dtype=float).reshape(-1, 3),
            joint_pos=np.array(model.jnt_pos, dtype=float).reshape(-1, 3),
            joint_ref=ref,
            gravity=gravity,
            body_names=tuple(model.body(b + 1).name for b in range(nb)),
            joint_names=tuple(model.joint(j).name for j in range(model.njnt)),
        )
    except ValueError as exc:
        raise ModelError(f"model cannot be described as a tree for analytic.rnea: {exc}") from None
    if not (np.array_equal(tree.qpos_adr, model.jnt_qposadr) and np.array_equal(tree.dof_adr, model.jnt_dofadr)):
        raise ModelError("the model's joint coordinates are not packed joint by joint; cannot map them")
    return tree


def load_derivation(spec: str) -> Callable:
    """Import ``FILE.py:FUNC`` (as ``python FILE.py`` would see its neighbours) or ``module:FUNC``.

    Raises:
      DerivationError: malformed spec, missing file or module, the file fails to
        import, no such function, or it is not callable.
    """
    path_text, sep, name = spec.rpartition(":")
    if not sep or not path_text or not name:
        raise DerivationError(f"expected FILE.py:FUNC or module:FUNC, got {spec!r}")
    path = Path(path_text).expanduser()
    if _is_module_name(path_text) and not path.is_file():
        module, where = _import_module(path_text), f"module {path_text}"
    else:
        module, where = user_code.import_file(path), str(path)
    fn = getattr(module, name, None)
    if fn is None:
        public = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_"))
        defined = ", ".join(public) or "nothing callable"
        raise DerivationError(f"{where} has no function {name!r} (it defines: {defined})")
    if not callable(fn):
        raise DerivationError(f"{where}: {name!r} is a {type(fn).__name__}, not a function")
    return fn


def _is_module_name(text: str) -> bool:
    return not text.endswith(".py") and all(part.isidentifier() for part in text.split("."))


def _import_module(name: str):
    import importlib

    try:
        with user_code.guard(f"module {name} (while being imported)"):
            return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise DerivationError(f"no derivation file or importable module {name!r}") from None
        raise DerivationError(f"module {name} failed to import: {exc}{user_code.where(exc)}") from None
    except DerivationError:
        raise
    except Exception as exc:  # the user's module: what it raised, and where, on one line
        detail = " ".join(str(exc).split())
        raise DerivationError(f"module {name} failed to import: {type(exc).__name__}: {detail}"
                              f"{user_code.where(exc)}") from None


def check_derivation(derivation: Callable | str, model: mujoco.MjModel | str | os.PathLike, **options) -> CheckReport:
    """Check a hand derivation ``tau = f(q, qd, qdd)`` against ``mj_inverse``, model as it comes.

    Args:
      derivation: the function (one state or a batch, MuJoCo's coordinate layout)
        or ``"FILE.py:FUNC"``.
      model: the compiled model it describes, or a built-in name or MJCF/URDF path.
      options: :class:`~crossdyn.experiments.core.checks.options.CheckOptions`: ``dynamics``
        (default ``"rigid-body"``: the truth is ``M(q) qdd + c + g``), ``samples``, ``seed``,
        ``states`` (``(qpos, qvel, qacc)``), ``q_range``, ``qd_range``, ``qdd_range``,
        ``slide_range``, ``atol`` and ``rtol`` (N m, N).

    Returns:
      The term-wise :class:`~crossdyn.experiments.core.checks.report.CheckReport`.

    Raises:
      DerivationError: the function cannot be loaded, raises, exits, or returns
        anything but real torques of the right shape; ModelError: the model
        cannot be loaded; StateError: bad ``states``; ParameterError: unknown
        ``dynamics``.
    """
    from crossdyn.experiments.core.checks.options import SAMPLED, CheckOptions

    o = CheckOptions.of("check_derivation", options, (*SAMPLED, "dynamics", "qd_range", "qdd_range"))
    if isinstance(derivation, str):
        fn, label = load_derivation(derivation), os.path.basename(derivation)
    else:
        fn, label = derivation, getattr(derivation, "__name__", "derivation")
    model = as_model(model)
    return check(fn, model, samples=o.samples, seed=o.seed, atol=o.atol, rtol=o.rtol, states=o.states, label=label,
                 dynamics=o.dynamics, ranges=o.ranges())


def _check_in_worker(check: str, first: tuple, spec: str, model: str, options: dict):
    module, _, name = check.partition(":")
    return getattr(importlib.import_module(module), name)(*first, spec, model, **options)


def check_isolated(spec: str, model: str | os.PathLike, *, check: str = "crossdyn.experiments.core.checks.derivation:"
                   "check_derivation", first: tuple = (), timeout: float | None = None, **options):
    """A check of ``"FILE.py:FUNC"`` in a worker process, where the user's function's death is seen.

    Args:
      spec: ``"FILE.py:FUNC"``.
      model: a built-in model name or an MJCF/URDF path.
      check: the check, ``module:function``, called as ``check(*first, spec, model, **options)``
        (default :func:`check_derivation`; the part checks are ``crossdyn.experiments.core.checks:check``
        with ``first=(quantity,)``).
      first: arguments before the function's spec.
      timeout: seconds the worker may take (importing the file and checking), None for no limit; a check
        still running after it is stopped.
      options: the check's keyword arguments.

    Raises:
      DerivationError: as :func:`check_derivation`, and when the process checking
        it ended without a report (``os._exit``, a signal), naming how, or ran past ``timeout``.
      ModelError, StateError, ParameterError: as :func:`check_derivation`.
    """
    model = str(model_path(model))  # resolved here: the same file whatever the worker's folder
    done = isolation.call(_check_in_worker, check, tuple(first), spec, model, options, timeout=timeout)
    if done.ok:
        return done.value
    if done.status == isolation.TIMED_OUT:
        raise DerivationError(f"{spec}: the check did not finish within {timeout:g} s (--timeout) and was stopped; "
                              "does the function hang (a loop, a lock, input())?")
    if done.status == isolation.RAISED:
        if isinstance(done.error, CrossdynError):
            raise done.error
        raise DerivationError(f"checking {spec} failed: {type(done.error).__name__}: {done.error}")
    raise DerivationError(f"{spec}: the process checking it ended ({done.how}) before giving a report; a "
                          "derivation must return torques, not end the process")
