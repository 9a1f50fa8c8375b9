"""How ``anonlab generalize`` allocates memory, so that a finished step's memory goes back.

A run on a million rows makes and frees many arrays of a few to a few dozen
MiB, step after step. Two allocators would keep such freed memory in the
process for the rest of the run, so that every later step starts higher:

* Arrow's default pool (mimalloc) keeps freed blocks for reuse, where NumPy
  and pandas cannot use them; Arrow then allocates from the C library
  (``system``), whose free memory :func:`anonlab.runs.generalize.return_free_memory`
  gives back;
* glibc's ``malloc`` raises its mmap threshold each time a large block is
  freed (up to 32 MiB), after which arrays of that size come from the heap,
  where freed ones stay resident between live ones; the threshold is then
  fixed at 4 MiB (``mallopt(M_MMAP_THRESHOLD)``), so every larger array is
  its own mapping, returned to the system when freed, while the many smaller
  blocks of a step (a streamed read's, a rendered CSV batch's) are reused from
  the heap instead of being mapped and zeroed again each time.

On Adult x33 (docs/benchmarks.md, round 5) the two together lower the
process's size after each step of ``anonlab generalize`` by 20 to 90 MiB. The
threshold at glibc's default, 128 KiB, peaked a few MiB lower (210 MiB) for
about 0.3 s more system time (pages mapped and zeroed again) than at 4 MiB
(214 to 218 MiB).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

#: glibc's ``M_MMAP_THRESHOLD`` option of ``mallopt``, and the threshold set (bytes)
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 4 * 1024 * 1024
#: glibc's largest dynamic mmap threshold on 64-bit machines (``DEFAULT_MMAP_THRESHOLD_MAX``)
DYNAMIC_MMAP_THRESHOLD_MAX = 32 * 1024 * 1024
#: whether this process fixed the threshold at start (:func:`tune_allocators_at_start`)
_tuned = [False]


#: the commands whose runs are tuned so (measured on them: docs/benchmarks.md, round 5)
TUNED_COMMANDS = frozenset({"generalize"})


def tune_allocators_at_start(argv: Sequence[str]) -> None:
    """For the commands of :data:`TUNED_COMMANDS` (``argv[0]``, the command line's first
    word): Arrow on the C library's allocator and glibc's mmap threshold fixed (module text).

    For a program's entry point, before pyarrow is imported (Arrow reads
    ``ARROW_DEFAULT_MEMORY_POOL`` when it loads). A user's own
    ``ARROW_DEFAULT_MEMORY_POOL`` or ``MALLOC_MMAP_THRESHOLD_`` is left as
    set; where the C library is not glibc nothing else changes. Other commands
    keep the allocators' defaults: giving memory back costs system time (pages
    mapped and zeroed again), measured only for these.
    """
    if not argv or argv[0] not in TUNED_COMMANDS or engine_run(argv[1:]):
        return
    if "pyarrow" not in sys.modules:
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        _tuned[0] = fix_mmap_threshold()


def engine_run(args: Sequence[str]) -> bool:
    """Whether a command line asks for an engine run (``--engine dask``, or an ``--output``
    folder ending in ``/``): its rows are never held whole, so there is no large array to
    give back, and the tuning would only cost system time (on 10M rows on the NumPy engine,
    about 3 s more: docs/benchmarks.md, round 5). Settings given in a config file alone are
    not looked at."""
    found: dict[str, str] = {}
    for i, arg in enumerate(args):
        name, sep, value = arg.partition("=")
        if name in ("--engine", "--output"):
            found[name] = value if sep else (args[i + 1] if i + 1 < len(args) else "")
    return found.get("--engine") == "dask" or found.get("--output", "").endswith(("/", os.sep))


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """``mallopt(M_MMAP_THRESHOLD, threshold)``: whether the C library took it (glibc only)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, threshold))


def untune_for_pieces() -> None:
    """Undo the mmap threshold of :func:`tune_allocators_at_start` for a run that turns out to
    read its table in pieces (a large table with a file output): its arrays are made and
    freed piece after piece, each mapped and zeroed again below a 4 MiB threshold (on 10M
    rows about 4 s of system time, docs/benchmarks.md round 5). The threshold goes to glibc's
    largest dynamic one, 32 MiB, unless the user set ``MALLOC_MMAP_THRESHOLD_``."""
    if _tuned[0]:
        fix_mmap_threshold(DYNAMIC_MMAP_THRESHOLD_MAX)
        _tuned[0] = False
