"""``evaluate``: every EM4ADOM measure of an original/masked pair (docs/formulas.md §2).

A pair in memory is measured by :func:`anonlab.metrics.em4adom.measure_pair`; a
Dask DataFrame (either table) piece by piece by
:func:`anonlab.metrics.evaluate_pieces.evaluate_on_engine`. The report keys
are documented in docs/em4adom.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from anonlab.encoding import ALL_NUMERIC
from anonlab.frames import is_dask_frame
from anonlab.metrics import utility
from anonlab.metrics.em4adom import Evaluation, Weights, check_pair, measure_pair, parse_p_values
from anonlab.metrics.tradeoff import DEFAULT_GAMMA, DEFAULT_TAU
from anonlab.progress import ProgressFn, report_to
from anonlab.table import MicrodataTable, as_table
from anonlab.threads import blas_threads, check_workers


def evaluate(
    original: pd.DataFrame | MicrodataTable,
    masked: pd.DataFrame | MicrodataTable,
    columns: str | Sequence[str] | None = ALL_NUMERIC,
    *,
    nominal: str | Sequence[str] | None = None,
    ordinal: str | Sequence[str] | None = None,
    orders: Mapping[str, Sequence[str]] | None = None,
    lambdas: Sequence[float] = utility.DEFAULT_LAMBDA,
    tau: Sequence[float] = DEFAULT_TAU,
    gamma: Sequence[float] = DEFAULT_GAMMA,
    interval_p: str | Sequence[float] | float | None = None,
    workers: int = 1,
    progress: ProgressFn | None = None,
) -> Evaluation:
    """All EM4ADOM measures of ``masked`` against ``original`` (docs/formulas.md §2).

    ``original`` is a :class:`~anonlab.table.MicrodataTable` (its numeric and
    categorical quasi-identifiers are evaluated) or a DataFrame with the
    column settings: ``columns`` are the numeric attributes (``all-numeric``
    leaves out the ``nominal``/``ordinal`` ones; ``None`` or ``[]`` with
    categorical columns given means none); ``orders`` gives an ordinal
    column's values in order. ``masked`` is a DataFrame (encoded like the
    original) or the table :meth:`MicrodataTable.encoded_like` made of it.
    The kernels run on ``workers`` threads (default 1, so a busy machine does
    not slow them down; -1: every CPU). ``progress`` hears of each stage
    (information loss, record linkage, interval disclosure).

    A ``dask.dataframe.DataFrame`` (either table) is evaluated piece by piece
    by :func:`anonlab.metrics.evaluate_pieces.evaluate_on_engine` (its default
    engine and block size; docs/engine.md): linkage and interval disclosure
    then run within blocks of rows.
    """
    if is_dask_frame(original) or is_dask_frame(masked):
        from anonlab.metrics.evaluate_pieces import evaluate_on_engine

        return evaluate_on_engine(
            original,
            masked,
            columns,
            nominal=nominal,
            ordinal=ordinal,
            orders=orders,
            lambdas=lambdas,
            tau=tau,
            gamma=gamma,
            interval_p=interval_p,
            workers=workers,
            progress=progress,
        )
    weights = Weights(
        utility.weights(lambdas, "lambda", 3),
        utility.weights(tau, "tau", 2),
        utility.weights(gamma, "gamma", 2),
        parse_p_values(interval_p),
    )
    check_workers(workers)
    table = as_table(
        original,
        columns,
        nominal=nominal,
        ordinal=ordinal,
        orders=orders,
        purpose="evaluate",
        what="original",
    )
    masked_frame = masked.frame if isinstance(masked, MicrodataTable) else masked
    check_pair(
        table.frame, masked_frame, [*table.numeric_names, *(c.name for c in table.categorical)]
    )
    if not isinstance(masked, MicrodataTable):
        masked = table.encoded_like(masked)
    with blas_threads(workers):
        return measure_pair(table, masked, weights, workers, report_to(progress))
