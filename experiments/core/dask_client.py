"""A Dask distributed client for sweeps, bounded: every way the cluster can fail is one line, never a hang.

Left to Dask's defaults, a wrong ``--scheduler`` address hangs or ends in a
traceback (a TCP service that is not Dask, a scheduler with no workers, a
``tls://`` address, a scheduler killed mid-run).  :func:`connect` checks the
address, asks what answers who it is and waits a bounded time for a worker;
:func:`results` yields results as they finish; :func:`close` does not wait long
for a scheduler that is gone.  Each failure is a :class:`DaskError` (one line, exit 2).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Iterable, Iterator

from .errors import CrossdynError

__all__ = ["DaskError", "connect", "results", "close", "CONNECT_TIMEOUT_S", "WORKERS_TIMEOUT_S"]

# Seconds for the scheduler to answer who it is: a scheduler on a LAN answers in milliseconds.
CONNECT_TIMEOUT_S = 5.0
# Seconds to wait for a first worker: a cluster being started brings workers up within this.
WORKERS_TIMEOUT_S = 30.0
# Seconds to close a client: a scheduler that is gone would otherwise hold the exit for Dask's 10 s.
CLOSE_TIMEOUT_S = 2.0


class DaskError(CrossdynError):
    """The Dask cluster cannot be used: a bad address, no scheduler, no workers, or lost mid-run."""


def _distributed():
    try:
        import distributed  # late: Dask is optional (the dask extra), and only --scheduler needs it
    except ImportError:
        raise DaskError("--scheduler needs Dask: pip install -e '.[dask]'") from None
    return distributed


def _reason(exc: BaseException) -> str:
    """An exception in a few words: ``CommClosedError: ...``; a cancelled future by its reason alone."""
    reason = getattr(exc, "reason", None)
    if reason:  # FutureCancelledError: its text names the task's key
        return f"{type(exc).__name__}: {reason}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def check_address(address: str) -> None:
    """Refuse what is not ``tcp://HOST:PORT`` (a ``tls://`` scheduler needs certificates crossdyn does not take)."""
    comm = _distributed().comm
    try:
        scheme, where = comm.parse_address(address, strict=True)
        comm.parse_host_port(where)  # raises without a port
    except (ValueError, TypeError) as exc:
        raise DaskError(f"bad Dask scheduler address {address!r} ({exc}); expected tcp://HOST:PORT") from None
    if scheme == "tls":
        raise DaskError(f"--scheduler {address}: a TLS scheduler needs certificates, which crossdyn does not take; "
                        "reach it as tcp://HOST:PORT (for example through an SSH tunnel)")
    if scheme != "tcp":
        raise DaskError(f"--scheduler {address}: only tcp:// schedulers are supported; expected tcp://HOST:PORT")


async def _identity(address: str, timeout: float) -> dict:
    comm = await _distributed().comm.connect(address, timeout=timeout)
    try:
        await comm.write({"op": "identity", "reply": True})
        return await comm.read()
    finally:
        comm.abort()


def identify(address: str, timeout: float) -> dict:
    """What answers at ``address``, by Dask's ``identity`` call, within ``timeout`` seconds.

    Raises:
      DaskError: nothing listens (refused at once, not after Dask's retries), nothing
        answers, or what answers is not a Dask scheduler.
    """
    comm = _distributed().comm
    host, port = comm.parse_host_port(comm.parse_address(address)[1])
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise DaskError(f"cannot reach the Dask scheduler at {address}: {exc.strerror or _reason(exc)}") from None
    try:
        info = asyncio.run(asyncio.wait_for(_identity(address, timeout), timeout))
    except (asyncio.TimeoutError, TimeoutError):
        raise DaskError(f"no Dask scheduler answered at {address} within {timeout:g} s (is it running, and is "
                        "this its address?)") from None
    except OSError as exc:
        raise DaskError(f"cannot reach the Dask scheduler at {address}: {_reason(exc)}") from None
    except Exception:  # a service speaking another protocol: its bytes do not parse as Dask's frames
        raise DaskError(f"{address} does not answer as a Dask scheduler (its reply is not Dask's protocol)") from None
    if not isinstance(info, dict) or info.get("type") != "Scheduler":
        kind = info.get("type") if isinstance(info, dict) else type(info).__name__
        raise DaskError(f"{address} is not a Dask scheduler (it answers as {kind!r})")
    return info


def connect(address: str, *, timeout: float | None = None, workers_timeout: float | None = None):
    """A ``distributed.Client`` of the scheduler at ``address``, with at least one worker.

    Raises:
      DaskError: Dask is not installed; the address is not ``tcp://HOST:PORT``;
        nothing answers within ``timeout`` (default :data:`CONNECT_TIMEOUT_S`) or
        it is not a Dask scheduler; no worker joins within ``workers_timeout``.
    """
    distributed = _distributed()
    timeout = CONNECT_TIMEOUT_S if timeout is None else timeout
    workers_timeout = WORKERS_TIMEOUT_S if workers_timeout is None else workers_timeout
    check_address(address)
    identify(address, timeout)
    _quiet()
    try:
        client = distributed.Client(address, timeout=f"{timeout}s", set_as_default=False)
    except Exception as exc:
        _restore()
        raise DaskError(f"cannot connect to the Dask scheduler at {address}: {_reason(exc)}") from None
    try:
        client.wait_for_workers(1, timeout=workers_timeout)
    except Exception as exc:  # TimeoutError, or the scheduler went away meanwhile
        close(client)
        if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
            raise DaskError(f"the Dask scheduler at {address} has no workers (waited {workers_timeout:g} s); "
                            f"start some with: dask worker {address}") from None
        raise DaskError(f"lost the Dask scheduler at {address} while waiting for workers: {_reason(exc)}") from None
    return client


def close(client) -> None:
    """Close ``client`` within :data:`CLOSE_TIMEOUT_S`, whatever state the scheduler is in; Dask's logging restored."""
    with contextlib.suppress(Exception):
        client.close(timeout=CLOSE_TIMEOUT_S)
    _restore()


def _restore() -> None:
    for name, level in _SAVED_LEVELS.items():
        logging.getLogger(name).setLevel(level)
    _SAVED_LEVELS.clear()


# Dask's client loggers: a lost scheduler makes them print tracebacks of its reconnection
# attempts, beside the one line crossdyn prints.  Silenced while a client is open.
_DASK_LOGGERS = ("distributed", "distributed.client", "distributed.comm", "distributed.core", "distributed.batched",
                 "distributed.utils")
_SAVED_LEVELS: dict[str, int] = {}


def _quiet() -> None:
    for name in _DASK_LOGGERS:
        logger = logging.getLogger(name)
        _SAVED_LEVELS.setdefault(name, logger.level)
        logger.setLevel(logging.CRITICAL + 1)


def results(client, fn: Callable, items: Iterable, *, address: str | None = None) -> Iterator:
    """``fn(item)`` for each item on the cluster, yielded as each finishes; queued tasks cancelled when closed early.

    Raises:
      DaskError: the scheduler was lost mid-run, or a worker died running a task;
        the results yielded so far stand.
      Exception: what ``fn`` itself raised, as it raised it.
    """
    distributed = _distributed()
    where = address or getattr(getattr(client, "scheduler", None), "address", None) or "the scheduler"
    lost = (distributed.client.FutureCancelledError, asyncio.CancelledError, OSError, TimeoutError,
            asyncio.TimeoutError, distributed.comm.CommClosedError)
    futures = []
    try:
        futures = client.map(fn, list(items), pure=False)
        for future in distributed.as_completed(futures, loop=client.loop):
            yield future.result()
    except distributed.KilledWorker as exc:
        raise DaskError(f"a Dask worker of {where} died running a task ({_reason(exc)}); the rows finished so far "
                        "are kept") from None
    except lost as exc:
        raise DaskError(f"lost the Dask scheduler at {where} mid-run ({_reason(exc)}); the rows finished so far "
                        "are kept: the same command runs the rest") from None
    finally:
        with contextlib.suppress(Exception):
            client.cancel([f for f in futures if not f.done()])
