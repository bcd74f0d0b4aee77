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

import mujoco

from .. import isolation
from ..errors import CrossdynError, DerivationError
from ..models import as_model, model_path
from .common import load_derivation
from .inverse_dynamics import check
from .options import SAMPLED, CheckOptions
from .report import CheckReport

__all__ = ["check_derivation", "check_isolated"]


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
