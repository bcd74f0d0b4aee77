"""What every quantity check shares: the user's function (:class:`UserFunction`, which calls it on
batches whether it was written for one state or a batch), the states (:func:`state_source`), MuJoCo's
warnings about the model, running statistics of the errors (:class:`EntryStats`), running tests of "the
error is exactly this" (:class:`Hypotheses`), and MuJoCo's mass matrices (:func:`mass_matrices`)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
from tqdm import tqdm

from .. import user_code, validate
from ..errors import DerivationError, StateError
from ..limits import STATES_MAX
from ..models import mujoco_warnings
from ..ranges import Ranges
from ..truth import as_rows

__all__ = ["load_function", "load_derivation", "UserFunction", "StateSource", "state_source", "state_chunks",
           "sample_states", "sampling_lines", "model_warnings", "warning_lines", "within", "Hypotheses", "EntryStats",
           "progress", "mass_matrices", "CHUNK", "PLOT_SAMPLES", "PROGRESS_STATES"]

# States per chunk: the memory of a check is a few (CHUNK, nv, nv) arrays, 2048 x
# 30 x 30 doubles = 15 MB for a 30-dof robot, whatever the number of states.
CHUNK = 2048
# Per-sample errors kept for the plot: the first PLOT_SAMPLES states (bounded memory).
PLOT_SAMPLES = 20_000
# A progress bar (on a terminal only) once a check has more states than this.
PROGRESS_STATES = 20_000
# What each state part is called and how long it is.
_PART_SIZE = {"q": "nq", "qd": "nv", "qdd": "nv", "tau": "nv"}


def load_function(fn: Callable | str) -> tuple[Callable, str]:
    """The user's function and how to name it: a callable, ``FILE.py:FUNC`` or ``module:FUNC``."""
    if isinstance(fn, str):
        return load_derivation(fn), os.path.basename(fn)
    if not callable(fn):
        raise DerivationError(f"expected a function or 'FILE.py:FUNC', got a {type(fn).__name__}")
    return fn, getattr(fn, "__name__", "function")


def _shape_text(shape: tuple) -> str:
    return "a number" if shape == () else f"shape {shape}"


class UserFunction:
    """A user's function called on batches of states, written for one state or for a batch.

    ``forms`` are the return values it may give for one state, each a tuple of shapes
    (``[((3,),), ((3,), (3, 3))]``: a position, or a position and a rotation); ``what`` and
    ``inputs`` name what it returns and takes, for messages.  It is given copies of the
    states; one that writes into an argument is refused with a :class:`DerivationError`.

    Attributes:
      form: the index of the form the function returned (after the first call).
      per_state: the function takes one state at a time (so each is a call).
      calls: how many times it was called.
    """

    def __init__(self, fn: Callable, label: str, forms: list[tuple[tuple, ...]], what: str,
                 inputs: tuple[str, ...] = ("q", "qd")):
        self.fn, self.label, self.forms, self.what, self.inputs = fn, label, forms, what, inputs
        self.form: int | None = None
        self.per_state = False
        self.calls = 0

    def _call(self, *args, copied: bool = False) -> object:
        """The function on ``args``, given copies of them (``copied``: ``args`` are copies already)."""
        self.calls += 1
        given = args if copied else user_code.given_copies(args)  # its writes never reach the states compared
        with user_code.guard(self.label), user_code.users_errstate():
            try:
                out = self.fn(*given)
            except Exception as exc:  # the user's code: any exception is theirs to see
                raise DerivationError(f"{self.label} raised {type(exc).__name__}: {' '.join(str(exc).split())}"
                                      f"{user_code.where(exc)}") from None
        if not copied:
            user_code.refuse_writes(self.label, self.inputs, args, given)
        return out

    def _parts(self, out, n: int | None) -> list[np.ndarray]:
        """Split a return value into arrays: a tuple is several outputs; so is a list, unless it is one array."""
        multi = max(len(f) for f in self.forms) > 1
        if multi and isinstance(out, tuple):
            return [user_code.as_numbers(o, self.label) for o in out]
        if multi and isinstance(out, list):
            try:
                whole = user_code.as_numbers(out, self.label)
            except DerivationError:  # ragged: several outputs of different shapes
                return [user_code.as_numbers(o, self.label) for o in out]
            lead = () if n is None else (n,)
            if any(len(f) == 1 and lead + f[0] == whole.shape for f in self.forms):
                return [whole]
            return [user_code.as_numbers(o, self.label) for o in out]
        return [user_code.as_numbers(out, self.label)]

    def _parse(self, out, n: int | None) -> list[np.ndarray]:
        """The outputs of one call (``n`` None) or of a batch of ``n``, matched against the forms."""
        parts = self._parts(out, n)
        lead = () if n is None else (n,)
        forms = list(enumerate(self.forms)) if self.form is None else [(self.form, self.forms[self.form])]
        for k, form in forms:
            if len(form) == len(parts) and all(p.shape == lead + s for p, s in zip(parts, form, strict=False)):
                self.form = k
                return parts
        found = ", ".join(_shape_text(p.shape) for p in parts)
        allowed = " or ".join("(" + ", ".join(_shape_text(s) for s in form) + ")" if len(form) > 1
                              else _shape_text(form[0]) for _, form in forms)
        where = "for one state" if n is None else f"for a batch of {n}"
        raise DerivationError(f"{self.label} returned {found} {where}; expected {self.what}: {allowed}")

    def _single(self, args: tuple[np.ndarray, ...]) -> list[np.ndarray]:
        n = args[0].shape[0]
        given = user_code.given_copies(args)  # one copy of the batch; each call gets its own rows of it
        rows = [self._parse(self._call(*(a[k] for a in given), copied=True), None) for k in range(n)]
        user_code.refuse_writes(self.label, self.inputs, args, given)
        return [np.stack([r[i] for r in rows]) for i in range(len(rows[0]))]

    def _decide(self, args: tuple[np.ndarray, ...]) -> None:
        """Probe two states one by one and as a batch: batches only if they give the same numbers."""
        probe = tuple(a[: min(2, a.shape[0])] for a in args)
        reference = self._single(probe)
        try:
            out = self._parse(self._call(*probe), probe[0].shape[0])
            vectorized = all(o.shape == r.shape and np.allclose(o, r, rtol=1e-12, atol=1e-12)
                             for o, r in zip(out, reference, strict=False))
        except user_code.UserExit:
            raise
        except DerivationError:  # written for one state: it may fail on a batch
            vectorized = False
        self.per_state = not vectorized
        self._decided = True

    def __call__(self, *args: np.ndarray) -> list[np.ndarray]:
        """The outputs for batches ``(N, ...)`` of arguments: each ``(N, *shape)``.

        Raises:
          DerivationError: it raises, exits, returns the wrong shape or a non-finite number.
        """
        if not getattr(self, "_decided", False):
            self._decide(args)
        n = args[0].shape[0]
        outputs = self._single(args) if self.per_state else self._parse(self._call(*args), n)
        return self._finite(outputs)

    def _finite(self, outputs: list[np.ndarray]) -> list[np.ndarray]:
        for out in outputs:
            bad = ~np.isfinite(out.reshape(out.shape[0], -1)).all(axis=1)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise DerivationError(f"{self.label} returned a non-finite value at state {row}")
        return outputs

    def note(self) -> str | None:
        """Said once in the report: the function went state by state (None if it took batches)."""
        if not self.per_state or self.calls <= 2:
            return None
        return (f"{self.label} takes one state at a time, so it was called {self.calls:,} times, state by state; "
                "written for a batch (states along the first axis) it would run faster")


@dataclass(frozen=True)
class StateSource:
    """A re-startable source of state chunks: ``chunks()`` yields tuples of arrays ``(n, ...)``, one per
    part; ``total`` states; ``seed`` (None for given ones); ``sampling`` in words; random ones' ``ranges``."""

    chunks: Callable[[], Iterator[tuple[np.ndarray, ...]]]
    total: int
    seed: int | None
    sampling: tuple[str, ...] = ()
    ranges: dict | None = None


def _validate(model: mujoco.MjModel, states, parts: tuple[str, ...]) -> tuple[np.ndarray, ...]:
    if isinstance(states, np.ndarray) or not isinstance(states, (tuple, list)):
        states = (states,)
    if len(states) != len(parts):
        raise StateError(f"expected {len(parts)} state arrays ({', '.join(parts)}), got {len(states)}")

    arrays = [as_rows(name, value, getattr(model, _PART_SIZE[name])) for name, value in zip(parts, states, strict=True)]
    n = {a.shape[0] for a in arrays}
    if len(n) != 1:
        rows = ", ".join(str(a.shape[0]) for a in arrays)
        raise StateError(f"the state arrays have different numbers of rows: {rows}")
    if n == {0}:
        raise StateError(f"the states have no rows: give at least one state ({', '.join(parts)})")
    return tuple(arrays)


def state_source(model: mujoco.MjModel, samples: int, seed: int, states, parts: tuple[str, ...],
                 ranges: Ranges | None = None) -> StateSource:
    """Seeded random states drawn in ``ranges``, or the given ones (one array per part, ``(N, nq)`` or
    ``(N, nv)``), as chunks of the ``parts`` asked for (``"tau"`` is given ``qdd``: the forward-dynamics
    check turns it into torques).  Bad states are a StateError; ``samples`` or ``seed`` out of range a
    ParameterError."""
    samples = validate.count(samples, 1, STATES_MAX, "samples")
    seed = validate.seed(seed)
    ranges = Ranges() if ranges is None else ranges
    if states is None:
        index = {"q": 0, "qd": 1, "qdd": 2, "tau": 2}

        def random() -> Iterator[tuple[np.ndarray, ...]]:
            for chunk in state_chunks(model, samples, seed, ranges):
                yield tuple(chunk[index[p]] for p in parts)

        return StateSource(random, samples, seed, tuple(sampling_lines(model, samples, seed, None, ranges, parts)),
                           ranges.to_dict())
    arrays = _validate(model, states, parts)
    n = arrays[0].shape[0]
    return StateSource(lambda: (tuple(a[s : s + CHUNK] for a in arrays) for s in range(0, n, CHUNK)), n, None,
                       tuple(sampling_lines(model, n, seed, states, ranges, parts)), {})


def model_warnings():
    """Collect MuJoCo's warnings instead of letting it print them: yields the list, one line each."""
    return mujoco_warnings()


def warning_lines(collected: Iterable[str]) -> list[str]:
    """The captured warnings, each once with its count, said to be MuJoCo's about the model."""
    counts: dict[str, int] = {}
    for text in collected:
        counts[text] = counts.get(text, 0) + 1
    return [f"MuJoCo: {text!r}{f' ({n} times)' if n > 1 else ''}: raised by the model as it comes, "
            "not by your function" for text, n in counts.items()]


def within(error: np.ndarray, reference: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    """``|error| <= atol + rtol |reference|``, entry-wise."""
    return np.abs(error) <= atol + rtol * np.abs(reference)


class Hypotheses:
    """Running tests, chunk by chunk, of "the user's value is exactly this other thing": each keeps a
    boolean array (one flag per entry, or per column ...) that stays True while every state agrees."""

    def __init__(self):
        self.holds: dict[str, np.ndarray] = {}

    def test(self, name: str, candidate: np.ndarray, alternative: np.ndarray, atol: float, rtol: float,
             axis=0) -> None:
        """Fold in one chunk: ``candidate == alternative`` within tolerance, reduced over ``axis``."""
        ok = np.all(within(candidate - alternative, alternative, atol, rtol), axis=axis)
        self.holds[name] = ok if name not in self.holds else self.holds[name] & ok

    def __getitem__(self, name: str) -> np.ndarray:
        return self.holds.get(name, np.zeros(0, dtype=bool))

    def all(self, name: str) -> bool:
        """The hypothesis held on every entry at every state."""
        return name in self.holds and bool(np.all(self.holds[name]))


def state_chunks(model: mujoco.MjModel, samples: int, seed: int,
                 ranges: Ranges | None = None) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Seeded random states in MuJoCo's layout, ``CHUNK`` at a time (the last chunk shorter).

    Each chunk is :meth:`Ranges.draw <crossdyn.experiments.core.ranges.Ranges.draw>`
    from one generator, so the states depend on ``seed``, ``ranges`` and :data:`CHUNK` only.

    Yields:
      ``qpos (n, nq)``, ``qvel (n, nv)``, ``qacc (n, nv)`` with ``n <= CHUNK``.

    Raises:
      ParameterError: ``samples`` below 1 or ``seed`` not a valid seed.
    """
    samples = validate.count(samples, 1, STATES_MAX, "samples")
    rng = np.random.default_rng(validate.seed(seed))
    ranges = Ranges() if ranges is None else ranges
    for start in range(0, samples, CHUNK):
        yield ranges.draw(model, rng, min(CHUNK, samples - start))


def sample_states(model: mujoco.MjModel, samples: int, seed: int,
                  ranges: Ranges | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All of :func:`state_chunks` at once: the states a check with ``samples, seed, ranges`` uses.

    Returns:
      ``qpos (samples, nq)``, ``qvel (samples, nv)``, ``qacc (samples, nv)``.
    """
    chunks = list(state_chunks(model, samples, seed, ranges))
    qpos, qvel, qacc = (np.concatenate(parts) for parts in zip(*chunks, strict=False))
    return qpos, qvel, qacc


# EntryStats sums errors times 2^-32 (exact: a power of two), so the sum of up to
# 4e9 errors of 1e308 stays finite and the mean is exact to round-off.
_SUM_SCALE = 2.0**-32


class EntryStats:
    """Running per-entry statistics of ``error = candidate - reference``, chunk by chunk.

    Per entry: sum, min, max, largest ``|error|`` and ``|reference|``, all within
    tolerance; the worst ``|error|`` with its state; per-state maxima for the first
    :data:`PLOT_SAMPLES` states.  Memory is one term's shape, not ``N`` of them.
    """

    def __init__(self, shape: tuple[int, ...]):
        self.sum, self.max_abs, self.scale = np.zeros(shape), np.zeros(shape), np.zeros(shape)
        self.lo, self.hi = np.full(shape, np.inf), np.full(shape, -np.inf)
        self.ok = np.ones(shape, dtype=bool)
        self.worst = (-1.0, 0, (0,) * len(shape))
        self.plot: list[np.ndarray] = []
        self.n = 0

    def add(self, err: np.ndarray, ref: np.ndarray, atol: float, rtol: float) -> None:
        """Fold in one chunk: ``err``, ``ref`` ``(n, *shape)``.

        Raises:
          StateError: MuJoCo's own value is not finite at a state (it overflowed: the
            state is beyond what double precision holds); never blamed on the user's function.
        """
        finite = np.isfinite(ref.reshape(ref.shape[0], -1)).all(axis=1)
        if not finite.all():
            row = int(np.flatnonzero(~finite)[0])
            raise StateError(f"MuJoCo's own value is not finite at state {self.n + row} (it overflowed): the state is "
                             "beyond what double precision holds; give smaller states or ranges")
        abs_err, abs_ref = np.abs(err), np.abs(ref)
        self.sum += (err * _SUM_SCALE).sum(axis=0)  # scaled: a sum of 1e308 errors stays finite
        np.minimum(self.lo, err.min(axis=0), out=self.lo)
        np.maximum(self.hi, err.max(axis=0), out=self.hi)
        np.maximum(self.max_abs, abs_err.max(axis=0), out=self.max_abs)
        np.maximum(self.scale, abs_ref.max(axis=0), out=self.scale)
        abs_ref *= rtol
        abs_ref += atol
        self.ok &= np.all(abs_err <= abs_ref, axis=0)
        per_state = abs_err.reshape(abs_err.shape[0], -1).max(axis=1)
        k = int(np.argmax(per_state))
        if per_state[k] > self.worst[0]:
            entry = np.unravel_index(int(np.argmax(abs_err[k])), abs_err.shape[1:])
            self.worst = (float(per_state[k]), self.n + k, tuple(int(i) for i in entry))
        room = PLOT_SAMPLES - sum(len(p) for p in self.plot)
        if room > 0:
            self.plot.append(per_state[:room])
        self.n += err.shape[0]

    def per_sample(self) -> np.ndarray:
        return np.concatenate(self.plot)

    def mean(self) -> np.ndarray:
        """The mean error per entry (zeros before the first chunk)."""
        return self.sum / max(self.n, 1) / _SUM_SCALE


def progress(chunks: Iterable, total: int, what: str) -> Iterable:
    """``chunks`` with a progress bar in states, on a terminal, for checks over PROGRESS_STATES."""
    if total <= PROGRESS_STATES:
        yield from chunks
        return
    with tqdm(total=total, unit="state", desc=what, disable=None, leave=False) as bar:
        for chunk in chunks:
            yield chunk
            bar.update(chunk[0].shape[0])


def sampling_lines(model: mujoco.MjModel, total: int, seed: int, states, ranges: Ranges,
                   parts: tuple[str, ...] = ("q", "qd", "qdd")) -> list[str]:
    """Where a check's states came from, in words: random ones' ranges, or how many were given."""
    if states is not None:
        return [f"{total:,} given state{'s' if total != 1 else ''} (none drawn at random)"]
    return [f"{total:,} random state{'s' if total != 1 else ''}, seed {seed}, uniform in:",
            *(f"  {line}" for line in ranges.describe(model, parts))]


def load_derivation(spec: str) -> Callable:
    """Import ``FILE.py:FUNC`` (as ``python FILE.py`` would see its neighbours) or ``module:FUNC``.

    Raises:
      DerivationError: malformed spec, missing file or module, the file fails to
        import, no such function, or it is not callable.
    """
    path_text, sep, name = spec.rpartition(":")
    if not sep or not path_text or not name:
        raise DerivationError(f"expected FILE.py:FUNC or module:FUNC, got {spec!r}")
    path = Path(path_text).expanduser()
    if _is_module_name(path_text) and not path.is_file():
        module, where = _import_module(path_text), f"module {path_text}"
    else:
        module, where = user_code.import_file(path), str(path)
    fn = getattr(module, name, None)
    if fn is None:
        public = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_"))
        defined = ", ".join(public) or "nothing callable"
        raise DerivationError(f"{where} has no function {name!r} (it defines: {defined})")
    if not callable(fn):
        raise DerivationError(f"{where}: {name!r} is a {type(fn).__name__}, not a function")
    return fn


def _is_module_name(text: str) -> bool:
    return not text.endswith(".py") and all(part.isidentifier() for part in text.split("."))


def _import_module(name: str):
    try:
        with user_code.guard(f"module {name} (while being imported)"):
            return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and (name == exc.name or name.startswith(exc.name + ".")):
            raise DerivationError(f"no derivation file or importable module {name!r}") from None
        raise DerivationError(f"module {name} failed to import: {exc}{user_code.where(exc)}") from None
    except DerivationError:
        raise
    except Exception as exc:  # the user's module: what it raised, and where, on one line
        detail = " ".join(str(exc).split())
        raise DerivationError(f"module {name} failed to import: {type(exc).__name__}: {detail}"
                              f"{user_code.where(exc)}") from None


def mass_matrices(model: mujoco.MjModel, q: np.ndarray, data: mujoco.MjData | None = None) -> np.ndarray:
    """MuJoCo's ``M(q)`` at each state, ``(n, nv, nv)`` (``mj_crb`` and ``mj_fullM``)."""
    data = mujoco.MjData(model) if data is None else data
    out = np.empty((q.shape[0], model.nv, model.nv))
    for k in range(q.shape[0]):
        data.qpos[:] = q[k]
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        mujoco.mj_crb(model, data)
        mujoco.mj_fullM(model, data, out[k])
    return out
