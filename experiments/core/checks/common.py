"""What every quantity check shares: the user's function (:class:`UserFunction`, which calls it on
batches whether it was written for one state or a batch), the states (:func:`state_source`), MuJoCo's
warnings about the model, and running tests of "the error is exactly this" (:class:`Hypotheses`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import mujoco
import numpy as np

from crossdyn.experiments.core import user_code, validate
from crossdyn.experiments.core.checks.inverse_dynamics import CHUNK, sampling_lines, state_chunks
from crossdyn.experiments.core.errors import DerivationError, StateError
from crossdyn.experiments.core.limits import STATES_MAX
from crossdyn.experiments.core.ranges import Ranges

__all__ = ["load_function", "UserFunction", "StateSource", "state_source", "model_warnings", "warning_lines",
           "within", "Hypotheses"]

# What each state part is called and how long it is.
_PART_SIZE = {"q": "nq", "qd": "nv", "qdd": "nv", "tau": "nv"}


def load_function(fn: Callable | str) -> tuple[Callable, str]:
    """The user's function and how to name it: a callable, ``FILE.py:FUNC`` or ``module:FUNC``."""
    from crossdyn.experiments.core.checks.derivation import load_derivation

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
    from crossdyn.experiments.core.truth import as_rows

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
    from crossdyn.experiments.core.models import mujoco_warnings

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
