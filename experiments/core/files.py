"""Writing a run's files: output folders, and text and JSON written atomically.

A run's text and JSON files (metrics, summaries, tables, reports) go through
:func:`write_text`, so a reader (another process, a second run writing the same
folder) sees the old file or the new one, never a part of it.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from pathlib import Path

import numpy as np

from .errors import ParameterError

__all__ = ["as_stored", "jsonable", "make_out_dir", "write_text", "write_json"]


def as_stored(metrics: dict) -> dict:
    """``metrics`` as metrics.json stores them (NumPy types as Python's, NaN and inf as text, tuples as
    lists), in memory: what baselines and JUnit compare, without reading the file back."""
    return json.loads(json.dumps(jsonable(metrics)))


def jsonable(value):
    """``value`` with NumPy types as Python's, NaN and inf as text, tuples as lists and paths as text."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return value if math.isfinite(value) else str(value)  # JSON has no NaN/inf
    if isinstance(value, Path):
        return str(value)
    return value


def make_out_dir(path: str | os.PathLike) -> Path:
    """Create an output folder (and its parents).

    Raises:
      ParameterError: it cannot be created or written (the OS's reason, one line).
    """
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParameterError(f"cannot create output folder {path}: {exc.strerror or exc}") from None
    if not os.access(path, os.W_OK):
        raise ParameterError(f"cannot write to output folder {path}")
    return path


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a reader sees the old file or the new one, never a part.

    The temporary file's name is unique to this write, so any number of processes
    may write the same file at once; ``open(..., "x")`` gives it the usual
    permissions.  What UTF-8 cannot hold (a lone surrogate from user code) is
    written as its ``\\udXXX`` escape.

    Raises:
      OSError: naming ``path`` (a full disk included); ``path`` is then as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with open(tmp, "x", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename in (None, str(tmp)) and exc.filename2 is None:
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        raise


def write_json(path: str | os.PathLike, obj) -> None:
    """Write ``obj`` as indented JSON atomically (numpy types converted; see :func:`write_text`)."""
    write_text(path, json.dumps(jsonable(obj), indent=2) + "\n")
