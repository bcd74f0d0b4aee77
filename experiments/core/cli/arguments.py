"""One validation layer for what the command line takes: seeds, counts, times, impulses, paths.

A bad value is refused the same way everywhere: one ``crossdyn ...: error: ...``
line and exit 2, before anything runs.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import validate
from ..errors import ParameterError

__all__ = [
    "validated",
    "seed",
    "count",
    "number",
    "key_value",
    "out_dir",
    "out_file",
    "progress",
]


def validated(what: str, convert: Callable[[str], Any], check: Callable[[Any], Any], refused: Callable[[str], str],
              doc: str | None = None):
    """An argparse type refusing a value as the Python API does: ``check(convert(text))``.

    ``convert``'s ValueError is refused with ``refused(text)``, ``check``'s ParameterError
    with its own sentence; ``what`` names the type in argparse's messages.
    """

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(refused(text)) from None
        try:
            return check(value)
        except ParameterError as exc:  # the Python API refuses it with the same sentence
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__, parse.__doc__ = what, doc
    return parse


seed = validated("seed", int, validate.seed, lambda text: f"{text!r} is not a whole number",
                 "A seed: a whole number from 0 to :data:`~crossdyn.experiments.core.limits.SEED_MAX`.")


def count(low: int = 1, high: int | None = None, what: str = "count"):
    """An argparse type: a whole number in ``[low, high]``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or high is not None and value > high:
            bound = f"from {low:,} to {high:,}" if high is not None else f"at least {low:,}"
            raise argparse.ArgumentTypeError(f"{what} must be {bound}, got {value:,}")
        return value

    parse.__name__ = what  # argparse names the type in its messages
    return parse


def number(low: float | None = None, high: float | None = None, what: str = "value", *,
           low_open: bool = False):
    """An argparse type: a finite float in ``[low, high]`` (``(low, high]`` with ``low_open``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{what} must be a finite number, got {text}")
        too_low = low is not None and (value <= low if low_open else value < low)
        if too_low or high is not None and value > high:
            left = "(" if low_open else "["
            raise argparse.ArgumentTypeError(f"{what} must be in {left}{low:g}, {high:g}], got {value:g}")
        return value

    parse.__name__ = what
    return parse


def key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` as a pair of stripped strings."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def out_dir(text: str) -> Path:
    """An output folder that exists or can be made: not a file, not under a file."""
    if not text:
        raise argparse.ArgumentTypeError("the output folder is empty")
    path = Path(text).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} exists and is not a folder")
    return _not_under_a_file(text, path)


def out_file(text: str) -> Path:
    """A file to write: not a folder, and its folder exists or can be made (not under a file)."""
    if not text:
        raise argparse.ArgumentTypeError("the file name is empty")
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name")
    return _not_under_a_file(text, path)


def _not_under_a_file(text: str, path: Path) -> Path:
    """``path``, unless its nearest existing parent is a file (then nothing can be made under it)."""
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(f"{text}: {parent} is a file, not a folder")
            break
    return path


def progress(off: bool = False) -> bool | Callable[[str], None]:
    """How a long command shows how far it got: a bar on stderr while it prints to a terminal; printing to a
    file or a CI log, one line per finished experiment or batch of runs (never minutes of silence);
    nothing with ``off``."""
    if off:
        return False
    if sys.stdout.isatty():
        return sys.stderr.isatty()
    return lambda line: print(line, flush=True)
