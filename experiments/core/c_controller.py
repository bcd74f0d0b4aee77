"""Users' C controllers in the closed loop: the code that runs on the robot, compiled and called each step.

Used exactly like a Python controller::

    c = CController("lqr.c", "step", inputs=("qpos", "qvel"))
    # void step(double t, const double *qpos, const double *qvel, double *ctrl);
    c.params["k_theta"] = 12.0            # a global of lqr.c, set and read by name
    trace = simulate(model, c, 4.0, keyframe="upright")

The sources are compiled once per content into a shared library kept in
:func:`cache_dir`.  A small generated C shim copies the named inputs into buffers
of the declared types (a ``float`` signature runs in float, as on a
microcontroller), calls the user's step function and checks its ``ctrl`` is
finite.  Every run loads a fresh copy of the library, so its globals and statics
start from their initial values.  The globals are what the compiler says they are:
the preprocessed sources name them, and a probe compiled with each source gives
each one's type and array sizes (``sizeof``, ``_Generic``), so a value is checked
against the range of the type the chip holds it in.  A crash or hang in C ends the
calling process: ``crossdyn run`` and ``tune`` run experiments in worker processes
for that.
"""

from __future__ import annotations

import _ctypes
import ctypes
import dataclasses
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from math import isfinite
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ControllerError, CrossdynError, ParameterError
from .registry import Param

__all__ = ["CController", "CParams", "CompileError", "cache_dir", "compiler", "compiler_identity", "run_compiler",
           "store"]

# The shim and the flags every build uses; bumped when the shim's text or the build changes.
_BUILD_VERSION = 5
# -O2 without -ffast-math: IEEE arithmetic as written, so a double controller matches NumPy's to round-off.
BASE_FLAGS = ("-O2", "-fPIC")
COMPILE_TIMEOUT_S = 120.0  # a build that takes longer is stuck (a runaway include or macro)


class CompileError(CrossdynError):
    """The C sources do not compile or link, or no C compiler is installed."""


def compiler() -> str:
    """The C compiler's path: ``$CC``, else ``cc``, else ``gcc``.

    Raises:
      CompileError: none is installed (the message says what to install).
    """
    wanted = os.environ.get("CC")
    for name in ([wanted] if wanted else ["cc", "gcc"]):
        found = shutil.which(name)
        if found:
            return found
    looked = f"CC={wanted!r}" if wanted else "cc, gcc"
    raise CompileError(f"no C compiler found (looked for {looked}): install one (Debian/Ubuntu: apt-get install gcc; "
                       "Fedora: dnf install gcc; macOS: xcode-select --install) or set CC")


@functools.lru_cache(maxsize=8)
def compiler_identity(path: str) -> str:
    """``path --version``'s first line: part of the cache key (a compiler upgrade rebuilds)."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CompileError(f"the C compiler {path} does not run: {exc}") from None
    lines = (out.stdout or out.stderr).strip().splitlines()
    return f"{path}: {lines[0] if lines else ''}"


def cache_dir() -> Path:
    """Where compiled controllers are kept: ``$CROSSDYN_C_CACHE``, else ``$XDG_CACHE_HOME/crossdyn/c``."""
    if os.environ.get("CROSSDYN_C_CACHE"):
        return Path(os.environ["CROSSDYN_C_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "crossdyn" / "c"


@dataclass(frozen=True)
class _Argument:
    type: str  # "float" or "double"
    pointer: bool
    const: bool


@dataclass(frozen=True)
class _Signature:
    returns: str  # "void" or "int"
    name: str
    time: _Argument
    inputs: tuple[_Argument, ...]
    output: _Argument

    def prototype(self) -> str:
        args = [f"{self.time.type} t"]
        args += [f"{'const ' if a.const else ''}{a.type} *in{k}" for k, a in enumerate(self.inputs)]
        args.append(f"{self.output.type} *ctrl")
        return f"{self.returns} {self.name}({', '.join(args)});"


_SIGNATURE = re.compile(r"^\s*(void|int)\s+([A-Za-z_]\w*)\s*\((.*)\)\s*;?\s*$", re.S)
_ARGUMENT = re.compile(r"^\s*(const\s+)?(float|double)\s*(const\s*)?(\*)?\s*(const\s*)?([A-Za-z_]\w*)?"
                       r"\s*(\[\s*\])?\s*$")


def _signature(text: str | None, function: str, n_inputs: int) -> _Signature:
    """The step function's signature: the declared one parsed, or the default (all double)."""
    if text is None:
        return _Signature("void", function, _Argument("double", False, False),
                          tuple(_Argument("double", True, True) for _ in range(n_inputs)),
                          _Argument("double", True, False))
    usage = (f"signature {text!r}: expected 'void {function}(T t, const T *input, ..., T *ctrl);' with T float or "
             f"double and one pointer per input ({n_inputs})")
    match = _SIGNATURE.match(text)
    if not match:
        raise ParameterError(usage)
    returns, name, body = match.groups()
    if name != function:
        raise ParameterError(f"signature {text!r} declares {name!r}, not the function {function!r}")
    args = []
    for part in body.split(","):
        arg = _ARGUMENT.match(part)
        if not arg:
            raise ParameterError(f"{usage}; cannot read the argument {part.strip()!r}")
        const, kind, _, star, _, _, brackets = arg.groups()
        args.append(_Argument(kind, bool(star or brackets), bool(const)))
    if len(args) != n_inputs + 2 or args[0].pointer or not all(a.pointer for a in args[1:]) or args[-1].const:
        raise ParameterError(usage)
    return _Signature(returns, name, args[0], tuple(args[1:-1]), args[-1])


def _shim(sig: _Signature, reset: str | None) -> str:
    """The C glue the loop calls: inputs copied and converted, the user's step, ``ctrl`` checked and widened."""
    n = len(sig.inputs)
    lines = ["/* crossdyn's glue between the closed loop and the user's controller (generated). */",
             "#include <math.h>", "#include <string.h>", "", sig.prototype()]
    if reset:
        lines.append(f"void {reset}(void);")
    for k, arg in enumerate(sig.inputs):
        lines.append(f"static const double *crossdyn_src{k}; static {arg.type} *crossdyn_buf{k}; "
                     f"static long crossdyn_len{k};")
    lines += [f"static double *crossdyn_ctrl; static {sig.output.type} *crossdyn_out; static long crossdyn_nu;", "",
              "void crossdyn_bind_input(int k, const double *src, void *buf, long len) {", "    switch (k) {"]
    for k, arg in enumerate(sig.inputs):
        lines.append(f"    case {k}: crossdyn_src{k} = src; crossdyn_buf{k} = ({arg.type} *)buf; "
                     f"crossdyn_len{k} = len; break;")
    lines += ["    default: break;", "    }", "}", "",
              "void crossdyn_bind_output(double *ctrl, void *out, long nu) {",
              f"    crossdyn_ctrl = ctrl; crossdyn_out = ({sig.output.type} *)out; crossdyn_nu = nu;", "}", ""]
    if reset:
        lines += [f"void crossdyn_reset(void) {{ {reset}(); }}", ""]
    call = f"{sig.name}(({sig.time.type})t, {''.join(f'crossdyn_buf{k}, ' for k in range(n))}crossdyn_out)"
    lines += ["static int crossdyn_code;", "int crossdyn_fault(void) { return crossdyn_code; }", "",
              "/* 1: fine; 2: a non-finite control; 3: the controller returned nonzero (crossdyn_fault()). */",
              "int crossdyn_step(double t) {", "    long i;", "    int bad = 0;"]
    for k, arg in enumerate(sig.inputs):
        lines.append(f"    for (i = 0; i < crossdyn_len{k}; ++i) crossdyn_buf{k}[i] = ({arg.type})crossdyn_src{k}[i];")
    lines.append(f"    memset(crossdyn_out, 0, (size_t)crossdyn_nu * sizeof({sig.output.type}));")
    lines.append(f"    crossdyn_code = {call};" if sig.returns == "int" else f"    crossdyn_code = 0; {call};")
    lines += ["    for (i = 0; i < crossdyn_nu; ++i) {", "        double v = (double)crossdyn_out[i];",
              "        if (!isfinite(v)) bad = 1;", "        crossdyn_ctrl[i] = v;", "    }",
              "    return bad ? 2 : (crossdyn_code != 0 ? 3 : 1);", "}", ""]
    return "\n".join(lines)


_DIAGNOSTIC = re.compile(r"^(?P<file>[^\n:]+):(?P<line>\d+):(?:\d+:)?\s*(?:fatal\s+)?error:\s*(?P<message>.*)$", re.M)


def _build(sources: list[Path], shim: str, declarations: str, include_dirs: list[Path], defines: list[str],
           flags: list[str], names: Mapping[str, str]) -> tuple[Path, dict[str, _Global]]:
    """The shared library for these sources and flags, and their globals: from the cache, or compiled into it.

    Each source is compiled in a unit of its own: the source (``-include``, so its path may hold any
    character), then what the compiler makes of its file-scope variables (:func:`_probe`), then the
    shim's ``declarations``, so a definition of other types (a step in double declared as float) is
    a compile error, not a call with garbage.

    Raises:
      CompileError: no compiler, the sources do not compile or link, or they define the
        step or reset function with other types.
    """
    cc = compiler()
    headers = sorted({h for d in {*include_dirs, *(s.parent for s in sources)} for h in d.glob("*.h") if h.is_file()})
    key_parts = {"version": _BUILD_VERSION, "compiler": compiler_identity(cc), "base": BASE_FLAGS, "flags": flags,
                 "defines": defines, "include_dirs": [str(d) for d in include_dirs], "shim": shim,
                 "sources": [(str(s), _digest(s)) for s in sources], "headers": [(str(h), _digest(h)) for h in headers],
                 "platform": sys.platform}
    key = hashlib.sha256(json.dumps(key_parts, sort_keys=True).encode()).hexdigest()[:32]
    folder = cache_dir()
    library, table = folder / f"{key}.so", folder / f"{key}.json"
    if library.is_file() and table.is_file():
        return library, _read_globals(table)
    user = [*flags, *(f"-D{d}" for d in defines), *(f"-I{d}" for d in include_dirs)]
    with tempfile.TemporaryDirectory(prefix="crossdyn-cc-") as tmp:
        shim_c, shim_o, out = Path(tmp) / "crossdyn_shim.c", Path(tmp) / "crossdyn_shim.o", Path(tmp) / "lib.so"
        shim_c.write_text(shim)
        # The shim on its own, with crossdyn's flags: a user's -ffast-math cannot drop its finite check.
        run_compiler([cc, *BASE_FLAGS, "-c", str(shim_c), "-o", str(shim_o)], names)
        objects, found = [str(shim_o)], []
        for k, source in enumerate(sources):
            # The variables the compiler sees (after the preprocessor: #if, macros), in the user's files only.
            text = run_compiler([cc, *BASE_FLAGS, *user, "-E", str(source)], names)
            variables = [v for statement in _file_scope(_own_text(text)) for v in _variables(statement)]
            unit, obj = Path(tmp) / f"crossdyn_unit{k}.c", Path(tmp) / f"crossdyn_unit{k}.o"
            compile_unit = [cc, *BASE_FLAGS, *user, "-include", str(source), "-c", str(unit), "-o", str(obj)]
            unit.write_text(f"{_probe(k, variables)}\n{declarations}\n")
            try:
                run_compiler(compile_unit, names)
            except CompileError as exc:
                _unit_failed(exc, compile_unit, unit, declarations, names[str(source)], names)
                variables = [(*v[:3], f"crossdyn could not ask the compiler about it ({exc})") for v in variables]
            found.append((names[str(source)], variables))
            objects.append(str(obj))
        # -Bsymbolic: the library's calls and globals bind to its own definitions, never to a process-wide
        # symbol of the same name (glibc exports a legacy step(), which a user's step() would otherwise lose to).
        link = ["-Wl,--no-undefined", "-Wl,-Bsymbolic"] if sys.platform.startswith("linux") else []
        run_compiler([cc, *BASE_FLAGS, *flags, "-shared", *objects, "-o", str(out), *link, "-lm"], names)
        store(out, library)
        globals_ = _answers(library, found)
        answers = Path(tmp) / "globals.json"
        answers.write_text(json.dumps([dataclasses.asdict(g) for g in globals_.values()]))
        store(answers, table)
    return library, globals_


def _unit_failed(exc: CompileError, command: list[str], unit: Path, declarations: str, source: str,
                 names: Mapping[str, str]) -> None:
    """Say why a source's unit did not compile: the source's own error, or its definition against the
    ``declarations``; return (the probe alone failed) after compiling the unit without it."""
    unit.write_text("")
    run_compiler(command, names)  # the source alone: its own error, raised as the compiler words it
    unit.write_text(f"{declarations}\n")
    try:
        run_compiler(command, names)
    except CompileError as mismatch:
        raise CompileError(f"{source}: its definition does not match the declared '{declarations}' "
                           f"({str(mismatch).split(': ', 1)[-1]})") from None


def store(built: Path, library: Path) -> None:
    """Put a library just built into the cache atomically (a concurrent worker sees all of it or none).

    Raises:
      CompileError: the cache folder cannot be written.
    """
    partial = library.with_name(f"{library.name}.{os.getpid()}.tmp")
    try:
        library.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, partial)
        os.replace(partial, library)
    except OSError as exc:
        raise CompileError(f"cannot write the compiled controller into {library.parent}: {exc.strerror} "
                           "(set XDG_CACHE_HOME to a writable folder)") from None


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_compiler(command: list[str], names: Mapping[str, str]) -> str:
    """Run the compiler ``command`` (its messages in the C locale) and return what it printed.

    Raises:
      CompileError: it failed (its first error as ``file:line: message``, files named as in ``names``), did not
        run, or did not finish in :data:`COMPILE_TIMEOUT_S`.
    """
    try:
        # The C locale: the compiler's messages in plain ASCII quotes, as the one-line error shows them.
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=COMPILE_TIMEOUT_S,
                              env={**os.environ, "LC_ALL": "C"})
    except subprocess.TimeoutExpired:
        raise CompileError(f"the C compiler did not finish in {COMPILE_TIMEOUT_S:g} s") from None
    except OSError as exc:
        raise CompileError(f"the C compiler {command[0]} does not run: {exc.strerror}") from None
    if done.returncode != 0:
        raise CompileError(_first_error(done.stderr or done.stdout, names))
    return done.stdout


def _first_error(text: str, names: Mapping[str, str]) -> str:
    """The compiler's first error as ``file:line: message`` (the file as the user named it)."""
    match = _DIAGNOSTIC.search(text)
    if match:
        file = names.get(match["file"], match["file"])
        return f"{file}:{match['line']}: {match['message'].strip()}"
    undefined = re.search(r"undefined reference to [`'](\w+)'", text)
    if undefined:
        return (f"{', '.join(names.values())}: no function {undefined[1]!r} is defined (the linker: undefined "
                f"reference to {undefined[1]!r})")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    shown = next((line for line in lines if "error" in line), lines[0] if lines else "no message")
    for path, name in names.items():
        shown = shown.replace(path, name)
    return f"C compile failed: {shown}"


# The arithmetic types of C as the compiler tells them apart (``_Generic``), by the probe's code (1, 2, ...),
# with their ctypes type; ``char`` is signed or not as the compiler's is (the probe says which).
_KINDS: tuple[tuple[str, Any], ...] = (
    ("char", None), ("signed char", ctypes.c_byte), ("unsigned char", ctypes.c_ubyte),
    ("short", ctypes.c_short), ("unsigned short", ctypes.c_ushort), ("int", ctypes.c_int),
    ("unsigned int", ctypes.c_uint), ("long", ctypes.c_long), ("unsigned long", ctypes.c_ulong),
    ("long long", ctypes.c_longlong), ("unsigned long long", ctypes.c_ulonglong), ("_Bool", ctypes.c_bool),
    ("float", ctypes.c_float), ("double", ctypes.c_double), ("long double", ctypes.c_longdouble))
_FLOATS = frozenset({"float", "double", "long double"})
_UNSIGNED = frozenset({"unsigned char", "unsigned short", "unsigned int", "unsigned long", "unsigned long long",
                       "_Bool"})


@dataclass(frozen=True)
class _Global:
    """A global variable of the sources: its type as written and as the compiler holds it (``kind``, a name of
    :data:`_KINDS`), its shape (``()`` for a scalar), where it is defined, and why it cannot be a parameter."""

    name: str
    type: str
    kind: str
    shape: tuple[int, ...]
    source: str
    refused: str | None  # why it cannot be a parameter (static, const, ...), or None
    char_signed: bool = True  # the compiler's plain char (its ABI: signed on x86, not on ARM)

    @property
    def ctype(self):
        base = dict(_KINDS)[self.kind] or (ctypes.c_byte if self.char_signed else ctypes.c_ubyte)
        for n in reversed(self.shape):
            base = base * n
        return base

    @property
    def integer(self) -> bool:
        return self.kind not in _FLOATS

    @property
    def limits(self) -> tuple[float, float]:
        """The values the type holds: ``(low, high)``; a floating type's are its largest finite ones."""
        if self.kind == "_Bool":
            return 0, 1
        if not self.integer:
            top = float(np.finfo(np.float32).max) if self.kind == "float" else float(np.finfo(float).max)
            return -top, top
        bits = 8 * ctypes.sizeof(dict(_KINDS)[self.kind] or ctypes.c_byte)
        if self.kind in _UNSIGNED or (self.kind == "char" and not self.char_signed):
            return 0, 2**bits - 1
        return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1

    def range_words(self) -> str:
        """``"an unsigned short, 0 to 65,535"``: the type and the values it holds, for a message."""
        low, high = self.limits
        article = "an" if re.match(r"unsigned|int|[aeioAEIO]", self.type) else "a"  # a uint8_t, an unsigned int
        span = f"{low:,} to {high:,}" if self.integer else f"finite, within +-{high:.6g}"
        return f"{article} {self.type}, {span}"


def _file_scope(text: str) -> Iterator[str]:
    """The statements of a C file at file scope (comments, strings and function bodies left out)."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
    text = re.sub(r"\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'", '""', text)
    text = re.sub(r"^\s*#[^\n]*(?:\\\n[^\n]*)*", " ", text, flags=re.M)
    depth, start = 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            if depth == 0 and text[start:i].rstrip().endswith(")"):
                start = -1  # a function body: skip it
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and start == -1:
                start = i + 1
        elif ch == ";" and depth == 0:
            if start >= 0:
                yield text[start:i].strip()
            start = i + 1


def _top_level_split(text: str, at: str = ",") -> list[str]:
    """``text`` split at each ``at`` outside braces, brackets and parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        elif ch == at and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


# A preprocessor line marker: # LINE "FILE" FLAGS (flags 1 and 3: entering a system header).
_MARKER = re.compile(r'^#\s*\d+\s+"((?:\\.|[^"\\])*)"((?:\s+\d+)*)\s*$')
# GNU C's words around a declaration that say nothing of its type: attributes, asm names, alignment.
_GNU = re.compile(r"\b(?:__attribute__|__asm__|__asm|asm|_Alignas|__declspec)\s*\(")
_STORAGE = frozenset({"static", "extern", "typedef", "_Thread_local", "__thread", "register", "auto", "inline",
                      "__inline", "__inline__", "_Noreturn"})
_QUALIFIERS = frozenset({"const", "volatile", "restrict", "__restrict", "__restrict__", "__const", "__volatile__",
                         "_Atomic", "__extension__"})
_NAME = re.compile(r"([A-Za-z_]\w*)\s*$")


def _own_text(preprocessed: str) -> str:
    """The lines of a preprocessed source that come from the user's files (not system headers, not the compiler's).

    A file is a system header when the preprocessor enters it as one; a user's line that expands a system
    header's macro (``true``) is marked as its own file's, with the system flag: it is kept.
    """
    keep, out, system = True, [], set()
    for line in preprocessed.splitlines():
        marker = _MARKER.match(line)
        if marker:
            flags = marker[2].split()
            if "1" in flags and "3" in flags:
                system.add(marker[1])
            keep = marker[1] not in system and not marker[1].startswith("<")
            line = ""
        out.append(line if keep else "")
    return "\n".join(out)


def _without_gnu(text: str) -> str:
    """``text`` without GNU C's ``__attribute__((...))``, ``__asm__("...")`` and the like (balanced parentheses)."""
    while (found := _GNU.search(text)) is not None:
        depth, end = 0, len(text)
        for i in range(found.end() - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                end = i + 1
                break
        text = text[:found.start()] + " " + text[end:]
    return text


def _declarator(text: str) -> tuple[str, str, int] | None:
    """``(what comes before the name, the name, its number of [...])`` of a declarator (its initializer cut
    off), or None for a function, a function pointer or anything else that is no plain variable."""
    text = _top_level_split(text, "=")[0].rstrip()
    dims = 0
    while text.endswith("]"):
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            depth += {"]": 1, "[": -1}.get(text[i], 0)
            if depth == 0:
                text, dims = text[:i].rstrip(), dims + 1
                break
        else:
            return None
    name = _NAME.search(text)
    if name is None or "(" in text or ")" in text:
        return None
    return text[:name.start()], name[1], dims


def _variables(statement: str) -> list[tuple[str, str, int, str | None]]:
    """The variables a file-scope statement defines: ``(name, type as written, number of [...], why it cannot
    be a parameter or None)``; none for a typedef, an extern declaration, a function or a struct's definition."""
    statement = " ".join(_without_gnu(statement).split())
    parts = _top_level_split(statement)
    first = _declarator(parts[0])
    if first is None or "{" in first[0]:
        return []
    words = first[0].split()
    if "*" in first[0] or "typedef" in words or "extern" in words:
        return []
    written = " ".join(w for w in words if w not in _STORAGE and w not in _QUALIFIERS)
    if not written:
        return []
    refused = ("it is static (not visible outside its file): drop 'static' to set it from Python"
               if "static" in words else "it is const" if "const" in words or "__const" in words else
               "it is thread-local (each thread has its own)" if {"_Thread_local", "__thread"} & set(words) else None)
    out = [(first[1], written, first[2], refused)]
    for part in parts[1:]:
        more = _declarator(part)
        if more is not None and not more[0].strip():  # "*p" or "(*f)(void)": not a plain variable
            out.append((more[1], written, more[2], refused))
    return out


def _probe(unit: int, variables: list[tuple[str, str, int, str | None]]) -> str:
    """C that asks the compiler what each variable is: per variable its element's type (a code of
    :data:`_KINDS`, 0: none of them) and ``sizeof`` of it and of each of its array levels; first, whether
    plain ``char`` is signed.  Exported as ``long long crossdyn_probe<unit>[]``."""
    codes = ", ".join(f"{name}: {k}" for k, (name, _) in enumerate(_KINDS, start=1))
    values = ["(long long)((char)-1 < 0)"]
    for name, _, dims, _ in variables:
        element = name + "[0]" * dims
        values.append(f"__extension__ _Generic(({element}), {codes}, default: 0)")
        values += [f"(long long)sizeof({name}{'[0]' * level})" for level in range(dims + 1)]
    name = f"__attribute__((visibility(\"default\"))) const long long crossdyn_probe{unit}[]"
    return (f"/* crossdyn: what the compiler makes of the file-scope variables above (generated; declared first,\n"
            f"   for a user's -Wmissing-variable-declarations -Werror). */\n"
            f"__extension__ extern {name};\n__extension__ {name} = {{{', '.join(values)}}};")


def _answers(library: Path, found: list[tuple[str, list]]) -> dict[str, _Global]:
    """The globals of the sources, as the compiled library's probes answer (:func:`_probe`)."""
    lib = _load_fresh(library)
    try:
        out: dict[str, _Global] = {}
        for unit, (source, variables) in enumerate(found):
            size = 1 + sum(2 + dims for _, _, dims, _ in variables)
            try:
                answer, probed = list((ctypes.c_longlong * size).in_dll(lib, f"crossdyn_probe{unit}")), True
            except ValueError:  # no probe: it could not compile (each variable says why)
                answer, probed = [1] + [0] * (size - 1), False
            signed, at = bool(answer[0]), 1
            for name, written, dims, refused in variables:
                code, sizes = answer[at], answer[at + 1:at + 2 + dims]
                at += 2 + dims
                if probed and code == 0:
                    continue  # a struct, a pointer, an array typedef: not a number the chip holds
                kind = _KINDS[code - 1][0] if code else "int"
                shape = tuple(int(a // b) if b else 0 for a, b in zip(sizes[:-1], sizes[1:], strict=True))
                g = _Global(name, written, kind, shape, source, refused, signed)
                if g.refused is None and ctypes.sizeof(g.ctype) != sizes[0]:
                    g = dataclasses.replace(g, refused=f"its {sizes[0]} bytes are not the {ctypes.sizeof(g.ctype)} "
                                                       f"of {g.kind}{list(shape) if shape else ''} here")
                out[name] = g
        return out
    finally:
        _unload(lib)


def _read_globals(table: Path) -> dict[str, _Global]:
    """The globals stored beside a cached library (:func:`_build`)."""
    records = json.loads(table.read_text())
    return {r["name"]: _Global(**{**r, "shape": tuple(r["shape"])}) for r in records}


def _load_fresh(library: Path) -> ctypes.CDLL:
    """A fresh copy of ``library`` (its own globals at their initial values): a file of its own, as the
    dynamic loader shares a library opened twice under one file."""
    # Beside the cached library: a folder the user's libraries load from (a /tmp mounted noexec would not do).
    fd, copy = tempfile.mkstemp(prefix="run-", suffix=".so", dir=library.parent)
    try:
        with os.fdopen(fd, "wb") as out, open(library, "rb") as src:
            shutil.copyfileobj(src, out)
        return ctypes.CDLL(copy, mode=ctypes.RTLD_LOCAL)
    except OSError as exc:
        raise CompileError(f"cannot load the compiled controller {library}: {exc}") from None
    finally:
        os.unlink(copy)


def _unload(lib: ctypes.CDLL | None) -> None:
    """Close a run's copy of the library (a sweep's runs would otherwise keep every copy mapped)."""
    close = getattr(_ctypes, "dlclose", None)  # CPython on Linux and macOS
    if lib is not None and close is not None:
        close(lib._handle)


def _close_all(libs: list[ctypes.CDLL | None]) -> None:
    for lib in libs:
        _unload(lib)
    libs[:] = [None] * len(libs)


class CParams(MutableMapping):
    """A C controller's global variables, set and read by name (``c.params["k_theta"] = 12.0``).

    Values set here are written into the library's globals at each run's start
    (before ``reset``); reading gives the value set, or the initial value in the
    source.  Arrays are NumPy arrays of the global's shape.  Deleting a name
    returns it to its initial value.
    """

    def __init__(self, globals_: dict[str, _Global], label: str, library: Path, open_: list[ctypes.CDLL | None]):
        # What it needs of its controller, not the controller itself: no reference cycle, so a dropped
        # controller is freed (its libraries closed) at once.
        self._globals, self._label, self._library, self._open = globals_, label, library, open_
        self._set: dict[str, Any] = {}

    def _global(self, name: str) -> _Global:
        known = self._globals
        if name not in known:
            usable = ", ".join(sorted(n for n, g in known.items() if g.refused is None)) or "none"
            raise KeyError(f"{name!r} is not a global variable of {self._label} (its globals: {usable})")
        g = known[name]
        if g.refused:
            raise KeyError(f"global {name!r} of {g.source} cannot be a parameter: {g.refused}")
        return g

    def __getitem__(self, name: str):
        g = self._global(name)
        if name in self._set:
            value = self._set[name]
            return value.copy() if isinstance(value, np.ndarray) else value
        return _read(self._initial(), g)

    def __setitem__(self, name: str, value) -> None:
        g = self._global(name)
        self._set[name] = _checked(g, value)

    def __delitem__(self, name: str) -> None:
        self._global(name)
        self._set.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(n for n, g in self._globals.items() if g.refused is None))

    def __len__(self) -> int:
        return sum(g.refused is None for g in self._globals.values())

    def _initial(self) -> ctypes.CDLL:
        """A copy of the library no run touches: the globals' initial values (loaded on first use)."""
        lib = self._open[0]
        if lib is None:
            lib = self._open[0] = _load_fresh(self._library)
        return lib

    def _write(self, lib: ctypes.CDLL) -> None:
        for name, value in self._set.items():
            g = self._globals[name]
            target = g.ctype.in_dll(lib, name)
            if g.shape:
                np.ctypeslib.as_array(target)[...] = value
            else:
                target.value = value


def _read(lib: ctypes.CDLL, g: _Global):
    target = g.ctype.in_dll(lib, g.name)
    if g.shape:
        return np.ctypeslib.as_array(target).copy()
    return target.value


def _checked(g: _Global, value):
    """``value`` as the chip holds it in the global (a number, or an array of its shape), or ParameterError:
    a value outside the type's range is refused, never wrapped or rounded to another (70000 in an
    ``unsigned short`` would run as 4464)."""
    where = f"global {g.name} of {g.source} is {g.range_words()}"
    if not g.shape:
        return _one(g, value, where)
    try:
        array = np.array(value, dtype=object if g.integer else float)  # integers exactly, whatever their size
    except (TypeError, ValueError):
        raise ParameterError(f"{where}, shape {list(g.shape)}; got {value!r}") from None
    if array.shape != g.shape:
        raise ParameterError(f"global {g.name} of {g.source} has shape {g.shape}; got an array of {array.shape}")
    base = g.ctype
    while hasattr(base, "_type_") and hasattr(base, "_length_"):  # the element type of a ctypes array type
        base = base._type_
    items = [_one(g, item, where) for item in array.ravel()]
    return np.array(items, dtype=np.dtype(base)).reshape(g.shape)


def _one(g: _Global, value, where: str):
    """One number as the global's type holds it, or ParameterError naming the global, its type and range."""
    if isinstance(value, (bool, np.bool_)) and g.kind != "_Bool":
        raise ParameterError(f"{where}; got {value!r}, a boolean")
    if not isinstance(value, (int, float, np.integer, np.floating, bool, np.bool_)):
        raise ParameterError(f"{where}; got {value!r}")
    low, high = g.limits
    if not isfinite(float(value)):
        raise ParameterError(f"{where}; got {value!r}, not finite")
    if g.integer:
        if float(value) != int(value):
            raise ParameterError(f"{where}; got {value!r}, not a whole number")
        if not low <= int(value) <= high:
            raise ParameterError(f"{where}; got {int(value):,}, outside its range")
        return bool(value) if g.kind == "_Bool" else int(value)
    if not low <= float(value) <= high:
        raise ParameterError(f"{where}; got {float(value):.6g}, outside its range")
    return float(np.float32(value)) if g.kind == "float" else float(value)


class CController:
    """A controller written in C, run in the closed loop like a Python one.

    Args:
      sources: the C file, or several (paths).
      function: the step function's name.
      inputs: what it reads, one pointer argument each, in order: ``"qpos"`` ``(nq,)``,
        ``"qvel"`` ``(nv,)``, ``"sensordata"`` ``(nsensordata,)`` (after the loop's
        imperfections), ``"sensor:<name>"`` one sensor's ``(dim,)``.  Its last
        argument is ``ctrl``, ``(nu,)`` in actuator order.
      signature: the step function's C declaration, when it is not all double, e.g.
        ``"void step(float t, const float *qpos, const float *qvel, float *ctrl);"``
        (``int`` return: nonzero is a fault).
      reset: a ``void f(void)`` called at each run's start, after ``params`` are written.
      include_dirs: ``-I`` folders.
      defines: ``-D`` definitions, ``"NAME"`` or ``"NAME=VALUE"`` (or a dict).
      flags: further compiler flags (e.g. ``["-std=c99", "-Wall"]``).

    Attributes:
      params: the sources' global variables by name (:class:`CParams`).
      library: the compiled shared library (in the cache).

    Raises:
      CompileError: no compiler, or the sources do not compile (``file:line: message``).
      ParameterError: a missing source, an unknown input, a signature that does not fit the
        inputs; at a run's start, a ``sensor:<name>`` the model does not have.
    """

    def __init__(self, sources: str | os.PathLike | Sequence[str | os.PathLike], function: str = "step", *,
                 inputs: Sequence[str] = ("qpos", "qvel"), signature: str | None = None, reset: str | None = None,
                 include_dirs: Iterable[str | os.PathLike] = (), defines: Iterable[str] | Mapping[str, Any] = (),
                 flags: Iterable[str] = ()):
        given = [sources] if isinstance(sources, (str, os.PathLike)) else list(sources)
        if not given:
            raise ParameterError("CController needs at least one C source file")
        paths = []
        for s in given:
            path = Path(s)
            if not path.is_file():
                raise ParameterError(f"C source {s}: no such file")
            paths.append(path.resolve())
        names = {str(p): str(s) for p, s in zip(paths, given, strict=True)}
        if not re.fullmatch(r"[A-Za-z_]\w*", function or ""):
            raise ParameterError(f"function {function!r} is not a C name")
        if reset is not None and not re.fullmatch(r"[A-Za-z_]\w*", reset):
            raise ParameterError(f"reset {reset!r} is not a C name")
        self.inputs = tuple(inputs)
        for name in self.inputs:
            if name not in ("qpos", "qvel", "sensordata") and not (name.startswith("sensor:") and len(name) > 7):
                raise ParameterError(f"input {name!r}: expected qpos, qvel, sensordata or sensor:<name>")
        self.signature = _signature(signature, function, len(self.inputs))
        self.function, self.reset = function, reset
        self.label = ", ".join(str(s) for s in given)
        define_list = ([f"{k}" if v is None else f"{k}={v}" for k, v in defines.items()]
                       if isinstance(defines, Mapping) else [str(d) for d in defines])
        dirs = [Path(d).resolve() for d in include_dirs]
        for d in dirs:
            if not d.is_dir():
                raise ParameterError(f"include directory {d}: no such folder")
        declarations = self.signature.prototype() + (f" void {reset}(void);" if reset else "")
        self.library, self._globals = _build(paths, _shim(self.signature, reset), declarations, dirs, define_list,
                                             [str(f) for f in flags], names)
        # The copies of the library this controller has open: [the one params reads initial values from or None,
        # the last run's or None]; closed when the controller is collected (a sweep makes one per run).
        self._open: list[ctypes.CDLL | None] = [None, None]
        weakref.finalize(self, _close_all, self._open)
        self.params = CParams(self._globals, self.label, self.library, self._open)
        self._lib: ctypes.CDLL | None = None
        self._step: Any = None
        self._sensed: np.ndarray | None = None
        self._command: np.ndarray | None = None

    def __repr__(self) -> str:
        return f"CController({self.label!r}, {self.function!r}, inputs={self.inputs!r})"

    def __copy__(self) -> CController:
        """Another controller of the same compiled library and parameter values, with copies of the library of
        its own (its globals and statics apart from this one's): what each of several runs at once needs."""
        other = object.__new__(CController)
        other.inputs, other.signature, other.function, other.reset = self.inputs, self.signature, self.function, \
            self.reset
        other.label, other.library, other._globals = self.label, self.library, self._globals
        other._open = [None, None]
        weakref.finalize(other, _close_all, other._open)
        other.params = CParams(self._globals, self.label, self.library, other._open)
        other.params._set = {name: value.copy() if isinstance(value, np.ndarray) else value
                             for name, value in self.params._set.items()}
        other._lib, other._step, other._sensed, other._command = None, None, None, None
        return other

    def as_params(self, ranges: Mapping[str, tuple[float | None, float | None]] | None = None) -> dict[str, Param]:
        """The scalar globals as an experiment's ``--set`` / ``crossdyn tune`` parameters.

        Args:
          ranges: accepted ``(low, high)`` by global name; the globals named here
            only, or every scalar global when None (unbounded).

        Returns:
          ``{name: Param}``; an experiment passes the values on with :meth:`set_params`.
        """
        wanted = list(ranges) if ranges is not None else [n for n in self.params if not self._globals[n].shape]
        out = {}
        for name in wanted:
            g = self.params._global(name)
            if g.shape:
                raise ParameterError(f"global {name} of {g.source} is an array; only scalars can be --set")
            low, high = (ranges or {}).get(name, (None, None))
            if g.integer:  # the type's own range bounds what --set may give
                low = g.limits[0] if low is None else max(low, g.limits[0])
                high = g.limits[1] if high is None else min(high, g.limits[1])
            default = self.params[name]
            out[name] = Param(float(default) if not g.integer else int(default),
                              f"{g.type} {name} of {g.source}", low, high)
        return out

    def set_params(self, values: Mapping[str, Any]) -> CController:
        """Set every global named in ``values`` (others, such as an experiment's own parameters, are skipped)."""
        for name, value in values.items():
            if name in self._globals and self._globals[name].refused is None:
                self.params[name] = value
        return self

    def start(self, model, data) -> None:
        """A run starts: a fresh copy of the library, ``params`` written, ``reset`` called, the inputs bound."""
        lib = _load_fresh(self.library)
        _unload(self._lib)
        self._lib = self._open[1] = lib
        self.params._write(lib)
        if self.reset:
            lib.crossdyn_reset()
        self._bind_input = lib.crossdyn_bind_input
        self._bind_input.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long)
        self._bind_input.restype = None
        self._bind_output = lib.crossdyn_bind_output
        self._bind_output.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long)
        self._bind_output.restype = None
        step = lib.crossdyn_step
        step.argtypes = (ctypes.c_double,)  # one argument: each one costs the call a conversion
        step.restype = ctypes.c_int
        self._step, self._fault = step, lib.crossdyn_fault
        self._data, self._nu = data, model.nu
        self._slices = {}
        sensors = {model.sensor(i).name: (int(model.sensor_adr[i]), int(model.sensor_dim[i]))
                   for i in range(model.nsensor)}
        for k, name in enumerate(self.inputs):
            if name.startswith("sensor:"):
                if name[7:] not in sensors:
                    raise ParameterError(f"input {name!r}: the model has no sensor {name[7:]!r} (its sensors: "
                                         f"{', '.join(sensors) or 'none'})")
                self._slices[k] = sensors[name[7:]]
        self._buffers = []
        for k, (name, arg) in enumerate(zip(self.inputs, self.signature.inputs, strict=True)):
            size = {"qpos": model.nq, "qvel": model.nv, "sensordata": model.nsensordata}.get(name)
            size = self._slices[k][1] if size is None else size
            self._buffers.append(np.zeros(max(size, 1), dtype=np.float32 if arg.type == "float" else np.float64))
            if name in ("qpos", "qvel"):
                self._bind_input(k, getattr(data, name).ctypes.data, self._buffers[k].ctypes.data, size)
        self._out = np.zeros(max(model.nu, 1), dtype=np.float32 if self.signature.output.type == "float" else float)
        self._sensed = self._command = None

    def _bind(self, sensed: np.ndarray, command: np.ndarray) -> None:
        for k, name in enumerate(self.inputs):
            if name == "sensordata":
                self._bind_input(k, sensed.ctypes.data, self._buffers[k].ctypes.data, sensed.size)
            elif k in self._slices:
                adr, dim = self._slices[k]
                self._bind_input(k, sensed.ctypes.data + adr * sensed.itemsize, self._buffers[k].ctypes.data, dim)
        self._bind_output(command.ctypes.data, self._out.ctypes.data, self._nu)
        self._sensed, self._command = sensed, command

    def write_command(self, t: float, sensed: np.ndarray, command: np.ndarray) -> bool:
        """One control step: ``command`` ``(nu,)`` written by the C function from the inputs at time ``t`` (s).

        Raises:
          ControllerError: the control is not finite, or the function returned nonzero.
        """
        if sensed is not self._sensed or command is not self._command:
            self._bind(sensed, command)
        result = self._step(t)
        if result == 1:
            return True
        self.failed(result, t, command)
        return False  # not reached: failed() raises

    def step_address(self, sensed: np.ndarray, command: np.ndarray) -> int:
        """The address of this run's ``int crossdyn_step(double t)``, inputs and output bound (the compiled loop's)."""
        if sensed is not self._sensed or command is not self._command:
            self._bind(sensed, command)
        return int(ctypes.cast(self._step, ctypes.c_void_p).value or 0)

    def failed(self, result: int, t: float, command: np.ndarray) -> None:
        """Raise the error of a step result other than 1 (fine) at time ``t`` (s): always a ControllerError."""
        if result == 2:
            raise ControllerError(f"C controller {self.function}() in {self.label} returned a non-finite control at "
                                  f"t = {t:.6g} s: {command.tolist()}")
        raise ControllerError(f"C controller {self.function}() in {self.label} returned {self._fault()} (a fault) "
                              f"at t = {t:.6g} s")
