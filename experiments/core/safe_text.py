"""Text from user code, made safe to print: one line, no control codes, bounded length.

An experiment's ``measured`` text, an exception's message or a metric's name can
hold anything: escape sequences that recolour or clear the terminal, newlines
that break a table or a one-line error, lone surrogates that no encoder accepts,
200 KB of output.  What crossdyn prints goes through :func:`one_line`; the files
keep the full text (:func:`crossdyn.experiments.core.files.write_text` escapes
what UTF-8 cannot hold, so nothing is lost and every file stays valid UTF-8).
"""

from __future__ import annotations

import re

__all__ = ["escape", "one_line", "TERMINAL_LIMIT"]

# Characters printed per line of text from user code; the rest is in the files.
TERMINAL_LIMIT = 200

# C0 and C1 control codes (ESC among them), DEL, lone surrogates, and the
# bidirectional overrides that can make a line read other than it is.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")
_SPACE = re.compile(r"[\s\u2028\u2029]+")


def _code(match: re.Match) -> str:
    point = ord(match.group())
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"


def escape(text: str) -> str:
    """``text`` with control codes, lone surrogates and bidi overrides written as ``\\x1b``, ``\\ud800``."""
    return _UNSAFE.sub(_code, text)


def one_line(text, limit: int | None = TERMINAL_LIMIT) -> str:
    """``str(text)`` on one line: whitespace runs as one space, unsafe characters escaped, at most ``limit`` long.

    Shortened text ends with ``... [N more characters]`` (the count is of the
    escaped text).  ``limit=None`` keeps it whole.
    """
    text = escape(_SPACE.sub(" ", str(text)).strip())
    if limit is not None and len(text) > limit:
        cut = max(limit - 30, 10)
        text = f"{text[:cut]}... [{len(text) - cut} more characters]"
    return text
