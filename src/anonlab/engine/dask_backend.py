"""The Dask engine: the same kernels as tasks on a ``dask.distributed`` cluster.

Without a ``scheduler`` address the engine starts a ``LocalCluster`` of
``workers`` processes (one thread each) with ``memory_limit`` bytes each;
with one it joins that cluster. Every piece of the table is one task; the
pieces' partial frequency sets are united by a tree of merge tasks
(``split_every`` at a time, consecutive pieces together, so the order of
first appearance is kept; :mod:`anonlab.engine.kernels`), and only the final
set comes back to this process. Writing tasks write one Parquet part per
piece into a staged folder that this process renames when all succeeded, so
the workers must see the same file system (a local cluster does).

A worker that dies takes its results with it; the scheduler recomputes them
from the pieces, so the result is the same. A worker that keeps dying
(``distributed.scheduler.allowed-failures``, 3 by default), or a lost connection
to a worker that died or was killed (``CommClosedError``, ``StreamClosedError``),
ends the run with a one-line error naming ``memory_limit`` (the usual cause: a
worker killed for using more memory than it may) and fewer workers as the cure.
A merge that would need more than :data:`~anonlab.engine.kernels.MEMORY_SHARE`
of a worker's memory limit is refused before it starts, with the same
parameter named.

A scheduler address is checked before it is joined (:func:`check_address`):
it must read ``scheme://host:port`` (``tcp``, ``tls``...) and hold no user
name or password (a Dask address never does; a message shows such a password
as ``***``). Nothing but the one error line reaches standard error when the
scheduler cannot be joined.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from anonlab.engine import kernels
from anonlab.engine.base import EngineBase, parse_memory_limit
from anonlab.engine.numpy_backend import too_large, unknown_value
from anonlab.engine.table import BATCH_ROWS, FramePiece, Table
from anonlab.errors import AnonlabError, first_line
from anonlab.progress import ProgressFn, report_to

#: below this a Dask worker process (Python, NumPy, pandas, pyarrow loaded) cannot run
MIN_WORKER_MEMORY = 256 * 2**20
SPLIT_EVERY = kernels.SPLIT_EVERY
#: seconds to reach a scheduler (and to wait for its first worker) when none is given
CONNECT_TIMEOUT = 10.0


class RemoteError(Exception):
    """An :class:`AnonlabError` raised on a worker, carried back with its parameter."""

    def __init__(self, message: str, parameter: str | None) -> None:
        super().__init__(message, parameter)
        self.message = message
        self.parameter = parameter


def on_worker(kernel: Callable[..., Any], *args: Any) -> Any:
    """Run ``kernel(*args)`` on a worker; an AnonlabError travels back as a RemoteError
    (an exception is pickled by its ``args``, which would lose ``parameter``), and so does
    an ``OSError``, as one line naming the worker (:func:`worker_os_error`)."""
    try:
        return kernel(*args)
    except AnonlabError as exc:
        raise RemoteError(exc.message, exc.parameter) from None
    except OSError as exc:
        if exc.errno not in _FILE_ERRORS:
            raise  # a lost connection is the engine's to report (_worker_deaths)
        raise worker_os_error(args[0] if args else None, exc) from None


#: the errors of a file a worker cannot reach: missing, forbidden, read-only, full disk
_FILE_ERRORS = frozenset(
    {
        errno.ENOENT,
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.ENOSPC,
        errno.EISDIR,
        errno.ENOTDIR,
    }
)


def worker_os_error(piece: object, exc: OSError) -> RemoteError:
    """A file error met on a worker while it worked on ``piece``: reading the piece's file
    (``input``: every worker needs the input at the same path), or writing."""
    from distributed import get_worker

    try:
        worker = get_worker().address
    except ValueError:  # not on a worker (the engine's own process)
        worker = "this process"
    reason = getattr(exc, "strerror", None) or first_line(exc)
    path = getattr(piece, "path", None)
    if isinstance(path, str) and (exc.filename == path or path in str(exc)):
        return RemoteError(
            f"input: worker {worker} cannot read piece "
            f"{getattr(piece, 'index', '?')} of '{path}' ({reason}): every "
            "worker needs the input at that path, on a file system all the "
            "machines share",
            "input",
        )
    return RemoteError(
        f"worker {worker} cannot write its part of the output ({reason}): "
        "every worker needs the output's folder at the same path, on a file "
        "system all the machines share",
        None,
    )


def frame_task(kernel: Callable[..., Any], index: int, frame: Any, *args: Any) -> Any:
    """A kernel on one partition of a Dask DataFrame (the piece made on the worker)."""
    return on_worker(kernel, FramePiece(index, frame), *args)


def warm_worker() -> None:
    """Import what the kernels use, once per worker, before the first task is timed."""
    import pandas  # noqa: F401
    import pyarrow.compute
    import pyarrow.csv
    import pyarrow.parquet  # noqa: F401

    import anonlab.tabletext  # noqa: F401


def merge_task(
    budget: int | None, *parts: kernels.PartialFrequencySet
) -> kernels.PartialFrequencySet:
    """One node of the merge tree."""
    return kernels.merge_partials(parts, budget)


class DaskEngine(EngineBase):
    """Runs every pass as Dask tasks (see the module text).

    ``scheduler`` is an address such as ``tcp://host:8786`` (``connect_timeout``
    seconds to reach it, :data:`CONNECT_TIMEOUT` by default); otherwise a local
    cluster of ``workers`` processes (default: one per core) of ``memory_limit``
    each (bytes or ``"4GB"``; default: Dask's share of this machine's memory)
    is started, threads instead of processes with ``processes=False``. With a
    scheduler, ``memory_limit`` caps the memory the engine plans a task with
    (the workers' own limits are read from the scheduler).
    """

    name = "dask"

    def __init__(
        self,
        *,
        scheduler: str | None = None,
        workers: int | None = None,
        memory_limit: int | str | None = None,
        processes: bool = True,
        threads_per_worker: int = 1,
        batch_rows: int = BATCH_ROWS,
        split_every: int = SPLIT_EVERY,
        connect_timeout: float | None = None,
    ) -> None:
        limit = parse_memory_limit(memory_limit)
        if split_every < 2:
            raise AnonlabError(
                f"split_every must be at least 2 (got {split_every})", parameter="split_every"
            )
        self.cluster: Any = None
        if scheduler is not None:
            if workers is not None:
                raise AnonlabError(
                    "workers applies to a local cluster only: leave workers out "
                    "when joining a scheduler (its workers are its own)",
                    parameter="workers",
                )
            timeout = CONNECT_TIMEOUT if connect_timeout is None else connect_timeout
            self.client = _connect(scheduler, timeout)
        else:
            self.cluster, self.client = _local_cluster(
                workers, limit, processes, threads_per_worker
            )
        self.memory_limit = limit
        try:
            with self._worker_deaths():
                self.memory_limit = _effective_limit(self.client, limit)
                self.client.run(warm_worker)
        except BaseException:
            self.close()
            raise
        budget = (
            None if self.memory_limit is None else int(self.memory_limit * kernels.MEMORY_SHARE)
        )
        super().__init__(batch_rows=batch_rows, budget=budget)
        self.split_every = split_every

    def close(self) -> None:
        """Close the client, and the local cluster if this engine started it."""
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None

    # backend primitives -------------------------------------------------------

    def _leaves(self, table: Table, kernel: Callable[..., Any], *args: Any) -> list[Any]:
        """One future per piece: ``kernel(piece, *args)``."""
        if table.dask_frame is not None:
            from dask.delayed import delayed

            tasks = [
                delayed(frame_task, pure=False)(kernel, i, part, *args)
                for i, part in enumerate(table.dask_frame.to_delayed())
            ]
            return list(self.client.compute(tasks))
        return [
            self.client.submit(on_worker, kernel, piece, *args, pure=False)
            for piece in table.pieces
        ]

    def map_pieces(
        self,
        table: Table,
        kernel: Callable[..., Any],
        *args: Any,
        progress: ProgressFn | None = None,
        step: str = "reading pieces",
    ) -> list[Any]:
        """``kernel(piece, *args)`` for every piece as tasks; results in piece order."""
        futures = self._leaves(table, kernel, *args)
        try:
            self._wait(futures, progress, step)
            return list(self._run(lambda: self.client.gather(futures)))
        except BaseException:
            self._cancel(futures)  # nothing left running on a failed run
            raise

    def reduce_partials(
        self,
        table: Table,
        qi: Sequence[str],
        sensitive: Sequence[str],
        progress: ProgressFn | None,
        weights: str | None = None,
    ) -> kernels.PartialFrequencySet:
        """Pieces' partial sets as tasks, united by a tree of merge tasks (the tree
        :func:`~anonlab.engine.kernels.tree_merge` makes, so weight sums are added in the
        NumPy engine's order when ``split_every`` is the default)."""
        leaves = self._leaves(
            table, kernels.piece_partial, qi, sensitive, self.batch_rows, self.budget, weights
        )
        if not leaves:
            return kernels.empty_partial(len(qi), len(sensitive), weighted=weights is not None)
        level = list(leaves)
        while len(level) > 1:
            level = [
                self.client.submit(
                    merge_task, self.budget, *level[i : i + self.split_every], pure=False
                )
                for i in range(0, len(level), self.split_every)
            ]
        final = level[0]
        del level
        try:
            self._wait(leaves, progress, "counting the frequency set", keep=False, fail_fast=True)
            result: kernels.PartialFrequencySet = self._run(final.result)
        except BaseException:
            self._cancel([final])  # its pending merges and pieces too
            raise
        return result

    def _wait(
        self,
        futures: list[Any],
        progress: ProgressFn | None,
        step: str,
        keep: bool = True,
        fail_fast: bool = False,
    ) -> None:
        """Report each finished task; ``keep=False`` lets go of the futures as they finish
        (so the cluster frees results once their merges used them); ``fail_fast`` raises
        the first task's error at once (writing passes wait for every task instead, so
        that no task still writes when the staged folder is removed)."""
        import distributed

        as_completed: Any = distributed.as_completed
        report = report_to(progress)
        total = len(futures)
        finished = as_completed(futures, loop=self.client.loop)
        if not keep:
            futures.clear()
        for done, future in enumerate(finished, start=1):
            if fail_fast and future.status == "error":
                self._run(future.result)
            report(step, done, total)

    def _cancel(self, futures: list[Any]) -> None:
        """Cancel ``futures`` on a failed run; a cluster that is gone has nothing to cancel
        (the run's own error is the one to show)."""
        with contextlib.suppress(OSError, TimeoutError):
            self.client.cancel(futures, force=True)

    def _run(self, get: Callable[[], Any]) -> Any:
        """``get()`` with the workers' errors as one-line AnonlabErrors."""
        with self._worker_deaths():
            try:
                return get()
            except RemoteError as exc:
                raise AnonlabError(exc.message, parameter=exc.parameter) from None
            except kernels.FrequencySetTooLarge as exc:
                raise too_large(exc, self.memory_limit) from None
            except kernels.UnknownValue as exc:
                raise unknown_value(exc) from None

    @contextlib.contextmanager
    def _worker_deaths(self) -> Iterator[None]:
        """A worker that died or was killed (``KilledWorker``; a connection to it closed:
        ``CommClosedError``, ``StreamClosedError``) as one line naming ``memory_limit``."""
        from distributed import KilledWorker
        from distributed.comm.core import CommClosedError
        from tornado.iostream import StreamClosedError

        try:
            yield
        except KilledWorker as exc:
            raise worker_died(
                self.memory_limit, f"again and again running task {exc.task!r}"
            ) from None
        except (CommClosedError, StreamClosedError) as exc:
            raise worker_died(
                self.memory_limit, f"while the run needed it ({type(exc).__name__})"
            ) from None


def worker_died(memory_limit: int | None, when: str) -> AnonlabError:
    """The one line for a Dask worker that died or was killed ``when``."""
    limit = "Dask's default" if memory_limit is None else f"{memory_limit / 2**20:,.0f} MiB"
    return AnonlabError(
        f"memory_limit ({limit} a worker) may be too small: a Dask worker process died or was "
        f"killed {when}, most often for using more memory than its limit; raise memory_limit, "
        "use fewer workers (each then gets more memory), lower batch_rows, or check the "
        "workers' logs",
        parameter="memory_limit",
    )


def shown_address(scheduler: str) -> str:
    """``scheduler`` as a message shows it: a password (``user:password@``) as ``***``;
    a user name given alone is hidden as well."""
    scheme, sep, rest = scheduler.rpartition("://")
    if "@" not in rest:
        return scheduler
    userinfo, _, location = rest.rpartition("@")
    user, colon, _password = userinfo.partition(":")
    hidden = f"{user}:***" if colon else "***"
    return f"{scheme}{sep}{hidden}@{location}"


def check_address(scheduler: str) -> str:
    """``scheduler`` checked as a Dask address (``scheme://host:port``), stripped.

    One-line errors naming ``scheduler``, its password shown as ``***``: a
    user or password (no Dask address has one), an unknown scheme, a missing
    or bad host or port.
    """
    from distributed.comm.addressing import get_address_host_port

    address = scheduler.strip()
    shown = shown_address(address)
    usage = "write it as tcp://host:port (or tls://host:port), e.g. tcp://127.0.0.1:8786"
    if not address:
        raise AnonlabError(f"scheduler is empty: {usage}", parameter="scheduler")
    if "@" in address:
        raise AnonlabError(
            f"scheduler '{shown}' holds a user name or password, which a Dask "
            f"address never has: {usage} (TLS certificates go in Dask's "
            "configuration)",
            parameter="scheduler",
        )
    try:
        host, port = get_address_host_port(address)
    except (ValueError, TypeError) as exc:
        detail = first_line(exc)
        raise AnonlabError(
            f"scheduler '{shown}' is not a Dask scheduler address "
            f"({shown_address(detail)}): {usage}",
            parameter="scheduler",
        ) from None
    if not host or not 1 <= port <= 65535:
        raise AnonlabError(
            f"scheduler '{shown}' is not a Dask scheduler address (host "
            f"'{host}', port {port}; a port is 1 to 65535): {usage}",
            parameter="scheduler",
        )
    return address


def _connect(scheduler: str, timeout: float) -> Any:
    """A client of the scheduler at ``scheduler``; one-line errors naming ``scheduler``.

    Nothing but that line reaches standard error: distributed's log lines are
    held back while connecting, and a client that failed half-way is closed at
    once (its finalizer would otherwise wait and print an ignored exception).
    """
    import distributed

    address = check_address(scheduler)
    client_class: Any = distributed.Client
    client: Any = client_class.__new__(client_class)
    try:
        with _quiet_distributed():
            client.__init__(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        _abandon(client)
        detail = first_line(exc)
        raise AnonlabError(
            f"scheduler '{address}' cannot be reached within {timeout:g} s "
            f"({detail}): check the address (tcp://host:port) and that a Dask "
            "scheduler runs there",
            parameter="scheduler",
        ) from None
    except BaseException:
        _abandon(client)
        raise
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        client.close()
        raise AnonlabError(
            f"scheduler '{address}' has no workers (waited {timeout:g} s): "
            "start workers with dask worker " + address,
            parameter="scheduler",
        ) from exc
    return client


@contextlib.contextmanager
def _quiet_distributed() -> Iterator[None]:
    """distributed's log lines held back (only critical ones pass) for the block."""
    log = logging.getLogger("distributed")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


def _abandon(client: Any) -> None:
    """Stop a client whose start failed, so that its finalizer has nothing left to do."""
    with contextlib.suppress(Exception):
        if getattr(client, "status", None) != "closed":
            client.status = "closed"
            client._loop_runner.stop()


def _local_cluster(
    workers: int | None, limit: int | None, processes: bool, threads: int
) -> tuple[Any, Any]:
    """Start a LocalCluster and its client."""
    import distributed

    client_class: Any = distributed.Client
    cluster_class: Any = distributed.LocalCluster
    count = workers if workers is not None else (os.cpu_count() or 1)
    if count < 1:
        raise AnonlabError(f"workers must be at least 1 (got {count})", parameter="workers")
    if threads < 1:
        raise AnonlabError(
            f"threads_per_worker must be at least 1 (got {threads})", parameter="threads_per_worker"
        )
    if limit is not None and limit < MIN_WORKER_MEMORY:
        raise AnonlabError(
            f"memory_limit {limit / 2**20:,.0f} MiB is too small: a Dask worker "
            f"needs at least {MIN_WORKER_MEMORY / 2**20:,.0f} MiB to start; give "
            "more",
            parameter="memory_limit",
        )
    import dask

    # Dask sets MALLOC_TRIM_THRESHOLD_ in its workers to return freed memory at once; it
    # also fixes glibc's mmap threshold, so every large temporary array of the kernels is
    # mapped and faulted in afresh (measured: +35 % CPU on a 1M-row piece). Our workers keep
    # glibc's defaults; the other variables stay.
    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}) or {})
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    # dashboard on a free port: None means Dask's fixed 8787, so two local clusters on one
    # machine (two runs, two test processes) would collide
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
        cluster = cluster_class(
            n_workers=count,
            threads_per_worker=threads,
            memory_limit=limit if limit is not None else "auto",
            processes=processes,
            dashboard_address=":0",
            silence_logs=logging.CRITICAL,
        )
    return cluster, client_class(cluster, set_as_default=False)


def _effective_limit(client: Any, limit: int | None) -> int | None:
    """The memory a task may plan with: the smallest worker limit, capped by ``limit``."""
    info = client.scheduler_info(n_workers=-1)
    limits = [int(w.get("memory_limit") or 0) for w in info.get("workers", {}).values()]
    known = [x for x in limits if x > 0]
    smallest = min(known) if known else None
    if limit is None:
        return smallest
    return limit if smallest is None else min(limit, smallest)
