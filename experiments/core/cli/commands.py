"""Subcommands that systems and users' packages register, the way they register experiments.

An entry point in the group :data:`GROUP`, named ``"GROUP NAME"`` (the group is ``check``),
is a function ``configure(parser)`` that adds the command's options and sets ``func``
(``handler(args) -> exit status``); its docstring's first line is the command's help::

    [project.entry-points."crossdyn.commands"]
    "check my-arm" = "my_robot.cli:configure_check"
"""

from __future__ import annotations

import argparse
import importlib.metadata
from collections.abc import Callable

from ..errors import ParameterError

__all__ = ["GROUP", "registered_commands", "configure", "summary"]

GROUP = "crossdyn.commands"


def registered_commands(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    """The registered commands of ``group`` (``check``), by name, crossdyn's own first."""
    entries = [e for e in importlib.metadata.entry_points(group=GROUP) if e.name.split(" ", 1)[0] == group]
    entries.sort(key=lambda e: getattr(e.dist, "name", "") != "crossdyn")  # stable: file order within each
    return {e.name.split(" ", 1)[1]: e for e in entries if " " in e.name}


def _load(entry: importlib.metadata.EntryPoint) -> Callable[[argparse.ArgumentParser], None]:
    try:
        configure = entry.load()
    except Exception as exc:  # a package's broken entry point: say which, on one line
        raise ParameterError(f"command {entry.name!r} ({entry.value}, entry point group {GROUP}) failed to load: "
                             f"{type(exc).__name__}: {exc}") from None
    if not callable(configure):
        raise ParameterError(f"command {entry.name!r}: {entry.value} is not a function configure(parser)")
    return configure


def configure(entry: importlib.metadata.EntryPoint, parser: argparse.ArgumentParser) -> None:
    """Let the registered command add its options to ``parser``."""
    _load(entry)(parser)


def summary(entry: importlib.metadata.EntryPoint) -> str:
    """The command's one-line help: its configure function's docstring's first line."""
    doc = (_load(entry).__doc__ or "").strip()
    return doc.splitlines()[0] if doc else entry.name
