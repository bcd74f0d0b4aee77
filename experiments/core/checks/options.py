"""The options every check shares (:class:`CheckOptions`), a check's first steps (:func:`begin`) and the
report fields every check fills the same way (:meth:`Check.report`)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import mujoco

from .. import validate
from ..models import as_model
from ..ranges import Ranges
from ..truth import truth_model
from .common import load_function, state_source, warning_lines
from .names import conventions
from .report import CheckReport, Part

__all__ = ["CheckOptions", "Check", "begin", "SAMPLED", "ATOL", "RTOL", "TOLERANCE_REASON"]

# The options of every check that draws states; a check adds "dynamics" and the
# ranges of its function's other arguments.
SAMPLED = ("samples", "seed", "states", "atol", "rtol", "q_range", "slide_range")
# The default tolerance of a check: |error| <= ATOL + RTOL |reference|.  An exact
# derivation differs from mj_inverse by double-precision round-off, ~1e-16 of the
# torque scale times the number of operations (~1e-13 for a 30-dof tree); 1e-9
# leaves four orders of magnitude, and is still far below any modelling error.
ATOL = 1e-9
RTOL = 1e-9
TOLERANCE_REASON = "double-precision round-off with four orders of magnitude to spare"


@dataclass(frozen=True)
class CheckOptions:
    """The options the checks share: how the states are drawn, which truth, when an entry passes.

    Every ``check_*`` takes the user's function ``fn`` (for one state or a batch along
    the first axis, or ``"FILE.py:FUNC"`` / ``"module:FUNC"``), the ``model`` (compiled,
    a built-in name or an MJCF/URDF path) and, as keyword arguments, those of these
    options that apply to it: the ones that draw states take ``samples``, ``seed``,
    ``states``, ``atol``, ``rtol``, ``q_range``, ``slide_range`` and the ranges of their
    function's other arguments; those comparing with dynamics take ``dynamics``; a
    linearization (one operating point) takes ``atol`` and ``rtol``.  Each raises
    DerivationError (the function cannot be loaded, raises, exits or returns the wrong
    shape or a non-finite value), StateError (bad ``states``), ModelError (the model
    cannot be loaded) or ParameterError (an option out of range, an unknown name).

    Attributes:
      samples: how many seeded random states (default 1000), streamed in chunks.
      seed: the random states' seed (default 0).
      states: explicit states instead of random ones, one array per argument of
        the function, rows being states: ``qpos (N, nq)``, ``qvel (N, nv)``,
        ``qacc`` or ``tau (N, nv)``; a tuple of them, or one array for ``qpos`` alone.
      atol, rtol: an entry passes if ``|error| <= atol + rtol |MuJoCo's|`` at every
        state, in the quantity's units; defaults 1e-9 (double-precision round-off
        with four orders of magnitude to spare; a linearization's 1e-6).
      dynamics: the truth: ``"rigid-body"`` (armature, damping, stiffness and gravity
        compensation removed) or ``"as-modeled"`` (kept).  Contacts, limits, equality
        constraints, frictionloss and fluid forces are off in both.
      q_range, qd_range, qdd_range, slide_range: where random states are drawn, each
        ``R`` (-R to R) or ``(low, high)`` (:class:`~crossdyn.experiments.core.ranges.Ranges`:
        joints with a range in the model stay in it; defaults three turns, 30 rad/s,
        100 rad/s^2, 0.5 m); said in the report.
      u_range: a reduced forward-dynamics check's inputs, as the ranges.
    """

    samples: int = 1000
    seed: int = 0
    states: Any = None
    atol: float = ATOL
    rtol: float = RTOL
    dynamics: str = "rigid-body"
    q_range: Any = None
    qd_range: Any = None
    qdd_range: Any = None
    slide_range: Any = None
    u_range: Any = None

    @classmethod
    def of(cls, check: str, given: dict, takes: Iterable[str], **defaults) -> CheckOptions:
        """The options ``check`` (its name, for errors) was called with, ``given``, out of those it ``takes``;
        ``defaults`` are the check's own where they differ.  An option it does not take is a TypeError, as
        Python says it of any function; a tolerance or range out of bounds a ParameterError."""
        takes = set(takes)
        for name in given:
            if name not in takes:
                raise TypeError(f"{check}() got an unexpected keyword argument {name!r}")
        options = cls(**{**defaults, **given})
        atol, rtol = validate.tolerances(options.atol, options.rtol)  # the command line's own limits
        options = dataclasses.replace(options, atol=atol, rtol=rtol)
        options.ranges()  # a bad range is said before the function or the model is loaded
        return options

    def ranges(self) -> Ranges:
        """Where random states are drawn (:meth:`Ranges.of <crossdyn.experiments.core.ranges.Ranges.of>`)."""
        return Ranges.of(q_range=self.q_range, qd_range=self.qd_range, qdd_range=self.qdd_range,
                         slide_range=self.slide_range)


@dataclass(frozen=True)
class Check:
    """A check begun (:func:`begin`); ``dynamic``: it compares with dynamics, so its report says the mode."""

    fn: Callable
    label: str
    model: mujoco.MjModel
    options: CheckOptions
    dynamic: bool

    def truth(self) -> mujoco.MjModel:
        """The model MuJoCo's side is computed on (:func:`~crossdyn.experiments.core.truth.truth_model`)."""
        return truth_model(self.model, self.options.dynamics)

    def source(self, parts: tuple[str, ...]):
        """The states, the ``parts`` the function takes (:func:`~.common.state_source`)."""
        o = self.options
        return state_source(self.model, o.samples, o.seed, o.states, parts, o.ranges())

    def report(self, quantity: str, parts: dict[str, Part], truth: str, attribution: list[str], *, source=None,
               user=None, warned: Iterable[str] = (), **fields) -> CheckReport:
        """The report of ``parts`` (:class:`CheckReport`'s fields), with what every check fills the same way.

        ``source`` is the states compared (None for one operating point), ``user`` the
        :class:`~.common.UserFunction` (for its note), ``warned`` MuJoCo's warnings while the
        truth was computed; ``fields`` replace the usual values.
        """
        sampled = {} if source is None else {
            "samples": source.total, "seed": source.seed, "sampling": list(source.sampling),
            "ranges": dict(source.ranges or {})}
        usual = {"passed": all(p.passed for p in parts.values()), "conventions": conventions(self.model),
                 "notes": [n for n in [user.note() if user is not None else None] if n],
                 "dynamics": self.options.dynamics if self.dynamic else None, "samples": 1, "seed": None,
                 **sampled}
        return CheckReport(quantity=quantity, label=self.label, parts=parts, truth=truth, attribution=attribution,
                           warnings=warning_lines(warned), atol=self.options.atol, rtol=self.options.rtol,
                           **{**usual, **fields})


def begin(check: str, fn, model: mujoco.MjModel | str | os.PathLike, given: dict, takes: Iterable[str],
          **defaults) -> Check:
    """A check's first steps: its options (:meth:`CheckOptions.of`), the user's function and the model
    loaded (``fn`` and ``model`` as :class:`CheckOptions` says; a DerivationError or ModelError if not)."""
    takes = tuple(takes)
    options = CheckOptions.of(check, given, takes, **defaults)
    fn, label = load_function(fn)
    model = as_model(model)
    return Check(fn, label, model, options, dynamic="dynamics" in takes)
