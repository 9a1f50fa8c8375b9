"""How many threads the numeric kernels (BLAS products, k-d tree queries) may use.

OpenBLAS starts one thread per core by default. On a shared or busy machine
those threads wait for each other at every matrix-vector product: exact MDAV
at 100,000 x 10 took 55.9 s of CPU on a busy 2-core machine instead of 3.3 s
(issue 11). The kernels therefore run on one BLAS thread unless the caller's
``workers`` asks for more; ``workers = -1`` means every CPU.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from anonlab.errors import AnonlabError


def check_workers(workers: object) -> int:
    """``workers`` as given, refused unless it is -1 (every CPU) or a whole number >= 1."""
    if (
        isinstance(workers, bool)
        or not isinstance(workers, int)
        or not (workers == -1 or workers >= 1)
    ):
        raise AnonlabError(
            f"workers must be -1 (every CPU) or at least 1, got {workers}", parameter="workers"
        )
    return workers


def thread_count(workers: int) -> int:
    """The number of threads ``workers`` stands for (-1: every CPU)."""
    return (os.cpu_count() or 1) if workers == -1 else max(1, workers)


@contextmanager
def blas_threads(workers: int = 1) -> Iterator[None]:
    """Run the body with at most ``thread_count(workers)`` BLAS/OpenMP threads."""
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    with threadpool_limits(limits=thread_count(check_workers(workers))):
        yield


def one_blas_thread_at_start() -> None:
    """Start OpenBLAS with one thread in this process, unless the user set its thread count.

    For a program's entry point (the command line), before NumPy is imported:
    OpenBLAS creates its threads when NumPy loads, and they spin waiting for
    work, so that a command that never multiplies a matrix still pays CPU for
    them (``import pandas`` on the project's 2-core machine, load average
    2.7: 0.43 s of CPU with OpenBLAS's default two threads, 0.38 s with one;
    more on an idle machine, whose second core they spin on). :func:`blas_threads` still
    raises the count when ``workers`` asks for more (OpenBLAS >= 0.3 creates
    the extra threads then). Does nothing once NumPy is imported or when
    ``OPENBLAS_NUM_THREADS`` is set.
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
