"""The registry of experiments that ``crossdyn run`` and ``crossdyn list`` know.

An experiment module registers a function with :func:`experiment`::

    @experiment("two-link-lagrange", summary="...", expected="agree to 1e-10 N m")
    def lagrange(ctx: Context) -> dict:
        ...
        return {"passed": ..., "measured": "max |error| 1.3e-15 N m", ...}

The function receives a :class:`~experiments.core.runner.Context` and returns its
metrics, ``"passed"`` and ``"measured"`` (one short line) required.  Modules are
imported lazily by :func:`experiments`, so the CLI starts fast and a broken module
names itself.  Users register theirs the same way, in a file or module given to
``--from`` or in a package declaring the entry-point group :data:`ENTRY_POINT_GROUP`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.metadata
import importlib.util
import re
import string
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .baseline import Tolerance
from .errors import CrossdynError, ParameterError
from .safe_text import one_line
from .user_code import where as line_of

__all__ = ["Param", "Verdict", "Gains", "Experiment", "experiment", "batched", "experiments", "get", "load_sources",
           "loadable", "ENTRY_POINT_GROUP", "TUNE_KEYS"]

# Installed packages register experiments by naming a module (or module:attr) in this group.
ENTRY_POINT_GROUP = "crossdyn.experiments"
# What an experiment's declared tune may say (tune()'s arguments of the same names).
TUNE_KEYS = ("vary", "search", "fixed", "minimize", "constraints", "ratios_to")


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
                value: float | int | bool | str = text.lower() in ("true", "1", "yes")
            else:
                value = kind(text)
        except ValueError:
            raise ParameterError(f"{key}={text!r}: expected a {kind.__name__} ({self.help})") from None
        # value is kind(text), so isinstance always holds here; it narrows value for the type checker.
        if kind in (int, float) and isinstance(value, (int, float)):
            if value != value:  # NaN
                raise ParameterError(f"{key}={text!r}: not a number")
            if self.low is not None and value < self.low or self.high is not None and value > self.high:
                raise ParameterError(f"{key}={value}: out of range [{self.low}, {self.high}] ({self.help})")
        if self.check is not None:
            self.check(value)
        return value


@dataclass(frozen=True)
class Verdict:
    """An experiment's judgement: ``passed`` (the expected outcome was met) and ``measured`` (one short line)."""

    passed: bool
    measured: str

    def as_metrics(self) -> dict:
        """``{"passed", "measured"}``, the two keys every experiment's metrics carry."""
        return {"passed": bool(self.passed), "measured": self.measured}


@dataclass(frozen=True)
class Gains:
    """What ``crossdyn gains --experiment NAME`` exports of an experiment's design.

    Attributes:
      design: ``design(params) -> GainSchedule`` (:class:`~crossdyn.controllers.lqr.GainSchedule`), given
        the experiment's parameter values (``--set`` honoured).
      name: the C identifier the header's names start with (the firmware's), unless ``--name`` says otherwise.
    """

    design: Callable[[dict], Any]
    name: str


@dataclass(frozen=True)
class Experiment:
    """A registered experiment.

    Attributes:
      name: the CLI name, e.g. ``"two-link-lagrange"``.
      summary: what it does, one line.
      expected: the expected outcome, one line; may name parameters as ``{key}``
        or ``{key:g}`` (see :meth:`expected_for`).
      run: ``run(ctx) -> metrics``.
      params: parameters settable with ``--set``.
      tolerances: baseline tolerance per metric name (dotted for nested metrics).
      batch: ``batch(contexts) -> [metrics or exception, ...]``, each what ``run``
        returns (or raises) for that context alone (:func:`batched`).
      gains: the gain schedule ``crossdyn gains`` exports from it (:class:`Gains`), or None.
      default_tune: the tune ``crossdyn tune NAME`` runs when given nothing to vary: some of
        :data:`TUNE_KEYS`, as :func:`~crossdyn.experiments.core.sweep.experiment.tune` takes them.
    """

    name: str
    summary: str
    expected: str
    run: Callable
    params: dict[str, Param] = field(default_factory=dict)
    tolerances: dict[str, Tolerance] = field(default_factory=dict)
    batch: Callable | None = None
    gains: Gains | None = None
    default_tune: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        _check_name(self.name)

    def expected_for(self, values: dict) -> str:
        """The expected outcome with the parameters' values filled in (``--set`` honoured)."""
        return self.expected.format_map(values)

    def declared(self, attribute: str) -> str | None:
        """A module-level declaration of the system that registered this experiment, or None.

        Read from the module defining :attr:`run`, else from the nearest package
        above it that declares ``attribute``.  crossdyn's systems declare
        ``GALLERY_HEADING`` (the gallery section their experiments appear under) and
        ``DERIVATION_PAGE`` (the docs/derivations page of what they check).
        """
        module = getattr(self.run, "__module__", "") or ""
        while module:
            value = getattr(sys.modules.get(module), attribute, None)
            if isinstance(value, str):
                return value
            module = module.rpartition(".")[0]
        return None

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

# An experiment's name is a folder name under --out and a file name under --save-baseline:
# letters, digits and - _ . + only, not starting with a dot or dash, so it can never
# climb out of its folder (../x), be absolute (/tmp/x), hide, or hold a NUL.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}")


def _check_name(name) -> None:
    """Refuse a name that is not safe as a folder and file name (see :data:`NAME_PATTERN`)."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        shown = one_line(repr(name), 80)
        raise ParameterError(f"experiment name {shown} is not allowed: use 1 to 100 letters, digits, '-', '_', "
                             "'.' or '+', starting with a letter or digit (it names a folder and a file)")


def _check_expected(name: str, expected: str, params: dict[str, Param]) -> None:
    """Every ``{field}`` of an expected text is a parameter, and the defaults format."""
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(expected) if f is not None}
        unknown = sorted(f for f in fields if f not in params)
        if unknown:
            raise ParameterError(f"experiment {name!r}: expected text names {{{unknown[0]}}}, which is not one of "
                                 f"its parameters (write {{{{ }}}} for a literal brace)")
        expected.format_map({k: p.default for k, p in params.items()})
    except (ValueError, IndexError) as exc:
        raise ParameterError(f"experiment {name!r}: expected text {expected!r} does not format: {exc}") from None


def experiment(name: str, *, summary: str, expected: str, params: dict[str, Param] | None = None,
               tolerances: dict[str, float | Tolerance] | None = None, gains: Gains | None = None,
               default_tune: dict[str, Any] | None = None):
    """Decorator registering ``run(ctx) -> metrics`` as experiment ``name``.

    Args:
      name: the CLI name; unique across built-in and users' experiments.
      summary: what it does, one line.
      expected: the expected outcome, one line; ``{key}`` fields are formatted
        with the parameter values of the run.
      params: parameters settable with ``--set``.
      tolerances: baseline tolerances by metric name: a number is relative
        (``{"settle_s": 0.02}``: +-2 %), or a :class:`Tolerance`; others use
        :data:`~crossdyn.experiments.core.baseline.DEFAULT_TOLERANCE`.
      gains: the gain schedule ``crossdyn gains`` exports (:class:`Gains`).
      default_tune: the tune ``crossdyn tune NAME`` runs when given nothing to vary, e.g.
        ``{"vary": ["kp=1:100:log"], "minimize": "settle_s", "constraints": ["effort<=defaults"]}``
        (keys :data:`TUNE_KEYS`; ``vary`` and ``constraints`` lists of text, ``fixed`` as ``--set``).

    Raises:
      ParameterError: a name that is not a safe folder name or is taken, an
        expected text naming an unknown parameter, a negative tolerance, or a
        declared tune with a key it cannot have.
    """
    _check_name(name)
    params = dict(params or {})
    _check_expected(name, expected, params)
    declared_tune = _check_tune(name, default_tune or {})
    declared = {key: Tolerance.of(key, value) for key, value in (tolerances or {}).items()}

    def register(run: Callable) -> Callable:
        if name in _REGISTRY:
            first = _REGISTRY[name].run
            if (first.__module__, first.__qualname__) != (run.__module__, run.__qualname__):
                raise ParameterError(f"experiment {name!r} registered twice: by {first.__module__}."
                                     f"{first.__qualname__} and by {run.__module__}.{run.__qualname__}")
        _REGISTRY[name] = Experiment(name, summary, expected, run, params, declared, gains=gains,
                                     default_tune=declared_tune)
        return run

    return register


def _check_tune(name: str, tune: dict[str, Any]) -> dict[str, Any]:
    """A declared tune's keys and shapes (its values are checked when it runs, as a command line's are)."""
    unknown = sorted(set(tune) - set(TUNE_KEYS))
    if unknown:
        raise ParameterError(f"experiment {name!r}: default_tune has no key {unknown[0]!r} (its keys: "
                             f"{', '.join(TUNE_KEYS)})")
    for key in ("vary", "constraints"):
        if not all(isinstance(item, str) for item in tune.get(key, ())) or isinstance(tune.get(key), str):
            raise ParameterError(f"experiment {name!r}: default_tune's {key} is a list of texts, "
                                 f"e.g. ['kp=1:100:log']")
    return {key: (list(value) if key in ("vary", "constraints") else value) for key, value in tune.items()}


def batched(name: str):
    """Decorator registering ``batch(contexts) -> results`` as the batched form of experiment ``name``.

    ``results[i]`` must be exactly what ``run(contexts[i])`` returns, or the
    exception it raises, so a sweep's rows are the same whichever way it ran.

    Raises:
      ParameterError: no experiment ``name`` is registered (register it first).
    """

    def register(batch: Callable) -> Callable:
        if name not in _REGISTRY:
            raise ParameterError(f"batched({name!r}): no experiment {name!r} is registered; register it first")
        _REGISTRY[name] = dataclasses.replace(_REGISTRY[name], batch=batch)
        return batch

    return register


_entry_points_loaded = False


def _load_entry_points() -> None:
    """Import every module that installed packages list under :data:`ENTRY_POINT_GROUP` (once)."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    entries = list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
    entries.sort(key=lambda e: getattr(e.dist, "name", "") != "crossdyn")  # crossdyn's own systems first
    for entry in entries:
        where = f"entry point {entry.name!r} = {entry.value!r} (group {ENTRY_POINT_GROUP})"
        _import_user_code(where, entry.load)
    _entry_points_loaded = True


def experiments(sources: tuple[str, ...] | list[str] = ()) -> dict[str, Experiment]:
    """All registered experiments, by name, in run order (crossdyn's, installed packages', then ``sources``')."""
    _load_entry_points()
    load_sources(sources)
    return dict(_REGISTRY)


# The front door's name for :func:`experiments` (``crossdyn.registered()``): there,
# ``crossdyn.experiments`` is the MuJoCo layer's package.
registered = experiments


def _import_user_code(where: str, load: Callable):
    """Run ``load()`` (an import of a user's code); any failure is a one-line :class:`CrossdynError`."""
    try:
        return load()
    except CrossdynError as exc:  # e.g. a duplicate name or a bad expected text
        raise type(exc)(f"{where}: {exc}") from None
    except SyntaxError as exc:
        raise ParameterError(f"{where}: syntax error on line {exc.lineno}: {exc.msg}") from None
    except SystemExit as exc:
        raise ParameterError(f"{where}: called exit({exc.code!r}) while being imported") from None
    except Exception as exc:

        raise ParameterError(f"{where}: failed to import: {type(exc).__name__}: {exc}{line_of(exc)}") from None


_LOADED_FILES: dict[Path, str] = {}  # resolved path -> module name, so a file given twice loads once


def _load_file(path: Path) -> None:
    resolved = path.resolve()
    if resolved in _LOADED_FILES:
        return
    if not resolved.is_file():
        raise ParameterError(f"--from {path}: no such file (give a FILE.py or an importable module name)")
    # A name of its own per file, so two users' 'experiments.py' do not collide in sys.modules.
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
    module_name = f"crossdyn_user_{resolved.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:  # no import machinery for the file's suffix (e.g. experiments.txt)
        raise ParameterError(f"--from {path}: not a Python file (give a FILE.py or an importable module name)")
    loader = spec.loader
    # As `python FILE.py` would: the file's folder is importable, so it can import its neighbours.
    if str(resolved.parent) not in sys.path:
        sys.path.insert(0, str(resolved.parent))
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and pickling look the module up here

    def load():
        try:
            loader.exec_module(module)
        except BaseException:
            del sys.modules[module_name]
            raise

    _import_user_code(f"--from {path}", load)
    _LOADED_FILES[resolved] = module_name


def load_sources(sources: tuple[str, ...] | list[str]) -> None:
    """Register the experiments of users' files and modules (``crossdyn run --from``).

    Args:
      sources: each a path to a ``.py`` file, or a module name importable from
        the current environment (``mypkg.experiments``).

    Raises:
      ParameterError: a file or module is missing, has a syntax error, raises or
        exits while being imported, or registers a name already taken.
    """
    for source in sources:
        if source.endswith(".py") or "/" in source or "\\" in source:
            _load_file(Path(source).expanduser())
            continue
        _import_user_code(f"--from {source}", lambda name=source: _import_module(name))


def unloaded(sources: tuple[str, ...] | list[str]) -> list[str]:
    """Those of users' ``sources`` (as :func:`load_sources` takes them) this process has not imported yet."""
    def loaded(source: str) -> bool:
        if source.endswith(".py") or "/" in source or "\\" in source:
            return Path(source).expanduser().resolve() in _LOADED_FILES
        return source in sys.modules

    return [source for source in sources if not loaded(source)]


def _import_module(name: str) -> None:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):  # the module itself, not its imports
            raise ParameterError("no such file or importable module") from None
        raise


def loadable(exp: Experiment) -> bool:
    """Whether a fresh process can load ``exp`` by name: not one made on the fly or in ``__main__``."""
    module = getattr(getattr(exp.run, "__wrapped__", exp.run), "__module__", None)
    return _REGISTRY.get(exp.name) is exp and module not in (None, "__main__", "__mp_main__")


def get(name: str) -> Experiment:
    """One experiment by name; ParameterError (listing the known ones) if there is none."""
    registry = experiments()
    if name not in registry:
        raise ParameterError(f"no experiment {name!r}; known: {', '.join(registry)}")
    return registry[name]
