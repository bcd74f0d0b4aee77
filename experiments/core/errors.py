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


class ControllerError(CrossdynError):
    """A controller in the closed loop raised, exited, or returned controls of the wrong shape or non-finite values."""
