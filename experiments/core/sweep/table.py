"""A sweep's table: one CSV row per run, appended and flushed as each finishes (an interrupted sweep
keeps them), read back to resume, and rewritten in sample order at the end (so it depends on the
sweep's arguments and seed only).  Wall times go to ``timings.csv``."""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import math
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

from ..errors import ParameterError
from ..files import make_out_dir, write_text

__all__ = ["exists", "read", "read_done", "write", "appending", "locked", "cell", "TEXTS"]

# A tune table's columns of text and the values each takes (None: any); every other column holds numbers.
TEXTS: dict[str, tuple[str, ...] | None] = {
    "kind": ("default", "lhs", "grid", "optuna"), "short": ("true", "false"), "passed": ("true", "false"),
    "outcome": ("pass", "fail", "error", "crashed", "timed out"), "measured": None, "detail": None}


def cell(row: dict, key: str) -> float:
    """A table cell as a number: NaN when it is empty, missing or text."""
    try:
        return float(row.get(key, ""))
    except ValueError:
        return math.nan


@contextlib.contextmanager
def locked(folder: Path):
    """``folder`` (created) held for one sweep: a second one into it meanwhile is refused (a ParameterError).

    The lock is ``flock`` on the folder itself: no file left behind, and let go when the
    process dies.  A folder made here and still empty when the sweep raises is removed.
    """
    folder = Path(folder)
    created = [p for p in (folder, *folder.parents) if not p.exists()]  # leaf first
    folder = make_out_dir(folder)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ParameterError(f"{folder} is in use by another tune still writing there; wait for it to end or "
                                 "give another --out") from None
        yield folder
    except BaseException:
        for made in created:  # refused before writing anything (a scheduler out of reach): leave no folder
            with contextlib.suppress(OSError):
                made.rmdir()  # only an empty one
        raise
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)  # for worker processes forked meanwhile too: they share the lock
        os.close(fd)


def exists(path: Path) -> bool:
    """Whether an earlier run left the table ``path`` to resume from (a ParameterError if it is no file)."""
    if path.exists() and not path.is_file():
        raise ParameterError(f"{path} is not a file (a folder?): the sweep writes its table there; "
                             "use another --out or move it")
    return path.exists()


def read(path: Path, columns: Sequence[str], *,
         texts: Mapping[str, Collection[str] | None] | None = None) -> list[dict[str, str]]:
    """The rows an earlier sweep or search left in ``path`` (none if it is missing or empty).

    A last line without its newline was cut mid-append and is dropped, even when it looks
    like a row.  ``columns`` are the key columns the header starts with;
    ``texts``, when given, the text columns and the values each may take (None: any).

    Raises:
      ParameterError: ``path`` is not a file or not a table of this version, or a row is
        damaged (the file and line named).
    """
    if not exists(path):
        return []
    with path.open(newline="") as f:
        content = f.read()
    if not content.endswith("\n"):  # the last line was cut mid-append
        content = content[: content.rfind("\n") + 1]
    reader = csv.reader(io.StringIO(content))
    header = next(reader, None)
    if header is None:
        return []
    if tuple(header[: len(columns)]) != tuple(columns):
        raise ParameterError(f"{path} is not a sweep table of this version; use another --out or delete it")
    rows = []
    for r in reader:
        if len(r) != len(header):
            continue
        row = dict(zip(header, r, strict=True))
        if texts is not None:
            _numbers_only(path, reader.line_num, row, texts)
        rows.append(row)
    return rows


def _numbers_only(path: Path, line: int, row: dict[str, str], texts: Mapping[str, Collection[str] | None]) -> None:
    """Refuse a row with a non-number in a column of numbers, or a value a text column never takes."""
    for column, value in row.items():
        if value == "":
            continue
        if column in texts:
            allowed = texts[column]
            if allowed is None or value in allowed:
                continue
            problem = f"is none of {', '.join(sorted(allowed))}"
        else:
            try:
                float(value)
                continue
            except ValueError:
                problem = "is not a number"
        raise ParameterError(f"{path} line {line} is damaged: {column}={value[:40]!r} {problem}; delete that line "
                             "(its run is made again) or use another --out")


def read_done(path: Path, keys: dict[int, dict[str, str]], columns: Sequence[str], *,
              done: str = "outcome", only: bool = False,
              texts: Mapping[str, Collection[str] | None] | None = None) -> dict[int, dict]:
    """Finished rows of ``path`` that belong to the planned runs ``keys`` (index -> key columns), by index;
    with ``only``, rows of other indices are skipped instead of refused (a ParameterError)."""
    rows = read(path, columns, texts=texts)
    found: dict[int, dict] = {}
    for row in rows:
        try:
            if only and row["sample"].isdigit() and int(row["sample"]) not in keys:
                continue
            key = keys[int(row["sample"])]
        except (KeyError, ValueError):
            raise ParameterError(f"{path} holds sample {row['sample']!r}, which this sweep does not have: "
                                 "it was made with other arguments; use another --out or delete it") from None
        if any(row.get(k) != v for k, v in key.items()):
            diff = next(k for k, v in key.items() if row.get(k) != v)
            raise ParameterError(f"{path} sample {row['sample']} has {diff}={row.get(diff)} but this sweep has "
                                 f"{diff}={key[diff]}: it was made with other arguments; use another --out or "
                                 "delete it")
        if row.get(done):
            found.setdefault(int(row["sample"]), row)
    return found


def write(path: Path, rows: list[dict], columns: Sequence[str]) -> None:
    """Write the table atomically (:func:`~crossdyn.experiments.core.files.write_text`)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, list(columns), lineterminator="\n", restval="")
    writer.writeheader()
    writer.writerows(rows)
    write_text(path, buffer.getvalue())


def columns_of(rows: list[dict], first: Sequence[str]) -> list[str]:
    """``first``, then every other key of ``rows`` in order of first appearance."""
    return list(dict.fromkeys([*first, *(key for row in rows for key in row)]))


@contextlib.contextmanager
def appending(path: Path, rows: list[dict], columns: Sequence[str]):
    """A sweep's tables open for appending: yields ``record(row, seconds, where)``.

    ``path`` is first rewritten with the finished ``rows``; ``record`` appends one row
    to it and to ``timings.csv`` and flushes both.  A row with keys beyond the header
    (``columns``, then the rows' other keys) widens it.
    """
    make_out_dir(path.parent)
    columns = columns_of(rows, columns)
    written = list(rows)
    write(path, written, columns)
    timings = path.parent / "timings.csv"
    new_timings = not timings.exists()
    with contextlib.ExitStack() as stack:
        ft = stack.enter_context(timings.open("a", newline=""))
        timer = csv.writer(ft, lineterminator="\n")
        if new_timings:
            timer.writerow(("sample", "wall_s", "where"))
        state = {"file": stack.enter_context(path.open("a", newline=""))}

        def record(row: dict, seconds: float, where: str) -> None:
            if any(key not in columns for key in row):
                state["file"].close()
                columns[:] = columns_of([row], columns)
                write(path, written, columns)
                state["file"] = stack.enter_context(path.open("a", newline=""))
            csv.DictWriter(state["file"], columns, lineterminator="\n", restval="").writerow(row)
            state["file"].flush()
            written.append(row)
            timer.writerow((row["sample"], f"{seconds:.3f}", where))
            ft.flush()

        yield record
