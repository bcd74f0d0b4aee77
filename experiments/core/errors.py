"""Exceptions crossdyn raises for bad input; the CLI prints them as one line.

Every message names the file or element at fault and, where there is one, the fix.
"""


class CrossdynError(Exception):
    """Base class: an input problem the user can fix (not a bug in crossdyn)."""


class ModelError(CrossdynError):
    """A model file is missing, malformed, or not the kind of model expected."""


class StateError(CrossdynError):
    """A state (q, qd, qdd) has the wrong shape or non-finite entries."""


class DerivationError(CrossdynError):
    """A user's derivation cannot be loaded, raises, or returns the wrong shape."""


class ParameterError(CrossdynError):
    """An experiment parameter is unknown or out of range."""


# NumPy's generators take any non-negative integer; 2**32 - 1 keeps seeds the size
# every other tool (and a CSV column) reads without surprise.
SEED_MAX = 2**32 - 1


def validate_seed(seed, what: str = "seed") -> int:
    """``seed`` as an int, the same rule for the command line and the Python API.

    Args:
      seed: a whole number from 0 to :data:`SEED_MAX` (a NumPy integer too; not a bool).
      what: how messages name it (``"seed"``, ``"--crossdyn-seed"``).

    Raises:
      ParameterError: anything else (a float, a negative number, a 20-digit one).
    """
    if isinstance(seed, bool) or not hasattr(seed, "__index__"):
        raise ParameterError(f"{what} must be a whole number from 0 to {SEED_MAX}, got {seed!r}")
    value = seed.__index__()
    if not 0 <= value <= SEED_MAX:
        raise ParameterError(f"{what} must be a whole number from 0 to {SEED_MAX}, got {value}")
    return value
