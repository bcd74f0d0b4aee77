"""The closed loop in C, for a compiled controller run as it is: the step loop without Python in it.

:func:`~.simulate.simulate` uses it for a :class:`~.kinds.CompiledController` (one with a C
step function) when nothing else of the run needs Python between steps, with the run set
up as for any other (:mod:`.setup`).  Each control step does what the Python loop does, in
the same order and arithmetic, so the trace is the Python loop's bit for bit.  The loop is compiled once per MuJoCo
version and compiler against the ``mujoco`` package's headers and calls the
bindings' own ``mj_step`` (the same warning handler); ctypes' ``PyDLL`` keeps the
interpreter lock held, as MuJoCo's Python warning callback needs.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import hashlib
import tempfile
from pathlib import Path

import mujoco
import numpy as np

from ..c_controller import (
    CompileError,
    cache_dir,
    compiler,
    compiler_identity,
    run_compiler,
    store,
)

__all__ = ["available", "run_steps", "FINE", "DIVERGED", "REFUSED"]

# Why the loop ended (besides the controller's own step result, returned as is).
FINE, DIVERGED, REFUSED = 0, -1, -2

_SOURCE = r"""
/* crossdyn's closed loop for compiled controllers (generated; see crossdyn.experiments.core.loop.compiled). */
#include <math.h>
#include <string.h>
#include <mujoco/mujoco.h>

typedef void (*crossdyn_mj_step)(const mjModel *, mjData *);
typedef int (*crossdyn_control)(double);

/* Rows recorded; *why: 0 ran to the end, -1 diverged, -2 MuJoCo refused a control, else the controller's
   result other than 1 (its step, at d->time, was not recorded). */
long crossdyn_run(const mjModel *m, mjData *d, crossdyn_mj_step mj_step_, crossdyn_control control, long n, int per,
                  double *times, double *table, long width, int nparts, double *const *src, const long *len, int *why)
{
    long i, j;
    int k, s;
    for (i = 0; i < n; ++i) {
        double t = d->time, sum = 0.0, *row = table + i * width;
        int result = control(t), counted;
        if (result != 1) { *why = result; return i; }
        times[i] = t;
        for (k = 0; k < nparts; ++k) { memcpy(row, src[k], (size_t)len[k] * sizeof(double)); row += len[k]; }
        counted = d->warning[mjWARN_BADCTRL].number;
        for (s = 0; s < per; ++s) mj_step_(m, d);
        if (d->warning[mjWARN_BADCTRL].number != counted) { *why = -2; return i; }
        for (j = 0; j < m->nv; ++j) sum += d->qacc[j];
        if (d->warning[mjWARN_BADQACC].number || d->warning[mjWARN_BADQPOS].number
            || d->warning[mjWARN_BADQVEL].number || !isfinite(sum)) { *why = -1; return i + 1; }
    }
    *why = 0;
    return n;
}
"""


@functools.lru_cache(maxsize=1)
def _library() -> tuple[ctypes.PyDLL, int]:
    """The compiled loop and ``mj_step``'s address in the MuJoCo library the bindings use.

    Raises:
      CompileError: no C compiler, or the loop does not build against the package's headers.
    """
    package = Path(mujoco.__file__).parent
    cc = compiler()
    key = hashlib.sha256(f"{_SOURCE}|{mujoco.__version__}|{compiler_identity(cc)}".encode()).hexdigest()[:32]
    library = cache_dir() / f"loop-{key}.so"
    if not library.is_file():
        with tempfile.TemporaryDirectory(prefix="crossdyn-loop-") as tmp:
            source, out = Path(tmp) / "crossdyn_loop.c", Path(tmp) / "loop.so"
            source.write_text(_SOURCE)
            run_compiler([cc, "-O2", "-fPIC", "-shared", f"-I{package / 'include'}", str(source), "-o", str(out)],
                     {str(source): "crossdyn_loop.c"})
            store(out, library)
    lib = ctypes.PyDLL(str(library))
    lib.crossdyn_run.restype = ctypes.c_long
    lib.crossdyn_run.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long,
                                 ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long, ctypes.c_int,
                                 ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int))
    # The bindings' own copy of MuJoCo (already loaded: dlopen returns it, not a second copy).
    found = glob.glob(str(package / "libmujoco.so*")) or glob.glob(str(package / "libmujoco*.dylib"))
    if not found:
        raise CompileError(f"no MuJoCo shared library in {package}: the compiled loop cannot call mj_step")
    step = ctypes.cast(ctypes.CDLL(found[0]).mj_step, ctypes.c_void_p).value
    return lib, int(step or 0)


@functools.lru_cache(maxsize=1)
def available() -> bool:
    """Whether the compiled loop builds here (a C compiler, and MuJoCo's headers and library in its package);
    where it does not, a compiled controller steps in the Python loop instead, the same rows."""
    try:
        _library()
    except (CompileError, OSError, AttributeError):
        return False
    return True


def run_steps(model: mujoco.MjModel, data: mujoco.MjData, control: int, n: int, per: int, times: np.ndarray,
              table: np.ndarray, parts: tuple[np.ndarray, ...]) -> tuple[int, int]:
    """Run up to ``n`` control steps in C.

    Args:
      model, data: the run's model and data (``data`` advanced in place).
      control: the address of the controller's ``int step(double t)`` (1: fine),
        which reads its inputs from and writes ``data.ctrl`` itself.
      n: control steps; per: physics steps each.
      times: ``(n,)`` each recorded step's time, s, written.
      table: ``(n, width)`` C-contiguous float64, each row the ``parts`` concatenated, written.
      parts: the row's arrays, each contiguous float64 (views into ``data``).

    Returns:
      ``(rows recorded, why)``: why is :data:`FINE`, :data:`DIVERGED`, :data:`REFUSED`
      or the controller's result other than 1 (then its step was not recorded).
    """
    lib, step = _library()
    pointers = (ctypes.c_void_p * len(parts))(*(p.ctypes.data for p in parts))
    lengths = np.array([p.size for p in parts], dtype=np.int64)
    why = ctypes.c_int(0)
    rows = lib.crossdyn_run(model._address, data._address, step, control, n, per, times.ctypes.data,
                            table.ctypes.data, table.shape[1], len(parts), pointers, lengths.ctypes.data,
                            ctypes.byref(why))
    return int(rows), why.value
