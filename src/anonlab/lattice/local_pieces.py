"""Local recoding over an engine's pieces: the searches on the engine's base frequency set
(:func:`anonlab.lattice.local.local_recoding` on a rowless dataset, whose units are the base
tuples), then one pass (``map_pieces``) that writes every record with the labels of the search
that released its tuple, or ``*`` in every quasi-identifier, as Parquet parts.

A record's fate depends on its quasi-identifier tuple only (a class is a union of tuples), so
the plan maps each tuple of the base (its codes in the first pass's dictionaries, as bytes)
to one label code per quasi-identifier. The labels of a column are every level's labels and
``*``, each text once. Every other column is written as its text, the identifying ones left
out (docs/generalization.md, "Local recoding").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from anonlab.engine import kernels
from anonlab.errors import AnonlabError
from anonlab.hierarchy import SUPPRESSED

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.dataset import Dataset
    from anonlab.engine.base import Engine
    from anonlab.engine.table import Piece, Table
    from anonlab.lattice.local import LocalRecoding
    from anonlab.paths import PathLike
    from anonlab.progress import ProgressFn


@dataclass(frozen=True)
class LocalPlan:
    """What the writing pass applies: each quasi-identifier's dictionary from the first pass,
    the unit (base tuple) of each tuple's codes, each unit's label code per quasi-identifier,
    the labels, and the columns left out."""

    columns: tuple[str, ...]
    dictionaries: tuple[tuple[str, ...], ...]
    unit_of: dict[bytes, int]
    label_codes: NDArray[np.int32]  # (units, m)
    labels: tuple[tuple[str, ...], ...]
    drop: tuple[str, ...]


def local_plan(dataset: Dataset, result: LocalRecoding, drop: tuple[str, ...]) -> LocalPlan:
    """The plan of a local recoding of a rowless ``dataset``: each base tuple's labels at the
    levels of the search that released it (:meth:`LocalRecoding.row_levels`), ``*`` where it
    stays suppressed, as :func:`anonlab.lattice.local.local_release` labels the records."""
    tuples = np.ascontiguousarray(np.asarray(dataset.base.tuples, dtype=np.int32))
    units = tuples.shape[0]
    levels = result.row_levels()
    hidden = result.step < 0
    label_codes = np.zeros((units, len(dataset.qis)), dtype=np.int32)
    labels: list[tuple[str, ...]] = []
    for d, q in enumerate(dataset.qis):
        index: dict[str, int] = {}
        table = np.zeros((q.height + 1, len(q.values)), dtype=np.int32)
        for lv in range(q.height + 1):
            names = np.array(
                [index.setdefault(t, len(index)) for t in q.level_labels[lv]], dtype=np.int32
            )
            table[lv] = names[np.asarray(q.level_codes[lv], dtype=np.int64)]
        star = index.setdefault(SUPPRESSED, len(index))
        column = table[levels[:, d], tuples[:, d]] if units else np.zeros(0, np.int32)
        label_codes[:, d] = np.where(hidden, star, column)
        labels.append(tuple(index))
    return LocalPlan(
        columns=tuple(q.name for q in dataset.qis),
        dictionaries=tuple(tuple(q.values) for q in dataset.qis),
        unit_of={tuples[i].tobytes(): i for i in range(units)},
        label_codes=label_codes,
        labels=tuple(labels),
        drop=drop,
    )


def write_piece(piece: Piece, plan: LocalPlan, folder: str, batch_rows: int) -> int:
    """Write one piece with each quasi-identifier replaced by its tuple's label (a dictionary
    array of text), the dropped columns left out, the others as their text; returns the rows
    written. A tuple the first pass did not count is an error (the table changed since)."""
    import pyarrow as pa

    keep = [c for c in piece.columns() if c not in plan.drop]
    lookups = [{v: i for i, v in enumerate(d)} for d in plan.dictionaries]
    labels = [pa.array(list(t), pa.string()) for t in plan.labels]
    where = piece.describe()

    def tables() -> Any:
        for batch in piece.batches(keep, batch_rows):
            mapped = []
            for j, name in enumerate(plan.columns):
                codes, texts = kernels.encode_text(batch.column(name))
                mapped.append(kernels.global_codes(codes, texts, lookups[j], name, where))
            units = _units(np.column_stack(mapped), plan, where)
            arrays = []
            for name in keep:
                if name in plan.columns:
                    j = plan.columns.index(name)
                    indices = pa.array(plan.label_codes[units, j].astype(np.int32))
                    arrays.append(pa.DictionaryArray.from_arrays(indices, labels[j]))
                else:
                    arrays.append(kernels.text_column(batch.column(name)))
            yield pa.Table.from_arrays(arrays, names=keep)

    return kernels.write_batches(folder, piece.index, tables())


def _units(matrix: NDArray[Any], plan: LocalPlan, where: str) -> NDArray[np.int64]:
    """Each record's unit (base tuple) from its codes (``where``: the piece, for an error)."""
    rows = matrix.shape[0]
    if rows == 0:
        return np.zeros(0, dtype=np.int64)
    matrix = np.ascontiguousarray(matrix, dtype=np.int32)
    void = matrix.view(np.dtype((np.void, matrix.dtype.itemsize * matrix.shape[1]))).reshape(-1)
    distinct, inverse = np.unique(void, return_inverse=True)
    found = np.empty(distinct.shape[0], dtype=np.int64)
    for i, key in enumerate(distinct):
        unit = plan.unit_of.get(key.tobytes())
        if unit is None:
            raise AnonlabError(
                f"input: {where} holds a record the first pass did not count: the "
                "table changed while it was read; run again",
                parameter="input",
            )
        found[i] = unit
    out: NDArray[np.int64] = found[np.asarray(inverse).reshape(-1)]
    return out


def release_partition(frame: pd.DataFrame, plan: LocalPlan) -> pd.DataFrame:
    """One partition of a pandas or Dask DataFrame with ``plan`` applied (a Dask
    ``map_partitions`` function; the Python API's release of a table counted on an engine):
    each quasi-identifier a categorical of its tuple's labels, as :func:`write_piece` writes
    them, the dropped columns left out, every other column as it is, the partition's index
    kept (the in-memory :func:`anonlab.lattice.local.local_release`, label for label)."""
    import pandas as pd

    from anonlab.tabletext import column_from_pandas

    where = "a partition of the DataFrame"
    out = frame.drop(columns=[c for c in plan.drop if c in frame.columns])
    mapped = []
    for name, dictionary in zip(plan.columns, plan.dictionaries, strict=True):
        codes, texts = kernels.encode_text(column_from_pandas(frame[name]))
        lookup = {v: i for i, v in enumerate(dictionary)}
        mapped.append(kernels.global_codes(codes, texts, lookup, name, where))
    units = _units(np.column_stack(mapped), plan, where)
    for j, name in enumerate(plan.columns):
        out[name] = pd.Categorical.from_codes(
            plan.label_codes[units, j], categories=pd.Index(plan.labels[j])
        )
    return out


def lazy_release(frame: Any, plan: LocalPlan) -> Any:
    """A Dask DataFrame's local-recoding release as a lazy Dask DataFrame
    (:func:`release_partition` on every partition; nothing is computed here)."""
    meta = release_partition(frame._meta, plan)
    return frame.map_partitions(release_partition, plan, meta=meta)


def write_parts(
    engine: Engine,
    table: Table,
    plan: LocalPlan,
    folder: PathLike,
    records: int,
    progress: ProgressFn | None = None,
) -> int:
    """Write the release by ``plan``, one Parquet part per piece of ``table``
    (:func:`write_piece` on every piece), into ``folder``; returns the rows written (other than
    ``records``, the first pass's, is an error: the table changed while it was read)."""
    from anonlab.engine.base import write_pieces

    rows: list[int] = write_pieces(engine, table, write_piece, plan, str(folder), progress=progress)
    if sum(rows) != records:
        raise AnonlabError(
            f"input: {table.source} holds {sum(rows)} records, the first pass counted "
            f"{records}: the table changed while it was read; run again",
            parameter="input",
        )
    return sum(rows)
