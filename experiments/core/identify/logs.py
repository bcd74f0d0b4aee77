"""Robot logs: the commands sent and the readings taken, read against a model's own names.

A log is a table with a header row, as CSV (``.csv``) or as a NumPy ``.npz`` archive
whose arrays carry the same names (one 1-D array per column)::

    time,ctrl:shoulder,ctrl:elbow,qpos:shoulder,qpos:elbow,sensor:imu_gyro:0,...

- ``time``: seconds, strictly increasing;
- ``ctrl:<actuator>``: the command sent to the actuator (its ``ctrl``);
- ``qpos:<joint>``, ``qvel:<joint>``: hinge and slide joints; ``qpos:<joint>:<k>`` and
  ``qvel:<joint>:<k>`` for the components of free (7 and 6) and ball (4 and 3) joints;
- ``sensor:<sensor>``, or ``sensor:<sensor>:<k>`` for a sensor of several values
  (an IMU's gyro, an accelerometer): the model's own sensors.

SI units and radians throughout.  Every way a log can be unusable is refused with
one :class:`LogError` line naming the file, the row or column, and the fix, before
anything is computed.
"""

from __future__ import annotations

import difflib
import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

from ..errors import CrossdynError
from ..limits import LOG_ROWS_MIN

__all__ = ["LogError", "Log", "load_log", "write_log", "refuse_repeats", "KINDS"]

# Column kinds, in the order a written log lists them.
KINDS = ("ctrl", "qpos", "qvel", "sensor")
_OBJ = {"ctrl": mujoco.mjtObj.mjOBJ_ACTUATOR, "qpos": mujoco.mjtObj.mjOBJ_JOINT,
        "qvel": mujoco.mjtObj.mjOBJ_JOINT, "sensor": mujoco.mjtObj.mjOBJ_SENSOR}
_WORD = {"ctrl": "actuator", "qpos": "joint", "qvel": "joint", "sensor": "sensor"}


class LogError(CrossdynError):
    """A log file is missing, unreadable, or does not fit the model."""


@dataclass
class Log:
    """A log read against a model.

    Attributes:
      path: the file.
      time: sample times, (N,), s, strictly increasing.
      columns: every column but ``time`` by its header name, each (N,).
      signals: the logged quantities grouped by name (``qpos:elbow``, ``sensor:imu_gyro``):
        ``(kind, name, values (N, width), model indices)``; the indices address
        ``qpos``, ``qvel`` or ``sensordata`` (``ctrl``: the actuator id).
    """

    path: Path
    time: np.ndarray
    columns: dict[str, np.ndarray]
    signals: dict[str, tuple[str, str, np.ndarray, np.ndarray]] = field(default_factory=dict)

    @property
    def duration(self) -> float:
        """Seconds from the first sample to the last."""
        return float(self.time[-1] - self.time[0])

    def ctrl(self, model: mujoco.MjModel) -> np.ndarray:
        """The commands, (N, nu), in the model's actuator order (absent actuators: zero)."""
        out = np.zeros((self.time.size, model.nu))
        for kind, _, values, ids in self.signals.values():
            if kind == "ctrl":
                out[:, ids] = values
        return out

    def observed(self) -> list[str]:
        """The signals a model's prediction is compared with: every ``qpos``, ``qvel`` and ``sensor`` one."""
        return [key for key, (kind, *_rest) in self.signals.items() if kind != "ctrl"]


def _closest(name: str, names: list[str]) -> str:
    match = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _names(model: mujoco.MjModel, kind: str) -> list[str]:
    count = {"ctrl": model.nu, "qpos": model.njnt, "qvel": model.njnt, "sensor": model.nsensor}[kind]
    return [mujoco.mj_id2name(model, _OBJ[kind], i) or "" for i in range(count)]


def _width(model: mujoco.MjModel, kind: str, index: int) -> tuple[int, int]:
    """(width, first address) of a joint's qpos/qvel, a sensor's values, or an actuator's ctrl."""
    if kind == "ctrl":
        return 1, index
    if kind == "sensor":
        return int(model.sensor_dim[index]), int(model.sensor_adr[index])
    jtype = int(model.jnt_type[index])  # a plain int: MuJoCo's enums do not hash like NumPy's integers
    nq = {int(mujoco.mjtJoint.mjJNT_FREE): 7, int(mujoco.mjtJoint.mjJNT_BALL): 4}.get(jtype, 1)
    if kind == "qpos":
        return nq, int(model.jnt_qposadr[index])
    return {7: 6, 4: 3}.get(nq, 1), int(model.jnt_dofadr[index])


def _read_table(path: Path) -> tuple[list[str], np.ndarray]:
    """Header and an (N, C) float table from a CSV or .npz file; one-line errors for every defect."""
    if not path.is_file():
        raise LogError(f"no log file {str(path)!r}")
    if path.suffix == ".npz":
        try:
            loaded = np.load(path, allow_pickle=False)
            if not isinstance(loaded, np.lib.npyio.NpzFile):  # a .npy renamed: one array, no names
                raise ValueError("it holds one array, not an archive of named columns (a .npy file?)")
            with loaded as archive:
                header = list(archive.files)
                arrays = [np.asarray(archive[name]) for name in header]
        except Exception as exc:  # noqa: BLE001 - any damage (a cut zip, a bad member, a pickle) is the file's
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise LogError(f"{path}: not a readable .npz log ({detail})") from None
        for name, array in zip(header, arrays, strict=True):
            if array.ndim != 1:
                raise LogError(f"{path}: array {name!r} has shape {array.shape}; each column is a 1-D array")
            if array.dtype.kind not in "iuf":
                raise LogError(f"{path}: array {name!r} holds {array.dtype.name} values, not numbers")
        lengths = {a.size for a in arrays}
        if len(lengths) > 1:
            sizes = ", ".join(f"{n} {a.size}" for n, a in zip(header, arrays, strict=True))
            raise LogError(f"{path}: the arrays have different lengths ({sizes}); every column needs one per sample")
        table = np.column_stack(arrays).astype(float) if arrays else np.zeros((0, 0))
        return header, table
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise LogError(f"{path}: cannot read the log ({' '.join(str(exc).split())})") from None
    numbered = [(n, line) for n, line in enumerate(lines, start=1)
                if line.strip() and not line.lstrip().startswith("#")]
    if not numbered:
        raise LogError(f"{path} is empty; a log is a header row (time, ctrl:..., qpos:...) and one row per sample")
    header = [cell.strip() for cell in numbered[0][1].split(",")]
    rows = np.empty((len(numbered) - 1, len(header)))
    for r, (number, line) in enumerate(numbered[1:]):
        cells = line.split(",")
        if len(cells) != len(header):
            raise LogError(f"{path}: line {number} has {len(cells)} cells, the header has {len(header)}")
        for c, cell in enumerate(cells):
            try:
                rows[r, c] = float(cell)
            except ValueError:
                raise LogError(f"{path}: line {number}, column {header[c]!r}: {cell.strip()!r} is not a number"
                               ) from None
    return header, rows


def load_log(path: str | Path, model: mujoco.MjModel, model_name: str = "the model", readings: bool = True) -> Log:
    """Read a log and check it against ``model``.

    Args:
      path: a ``.csv`` or ``.npz`` log.
      model: the compiled model whose names the columns use.
      model_name: how messages name the model (its file name).
      readings: whether it must hold readings (a commands file holds commands only).

    Returns:
      The :class:`Log`.

    Raises:
      LogError: missing or unreadable file (any damage to a ``.npz``); no ``time`` column;
        time not strictly increasing (its row) or in milliseconds or microseconds (its
        step); NaN or infinity (row and column); a name the model
        does not have (with the closest one); a component index or a missing
        component of a multi-valued joint or sensor; fewer than :data:`~crossdyn.experiments.core.limits.LOG_ROWS_MIN`
        rows; no command and no reading at all.
    """
    path = Path(path)
    header, table = _read_table(path)
    csv = path.suffix != ".npz"

    def row_name(i: int) -> str:
        return f"row {i + 1}" if csv else f"sample {i}"

    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise LogError(f"{path}: column {name!r} appears twice")
        seen.add(name)
    if "time" not in header:
        raise LogError(f"{path}: no 'time' column; the header needs time (s) first, then ctrl:/qpos:/qvel:/sensor:")
    bad = ~np.isfinite(table)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise LogError(f"{path}: {row_name(int(r))}, column {header[c]!r} is {table[r, c]}; a log holds finite numbers")
    if table.shape[0] < LOG_ROWS_MIN:
        raise LogError(f"{path} has {table.shape[0]} samples; a log needs at least {LOG_ROWS_MIN} to say anything")
    time = table[:, header.index("time")]
    steps = np.diff(time)
    if (steps <= 0).any():
        r = int(np.argmax(steps <= 0)) + 1
        raise LogError(f"{path}: time is not increasing at {row_name(r)} ({time[r - 1]:g} s, then {time[r]:g} s)")
    # A robot's log samples at 10 Hz to 20 kHz: a median step of 0.5 or more is none in seconds, but one in
    # milliseconds (2 kHz or slower), microseconds or nanoseconds, the first that makes it 0.1 s or less.
    step = float(np.median(steps))
    if step >= 0.5:
        scale, unit = next(((s, u) for s, u in ((1e3, "milliseconds"), (1e6, "microseconds")) if step / s <= 0.1),
                           (1e9, "nanoseconds"))
        raise LogError(f"{path}: its time column steps by {step:g} per sample: that is {unit} ({step / scale:g} s a "
                       f"sample), not seconds; give time in seconds (divide the column by {scale:g})")
    if time[-1] - time[0] < 10 * model.opt.timestep:
        raise LogError(f"{path} spans {time[-1] - time[0]:g} s, less than ten of the model's time steps "
                       f"({model.opt.timestep:g} s); too short to say anything")

    columns = {name: table[:, i] for i, name in enumerate(header) if name != "time"}
    parts: dict[str, dict[int | None, np.ndarray]] = {}
    for name, values in columns.items():
        pieces = name.split(":")
        kind = pieces[0]
        if kind not in KINDS or len(pieces) not in (2, 3) or not pieces[1]:
            raise LogError(f"{path}: column {name!r} is not time, ctrl:<actuator>, qpos:<joint>[:k], "
                           f"qvel:<joint>[:k] or sensor:<sensor>[:k]")
        if kind == "ctrl" and len(pieces) == 3:
            raise LogError(f"{path}: column {name!r}: an actuator has one command, ctrl:{pieces[1]}")
        k: int | None = None
        if len(pieces) == 3:
            try:
                k = int(pieces[2])
            except ValueError:
                raise LogError(f"{path}: column {name!r}: the component {pieces[2]!r} is not a whole number") from None
        names = _names(model, kind)
        if pieces[1] not in names:
            raise LogError(f"{name}: no {_WORD[kind]} {pieces[1]!r} in {model_name}{_closest(pieces[1], names)}")
        parts.setdefault(f"{kind}:{pieces[1]}", {})[k] = values

    log = Log(path=path, time=time, columns=columns)
    for key, pieces_by_k in parts.items():
        kind, name = key.split(":", 1)
        index = _names(model, kind).index(name)
        width, address = _width(model, kind, index)
        if width == 1:
            if set(pieces_by_k) != {None}:
                raise LogError(f"{path}: {key} has one value; name the column {key}, without a component")
            values = pieces_by_k[None][:, None]
        else:
            if None in pieces_by_k:
                raise LogError(f"{path}: {key} has {width} values; name its columns {key}:0 .. {key}:{width - 1}")
            extra = sorted(k for k in pieces_by_k if k is not None and not 0 <= k < width)
            if extra:
                raise LogError(f"{path}: {key}:{extra[0]}: {key} has {width} values, components 0 .. {width - 1}")
            missing = [k for k in range(width) if k not in pieces_by_k]
            if missing:
                raise LogError(f"{path}: {key} has {width} values; columns {key}:{missing[0]} are missing "
                               f"(a log gives all of them or none)")
            values = np.column_stack([pieces_by_k[k] for k in range(width)])
        ids = np.array([index]) if kind == "ctrl" else np.arange(address, address + width)
        log.signals[key] = (kind, name, values, ids)
    if readings and not log.observed():
        raise LogError(f"{path}: no qpos:, qvel: or sensor: column; a log needs readings to compare the model with")
    return log


def write_log(path: str | Path, time: np.ndarray, columns: dict[str, np.ndarray]) -> Path:
    """Write a log (CSV or ``.npz`` by the suffix) from ``time`` (N,) and named columns (N,) each.

    Values are written with 17 significant digits, so a CSV round-trips exactly.
    """
    path = Path(path)
    if path.suffix == ".npz":
        arrays: dict[str, Any] = {"time": np.asarray(time, float)}
        arrays |= {k: np.asarray(v, float) for k, v in columns.items()}
        np.savez(path, **arrays)
        return path
    names = ["time", *columns]
    table = np.column_stack([time, *columns.values()])
    with path.open("w") as out:
        out.write(",".join(names) + "\n")
        for row in table:
            out.write(",".join(repr(float(x)) if math.isfinite(x) else str(x) for x in row) + "\n")
    return path


def refuse_repeats(logs: list[Log]) -> list[Log]:
    """``logs`` unchanged, once it is sure no log is given twice (the same samples under two names).

    The same log twice would count its evidence twice: intervals half as wide as the data allow.

    Raises:
      LogError: two logs with the same time stamps and the same readings (naming both).
    """
    seen: dict[bytes, Path] = {}
    for log in logs:
        digest = hashlib.sha256(np.ascontiguousarray(log.time).tobytes())
        for key in sorted(log.columns):
            digest.update(key.encode() + np.ascontiguousarray(log.columns[key]).tobytes())
        if digest.digest() in seen:
            first = seen[digest.digest()]
            raise LogError(f"{log.path} is the same log as {first} (the same samples): give each log once; counted "
                           "twice it would claim twice the evidence it holds")
        seen[digest.digest()] = log.path
    return logs
