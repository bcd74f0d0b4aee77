"""A user's Python file and function, imported and called so they cannot fake a verdict.

``crossdyn check derivation FILE.py:FUNC`` runs code crossdyn did not write, which
could ``sys.exit(0)`` (a pass to CI, with no report), raise ``KeyboardInterrupt``
(as if Ctrl-C were pressed) or return something that is not torques (complex
numbers whose imaginary part NumPy drops).  Here each becomes a
:class:`~crossdyn.experiments.core.errors.DerivationError` naming the cause (one
line, exit 2).  The user's function gets copies of the states
(:func:`given_copies`), and NumPy's overflow warnings from crossdyn's own
arithmetic on its huge values stay off stderr (:func:`quiet_arithmetic`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import signal
import sys
import sysconfig
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

from ... import analytic, experiments
from .errors import DerivationError

__all__ = ["UserExit", "import_file", "call", "guard", "as_numbers", "where", "ctrl_c_watch", "given_copies",
           "refuse_writes", "quiet_arithmetic", "users_errstate", "LOADED_HERE"]

# Set by the command line once a user's file or module (``--from``) was imported into its
# own process: it then ends with ``os._exit``, so their atexit handlers and threads cannot
# change or delay crossdyn's exit status.
LOADED_HERE = False


class UserExit(DerivationError):
    """The user's code tried to end the run: ``sys.exit`` or a ``KeyboardInterrupt`` it raised.

    Unlike an ordinary exception from the user's function, this is never taken as
    "the function does not accept a batch": it always ends the check.
    """


class _CtrlC:
    """Tells a real Ctrl-C (recorded by a SIGINT handler) from a ``KeyboardInterrupt`` raised by user code.

    Handlers can only be set from the main thread; elsewhere every interrupt is taken as real.
    """

    pressed = False


@contextlib.contextmanager
def _watch_ctrl_c():
    if threading.current_thread() is not threading.main_thread():
        _CtrlC.pressed = True  # cannot tell: treat any interrupt as the user's Ctrl-C
        yield _CtrlC
        return

    def handler(signum, frame):
        _CtrlC.pressed = True
        raise KeyboardInterrupt

    _CtrlC.pressed = False
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield _CtrlC
    finally:
        signal.signal(signal.SIGINT, previous)


def ctrl_c_watch():
    """A context telling a real Ctrl-C from a raised ``KeyboardInterrupt``: ``with ctrl_c_watch() as w: ... w.pressed``.

    ``w.pressed`` is True once SIGINT arrived inside the context (always True off
    the main thread, where no handler can be set).
    """
    return _watch_ctrl_c()


@contextlib.contextmanager
def guard(what: str):
    """Turn ``SystemExit`` and a raised ``KeyboardInterrupt`` inside ``what`` into :class:`UserExit`."""
    with _watch_ctrl_c():
        try:
            yield
        except SystemExit as exc:
            raise UserExit(f"{what} called sys.exit({exc.code!r}); a derivation must return torques, "
                           "not end the run") from None
        except KeyboardInterrupt:
            if _CtrlC.pressed:
                raise
            raise UserExit(f"{what} raised KeyboardInterrupt itself (no Ctrl-C was pressed)") from None


def _crossdyn_folders() -> tuple[str, ...]:
    """The folders of crossdyn's own packages (frames there are not the user's)."""
    return tuple(str(Path(p).resolve()) for pkg in (analytic, experiments) for p in pkg.__path__)


def where(exc: BaseException) -> str:
    """`` (at FILE:LINE)``: the innermost line of the user's own code in ``exc``'s traceback.

    Frames in the Python installation, in installed packages (NumPy ...) and in
    crossdyn itself are skipped, so the line is the one the user wrote.  A
    ``SyntaxError`` names its own file and line.  Empty when no such frame exists.
    """
    if isinstance(exc, SyntaxError) and exc.filename:
        return f" (at {exc.filename}:{exc.lineno})"
    skip = _crossdyn_folders() + tuple(str(Path(p).resolve()) for p in {
        sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        name = frame.filename
        if name.startswith("<") or str(Path(name).resolve()).startswith(skip):
            continue
        return f" (at {name}:{frame.lineno})"
    return ""


def import_file(path: str | Path) -> ModuleType:
    """Import a Python file as ``python FILE.py`` would see it: its folder first on ``sys.path`` (kept there).

    The module is registered under its file's stem unless that name is taken, so
    helper modules that ``import`` it get the same module.

    Raises:
      DerivationError: the file is missing or not Python, or importing it raises
        (any exception, ``sys.exit``, or a ``KeyboardInterrupt`` it raised).
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise DerivationError(f"no derivation file {str(path)!r}")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = path.stem
    existing = sys.modules.get(name)
    if existing is not None and getattr(existing, "__file__", None) != str(path.resolve()):
        name = f"crossdyn_user_{path.stem}_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path.resolve())
    if spec is None or spec.loader is None:
        raise DerivationError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with guard(f"{path} (while being imported)"):
            try:
                spec.loader.exec_module(module)
            except SyntaxError as exc:
                raise DerivationError(f"{path} failed to import: SyntaxError: {exc.msg}{where(exc)}") from None
            except Exception as exc:  # the user's module: show what it raised, and where, on one line
                detail = " ".join(str(exc).split())
                raise DerivationError(f"{path} failed to import: {type(exc).__name__}: {detail}{where(exc)}") from None
    except DerivationError:
        sys.modules.pop(name, None)
        raise
    return module


def as_numbers(value, label: str) -> np.ndarray:
    """A user's return value as a float array, refusing anything that is not real numbers.

    Raises:
      DerivationError: ``None``, text, dicts, iterators, object arrays, booleans or
        complex numbers (NumPy would drop the imaginary part), naming the type found.
    """
    if isinstance(value, (str, bytes, bytearray, dict)) or value is None:
        raise DerivationError(f"{label} returned a {type(value).__name__}; expected an array of torques")
    if not isinstance(value, (np.ndarray, list, tuple, int, float, np.number)):
        raise DerivationError(f"{label} returned a {type(value).__name__}; expected an array of torques "
                              "(a NumPy array, list or tuple of numbers)")
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as exc:  # ragged lists and the like
        raise DerivationError(f"{label} returned something that is not an array of numbers: {exc}") from None
    kind = array.dtype.kind
    if kind == "c":
        imag = float(np.abs(array.imag).max()) if array.size else 0.0
        raise DerivationError(f"{label} returned complex numbers (largest imaginary part {imag:.3g}); "
                              "torques are real")
    if kind not in "iuf":
        found = {"b": "booleans", "U": "strings", "S": "bytes", "O": "Python objects"}.get(kind, array.dtype.name)
        raise DerivationError(f"{label} returned an array of {found}; expected real numbers (torques)")
    return array.astype(float, copy=False)


def call(fn: Callable, *args, label: str = "derivation") -> np.ndarray:
    """Call a user's function and return its result as a float array.

    Raises:
      UserExit: it called ``sys.exit`` or raised ``KeyboardInterrupt`` itself (a
        real Ctrl-C still propagates as ``KeyboardInterrupt``).
      DerivationError: it raised an exception, or returned something that is not
        real numbers (:func:`as_numbers`).
    """
    with guard(label):
        try:
            out = fn(*args)
        except Exception as exc:  # the user's code: any exception is theirs to see, with its line
            detail = " ".join(str(exc).split())
            raise DerivationError(f"{label} raised {type(exc).__name__}: {detail}{where(exc)}") from None
    return as_numbers(out, label)


def given_copies(args: tuple) -> tuple:
    """Fresh copies of the arrays handed to a user's function; see :func:`refuse_writes`."""
    return tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args)


def refuse_writes(label: str, names: tuple[str, ...], originals: tuple, given: tuple) -> None:
    """Raise when a user's function changed an array it was given (``given`` against ``originals``).

    Args:
      label: the function, as named in messages.
      names: each argument's name (``("q", "qd")``); arguments past them are "argument N".
      originals: crossdyn's arrays; given: the copies the function received.

    Raises:
      DerivationError: one line naming the argument, where it changed, and the fix.
    """
    for k, (before, after) in enumerate(zip(originals, given, strict=False)):
        if not isinstance(before, np.ndarray):
            continue
        if after.shape == before.shape and after.tobytes() == before.tobytes():  # the common case, fast
            continue
        if after.shape == before.shape and np.array_equal(before, after, equal_nan=True):
            continue
        name = names[k] if k < len(names) else f"argument {k + 1}"
        where_ = ""
        if after.shape == before.shape:
            index = tuple(int(i) for i in np.argwhere(~((before == after) | (np.isnan(before) & np.isnan(after))))[0])
            entry = index[1] if len(index) == 2 else index[1:]
            place = f"state {index[0]} of the batch, entry {entry}" if before.ndim > 1 else f"entry {index[0]}"
            where_ = f" ({place}: {before[index]:.6g} became {after[index]:.6g})"
        raise DerivationError(f"{label} wrote into its input {name}{where_}; a derivation must not change its "
                              f"arguments (the caller's state would change): work on a copy ({name} = "
                              f"{name}.copy()) or out of place")


# NumPy's floating-point warning settings of the caller of each running check: the user's function runs under them.
_USERS_ERRSTATE: list[dict] = []


def quiet_arithmetic(check: Callable) -> Callable:
    """Decorate a check: NumPy's overflow, invalid-value and divide warnings off inside it.

    A user's ``1e308`` makes crossdyn's ``yours - MuJoCo's`` overflow: the report says
    so and stderr stays clean; the user's function (:func:`users_errstate`) runs
    under the caller's settings.
    """

    @functools.wraps(check)
    def quiet(*args, **kwargs):
        _USERS_ERRSTATE.append(np.geterr())
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                return check(*args, **kwargs)
        finally:
            _USERS_ERRSTATE.pop()

    return quiet


def users_errstate():
    """NumPy's warning settings the user's function runs under: those of the check's caller."""
    return np.errstate(**_USERS_ERRSTATE[-1]) if _USERS_ERRSTATE else contextlib.nullcontext()
