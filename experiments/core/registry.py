"""The registry of experiments that ``crossdyn run`` and ``crossdyn list`` know.

An experiment module registers a function with :func:`experiment`::

    @experiment("two-link-lagrange", summary="...", expected="agree to 1e-10 N m")
    def lagrange(ctx: Context) -> dict:
        ...
        return {"passed": ..., "measured": "max |error| 1.3e-15 N m", ...}

The function receives a :class:`~experiments.core.results.Context` (output folder,
short mode, seed, parameters) and returns its metrics; ``"passed"`` (the expected
outcome was met) and ``"measured"`` (the headline figure, one short line) are
required.  Experiment modules are imported lazily by :func:`experiments`, so the
CLI starts fast and a broken module names itself.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

from crossdyn.experiments.core.errors import ParameterError

__all__ = ["Param", "Verdict", "Experiment", "experiment", "experiments", "get", "MODULES"]

# Modules that define experiments, in the order ``crossdyn run`` runs them.
MODULES: tuple[str, ...] = (
    "crossdyn.experiments.two_link",
    "crossdyn.experiments.rnea",
    "crossdyn.experiments.unit_vector",
    "crossdyn.experiments.lagrange",
    "crossdyn.experiments.rigid_box",
    "crossdyn.experiments.inertia",
    "crossdyn.experiments.biped.checks",
    "crossdyn.experiments.biped.control",
)


@dataclass(frozen=True)
class Param:
    """A parameter an experiment accepts through ``--set key=value``.

    Attributes:
      default: the value used when not set (its type is the parameter's type).
      help: one line, with units.
      low, high: the accepted closed range, or None for unbounded.
      check: ``check(value)`` raising a :class:`CrossdynError` for a value the
        type and range cannot judge (e.g. a model file that must exist), or None.
    """

    default: float | int | bool | str
    help: str
    low: float | None = None
    high: float | None = None
    check: Callable[[Any], None] | None = field(default=None, compare=False)

    def parse(self, key: str, text: str):
        kind = type(self.default)
        try:
            if kind is bool:
                if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(text)
                value = text.lower() in ("true", "1", "yes")
            else:
                value = kind(text)
        except ValueError:
            raise ParameterError(f"{key}={text!r}: expected a {kind.__name__} ({self.help})") from None
        if kind in (int, float):
            if value != value:  # NaN
                raise ParameterError(f"{key}={text!r}: not a number")
            if self.low is not None and value < self.low or self.high is not None and value > self.high:
                raise ParameterError(f"{key}={value}: out of range [{self.low}, {self.high}] ({self.help})")
        if self.check is not None:
            self.check(value)
        return value


@dataclass(frozen=True)
class Verdict:
    """An experiment's judgement: did the outcome meet the expectation, and the headline figure.

    Attributes:
      passed: the expected outcome was met.
      measured: the headline figure, one short line (the summary table's column).
    """

    passed: bool
    measured: str

    def as_metrics(self) -> dict:
        """``{"passed", "measured"}``, the two keys every experiment's metrics carry."""
        return {"passed": bool(self.passed), "measured": self.measured}


@dataclass(frozen=True)
class Experiment:
    """A registered experiment.

    Attributes:
      name: the CLI name, e.g. ``"two-link-lagrange"``.
      summary: what it does, one line.
      expected: the expected outcome, one line (shown in the summary table).
      run: ``run(ctx) -> metrics``.
      params: parameters settable with ``--set``.
    """

    name: str
    summary: str
    expected: str
    run: Callable
    params: dict[str, Param] = field(default_factory=dict)

    def resolve_params(self, overrides: dict[str, str]) -> dict:
        """Defaults updated with ``--set`` overrides (strings), validated."""
        values = {key: p.default for key, p in self.params.items()}
        for key, text in overrides.items():
            if key not in self.params:
                known = ", ".join(sorted(self.params)) or "none"
                raise ParameterError(f"experiment {self.name!r} has no parameter {key!r} (known: {known})")
            values[key] = self.params[key].parse(key, text)
        return values


_REGISTRY: dict[str, Experiment] = {}


def experiment(name: str, *, summary: str, expected: str, params: dict[str, Param] | None = None):
    """Decorator registering ``run(ctx) -> metrics`` as experiment ``name``."""

    def register(run: Callable) -> Callable:
        if name in _REGISTRY and _REGISTRY[name].run.__qualname__ != run.__qualname__:
            raise RuntimeError(f"experiment {name!r} registered twice")
        _REGISTRY[name] = Experiment(name, summary, expected, run, dict(params or {}))
        return run

    return register


def experiments() -> dict[str, Experiment]:
    """All registered experiments, by name, in run order."""
    for module in MODULES:
        importlib.import_module(module)
    return dict(_REGISTRY)


def get(name: str) -> Experiment:
    """One experiment by name.

    Raises:
      ParameterError: no such experiment (the message lists the known ones).
    """
    registry = experiments()
    if name not in registry:
        raise ParameterError(f"no experiment {name!r}; known: {', '.join(registry)}")
    return registry[name]
