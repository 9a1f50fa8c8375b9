"""``microaggregate``: a table in, the masked table and its group summary out.

Numeric columns are standardized (population S_j), partitioned by MDAV (exact,
or the block variant for large tables) and replaced by their group means in
original units; nominal columns by the group mode, ordinal ones by the group
lower median. Columns not named pass through unchanged.

``method`` other than ``"mdav"`` (sdcMicro's ``onedims``, ``pca``, ``rmd``, ``clustpca``,
``influence``), an ``aggr`` other than the mean, or ``strata`` run
:mod:`anonlab.microaggregation.methods` on the numeric columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.encoding import ALL_NUMERIC, CategoricalColumn
from anonlab.errors import AnonlabError
from anonlab.metrics.utility import il_h, il_h_of
from anonlab.microaggregation.mdav import EuclideanSpace, group_means, mdav_partition
from anonlab.microaggregation.mixed import MixedSpace, group_lower_medians, group_modes
from anonlab.microaggregation.scalable import DEFAULT_BLOCK_SIZE, scalable_mdav_labels
from anonlab.parameters import check_k
from anonlab.progress import ProgressFn
from anonlab.table import MicrodataTable, as_table
from anonlab.threads import blas_threads, check_workers

Variant = Literal["exact", "scalable"]
VARIANTS = ("exact", "scalable")


@dataclass
class MicroaggregationResult:
    """The masked table, each record's group and what was done."""

    masked: pd.DataFrame
    labels: NDArray[Any]  # (n,) group of each record, 0.. in order of formation
    k: int
    variant: str
    columns: list[str]
    nominal: list[str]
    ordinal: list[str]
    sse_sst: float | None  # ILh of the numeric columns (None without numeric columns)
    block_size: int | None
    method: str = "mdav"
    aggr: str = "mean"
    trim: float = 0.0
    strata: list[str] = field(default_factory=list)
    seed: int | None = None

    @property
    def per_column(self) -> bool:
        """Whether each column has its own groups (individual ranking: ``labels`` is (n, p))."""
        return self.labels.ndim == 2

    def summary(self) -> dict[str, Any]:
        """Report keys (no records): method, k, sizes, groups, SSE/SST; with another method
        than MDAV, an aggregate or strata, also ``aggr``, ``trim``, ``strata``, ``seed`` and
        ``per_column`` (the groups then are those of the first column, the same sizes in
        every column)."""
        labels = self.labels[:, 0] if self.per_column else self.labels
        sizes = np.bincount(labels)
        size_counts = {
            str(int(s)): int(c) for s, c in zip(*np.unique(sizes, return_counts=True), strict=True)
        }
        extra: dict[str, Any] = {}
        if self.method != "mdav" or self.aggr != "mean" or self.strata:
            extra = {
                "aggr": self.aggr,
                "trim": self.trim,
                "strata": self.strata,
                "seed": self.seed,
                "per_column": self.per_column,
            }
        return {
            **extra,
            "method": "MDAV" if self.method == "mdav" else self.method,
            "variant": self.variant,
            "k": self.k,
            "records": int(self.labels.shape[0]),
            "columns": self.columns,
            "nominal": self.nominal,
            "ordinal": self.ordinal,
            "groups": int(sizes.size),
            "group_sizes": {
                "min": int(sizes.min()),
                "max": int(sizes.max()),
                "count_by_size": size_counts,
            },
            "measures": {"ILh": self.sse_sst} if self.sse_sst is not None else {},
            "block_size": self.block_size,
        }


def microaggregate(
    data: pd.DataFrame | MicrodataTable,
    columns: str | Sequence[str] | None = ALL_NUMERIC,
    k: int = 3,
    *,
    nominal: str | Sequence[str] | None = None,
    ordinal: str | Sequence[str] | None = None,
    orders: Mapping[str, Sequence[str]] | None = None,
    variant: str = "exact",
    block_size: int = DEFAULT_BLOCK_SIZE,
    workers: int = 1,
    progress: ProgressFn | None = None,
    method: str = "mdav",
    aggr: str = "mean",
    trim: float = 0.0,
    strata: str | Sequence[str] | None = None,
    seed: int | None = None,
) -> MicroaggregationResult:
    """Microaggregate ``data`` by MDAV with groups of k..2k-1 records.

    ``method`` is one of sdcMicro's: ``"mdav"`` (default), ``"onedims"``, ``"pca"``,
    ``"rmd"``, ``"clustpca"``, ``"influence"`` (:mod:`anonlab.microaggregation.methods`);
    ``aggr`` the groups' aggregate (``"mean"``, ``"median"``, ``"trim"`` with ``trim`` the
    share cut off each end, ``"onestep"``); ``strata`` columns within whose values the
    groups are formed (not masked: ``all-numeric`` leaves them out); ``seed`` the seed of
    rmd's MCD (the one method that draws random numbers). Other methods than MDAV, an
    aggregate other than the mean and strata take numeric columns and the exact variant.

    ``data`` is a :class:`~anonlab.table.MicrodataTable` (its numeric and
    categorical quasi-identifiers are masked) or a DataFrame with the column
    settings: ``columns`` are the numeric attributes (``all-numeric``: every
    numeric column not named nominal/ordinal; ``None`` with categorical
    columns: none), the frame's other columns pass through. Both give the
    same result. ``variant="scalable"`` runs MDAV inside the blocks of a k-d
    split of at most ``block_size`` records (numeric columns only). The
    kernels run on ``workers`` BLAS threads (default 1, so a busy machine does
    not slow them down; -1: every CPU). ``progress`` hears of the records
    grouped.
    """
    check_workers(workers)
    if variant not in VARIANTS:
        raise AnonlabError(f"unknown variant '{variant}': choose exact or scalable")
    if method != "mdav" or aggr != "mean" or strata:
        return _by_method(
            data,
            columns,
            k,
            nominal=nominal,
            ordinal=ordinal,
            orders=orders,
            variant=variant,
            method=method,
            aggr=aggr,
            trim=trim,
            strata=[strata] if isinstance(strata, str) else list(strata or []),
            seed=seed,
            workers=workers,
            progress=progress,
        )
    table = as_table(
        data, columns, nominal=nominal, ordinal=ordinal, orders=orders, purpose="microaggregate"
    )
    check_k(k, table.n)
    if variant == "scalable" and (
        isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 2 * k
    ):
        raise AnonlabError(
            f"block_size must be a whole number of at least 2k = {2 * k}, got {block_size!r}",
            parameter="block_size",
        )
    num, cats = table.numeric_names, table.categorical
    z, mean, std = table.standardized
    if variant == "scalable" and cats:
        raise AnonlabError(
            "variant 'scalable' takes numeric columns only: use variant "
            "'exact' with nominal or ordinal columns",
            parameter="variant",
        )
    with blas_threads(workers):
        labels = _partition(z, cats, k, variant, block_size, progress)
    masked = table.frame.copy()
    sse = None
    if num:
        xm = group_means(table.numeric.values, labels)
        for j, name in enumerate(num):
            masked[name] = xm[:, j]
        sse = il_h(z, (xm - mean) / std)
    for col in cats:
        codes = (
            group_lower_medians(col.codes, labels)
            if col.ordinal
            else group_modes(col.codes, labels, col.size)
        )
        masked[col.name] = np.asarray(col.domain, dtype=object)[codes]
    return MicroaggregationResult(
        masked,
        labels,
        k,
        variant,
        num,
        table.nominal,
        table.ordinal,
        sse,
        block_size if variant == "scalable" else None,
    )


def _partition(
    z: NDArray[Any],
    cats: Sequence[CategoricalColumn],
    k: int,
    variant: str,
    block_size: int,
    progress: ProgressFn | None,
) -> NDArray[Any]:
    """MDAV group labels: the block variant, mixed records or standardized numeric ones."""
    n = z.shape[0]
    if variant == "scalable":
        return scalable_mdav_labels(z, k, block_size, progress=progress)
    if cats:
        return mdav_partition(MixedSpace(z, cats), n, k, progress=progress)
    return mdav_partition(EuclideanSpace(z), n, k, progress=progress)


def _by_method(
    data: pd.DataFrame | MicrodataTable,
    columns: str | Sequence[str] | None,
    k: int,
    *,
    nominal: str | Sequence[str] | None,
    ordinal: str | Sequence[str] | None,
    orders: Mapping[str, Sequence[str]] | None,
    variant: str,
    method: str,
    aggr: str,
    trim: float,
    strata: list[str],
    seed: int | None,
    workers: int,
    progress: ProgressFn | None,
) -> MicroaggregationResult:
    """:func:`microaggregate` by :mod:`anonlab.microaggregation.methods` (numeric columns)."""
    from anonlab.microaggregation.methods import check_method, microaggregate_strata, stratum_rows

    check_method(method, aggr, trim)
    if variant != "exact":
        raise AnonlabError(
            f"variant '{variant}' is MDAV's: method '{method}', aggr '{aggr}' and strata "
            "run the exact variant",
            parameter="variant",
        )
    if columns == ALL_NUMERIC and strata and isinstance(data, pd.DataFrame):
        probe = as_table(
            data, columns, nominal=nominal, ordinal=ordinal, orders=orders, purpose="microaggregate"
        )
        columns = [c for c in probe.numeric_names if c not in strata]
    table = as_table(
        data, columns, nominal=nominal, ordinal=ordinal, orders=orders, purpose="microaggregate"
    )
    if table.categorical:
        raise AnonlabError(
            "nominal and ordinal columns are microaggregated by MDAV with group means only: "
            "leave them out, or use method 'mdav' without aggr and strata",
            parameter="nominal" if table.nominal else "ordinal",
        )
    num = table.numeric_names
    if not num:
        raise AnonlabError("no numeric column to microaggregate", parameter="columns")
    masked_strata = [c for c in strata if c in num]
    if masked_strata:
        raise AnonlabError(
            f"strata column '{masked_strata[0]}' is also a masked column: a stratum is "
            "released as it is",
            parameter="strata",
        )
    check_k(k, table.n)
    parts = stratum_rows(table.frame, strata)
    small = [rows for rows in parts if rows.size < k]
    if small:
        row = int(small[0][0])
        where = ", ".join(f"{c} = {table.frame[c].iloc[row]}" for c in strata)
        raise AnonlabError(
            f"the stratum {where} holds {small[0].size} record(s), fewer than k = {k} "
            f"({len(small)} of {len(parts)} strata are): choose a smaller k or coarser strata",
            parameter="strata",
        )
    x = table.numeric.values
    ranking = method == "onedims" or (x.shape[1] == 1 and method != "mdav")
    if ranking:
        # individual ranking sorts each column on its own: the columns as contiguous rows,
        # one transposed copy for the ranking and the ILh (no other in either)
        x = np.asfortranarray(x)
    # individual ranking multiplies no matrices: no BLAS threads to limit (threadpoolctl's
    # look at the loaded libraries costs about 1.5 ms)
    with nullcontext() if ranking else blas_threads(workers):
        released, labels = microaggregate_strata(
            x,
            parts,
            k,
            method=method,
            aggr=aggr,
            trim=trim,
            seed=seed,
            progress=progress,
        )
    masked = table.frame.copy()
    for j, name in enumerate(num):
        masked[name] = released[:, j]
    return MicroaggregationResult(
        masked,
        labels,
        k,
        variant,
        list(num),
        [],
        [],
        il_h_of(x, released, num, table.what),  # column by column (the engines' too)
        None,
        method=method,
        aggr=aggr,
        trim=trim,
        strata=strata,
        seed=seed,
    )
