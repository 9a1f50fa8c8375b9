"""Engines: the passes over every row, in-process (``numpy``) or on a Dask cluster (``dask``).

The methods need only a few passes over the whole table (docs/design.md, "The
one hot primitive"): the base frequency set, the release, column moments
and row-wise transforms. An :class:`~anonlab.engine.base.Engine` runs them
over a table read in pieces (:func:`~anonlab.engine.table.open_table`:
Parquet files, folders and globs, CSV files, pandas or Dask DataFrames) and
both backends give identical results:

>>> from anonlab.engine import open_engine  # doctest: +SKIP
>>> with open_engine("dask", workers=2, memory_limit="4GB") as engine:  # doctest: +SKIP
...     base = engine.frequency_set("data/big/", qi=["age", "sex"], sensitive=["disease"])

Dask is imported only when the ``dask`` engine is opened (``pip install
"anonlab[dask]"``).
"""

from __future__ import annotations

from typing import Any

from anonlab.engine.base import (
    AffineRows,
    BaseFrequencySet,
    DictionaryOrder,
    Encoding,
    Engine,
    Moments,
    ReleasePlan,
    SensitiveCounts,
    WriteSummary,
)
from anonlab.engine.table import BATCH_ROWS, Table, open_table
from anonlab.errors import AnonlabError
from anonlab.staging import StagedFolder

ENGINES = ("numpy", "dask")

__all__ = [
    "ENGINES",
    "AffineRows",
    "BaseFrequencySet",
    "DictionaryOrder",
    "Encoding",
    "Engine",
    "Moments",
    "ReleasePlan",
    "SensitiveCounts",
    "StagedFolder",
    "Table",
    "WriteSummary",
    "open_engine",
    "open_table",
]


def open_engine(
    engine: str = "numpy",
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    memory_limit: int | str | None = None,
    batch_rows: int = BATCH_ROWS,
    **options: Any,
) -> Engine:
    """The engine named ``engine``, ready to use (close it, or use it in a ``with``).

    ``numpy`` runs in this process, one piece after another (``memory_limit``,
    if given, bounds a frequency-set merge; ``workers`` is not used;
    ``scheduler`` is refused). ``dask`` joins the
    cluster at ``scheduler`` or starts a local one of ``workers`` processes of
    ``memory_limit`` each; ``options`` go to
    :class:`~anonlab.engine.dask_backend.DaskEngine` (``processes``,
    ``threads_per_worker``, ``split_every``, ``connect_timeout``).
    """
    if engine == "numpy":
        if scheduler is not None:
            raise AnonlabError(
                "scheduler applies to engine 'dask' only: leave it out or set engine = 'dask'",
                parameter="scheduler",
            )
        if options:
            raise AnonlabError(
                f"{sorted(options)[0]} applies to engine 'dask' only: leave it out",
                parameter=sorted(options)[0],
            )
        from anonlab.engine.base import parse_memory_limit
        from anonlab.engine.numpy_backend import NumpyEngine

        return NumpyEngine(batch_rows=batch_rows, memory_limit=parse_memory_limit(memory_limit))
    if engine == "dask":
        try:
            from anonlab.engine.dask_backend import DaskEngine
        except ImportError as exc:  # pragma: no cover - depends on the installation
            raise AnonlabError(
                f"engine 'dask' needs Dask ({exc}): pip install 'anonlab[dask]'", parameter="engine"
            ) from None
        return DaskEngine(
            scheduler=scheduler,
            workers=workers,
            memory_limit=memory_limit,
            batch_rows=batch_rows,
            **options,
        )
    raise AnonlabError(
        f"engine '{engine}' is unknown: choose one of {', '.join(ENGINES)}", parameter="engine"
    )
