"""The in-process engine: pieces read one after another, in batches, codes not strings.

The table is never held whole. Each piece is read in batches of
``batch_rows`` rows; a batch's text columns are dictionary-encoded (Parquet
text straight from its dictionary pages) and only int32 codes and the small
dictionaries stay. The frequency set is a left fold of the pieces' partial
sets (:func:`anonlab.engine.kernels.merge_partials`), merged lazily so that
each distinct tuple is re-grouped a bounded number of times on average; its
memory is the distinct tuples plus one batch. A set carrying sums of a
weights column is united by the Dask engine's tree instead
(:func:`anonlab.engine.kernels.tree_merge`), so that the floating sums are
added in the same order and the two engines give the same bits. Dask is not
imported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from anonlab.engine import kernels
from anonlab.engine.base import EngineBase
from anonlab.engine.table import BATCH_ROWS, FramePiece, Piece, Table
from anonlab.errors import AnonlabError
from anonlab.progress import ProgressFn, report_to


class NumpyEngine(EngineBase):
    """Runs every pass in this process (the default engine).

    ``memory_limit`` (bytes, optional) bounds a frequency-set merge as it
    bounds a Dask worker's (:data:`anonlab.engine.kernels.MEMORY_SHARE` of it).
    """

    name = "numpy"

    def __init__(self, *, batch_rows: int = BATCH_ROWS, memory_limit: int | None = None) -> None:
        budget = None if memory_limit is None else int(memory_limit * kernels.MEMORY_SHARE)
        super().__init__(batch_rows=batch_rows, budget=budget)
        self.memory_limit = memory_limit

    def _pieces(self, table: Table) -> Any:
        """The table's pieces; a Dask DataFrame's partitions computed here one by one."""
        if table.dask_frame is None:
            yield from table.pieces
            return
        for i, part in enumerate(table.dask_frame.to_delayed()):
            yield FramePiece(i, part.compute())

    def write_release_file(
        self, table: Table, plan: Any, path: Path, *, progress: ProgressFn | None = None
    ) -> tuple[int, int]:
        """Apply ``plan`` to every row and write the release as ONE Parquet file ``path``,
        the pieces' batches in order as its row groups (the pieces are read one after
        another here, so no part needs gathering afterwards); returns the rows written and
        the suppressed ones. The caller stages ``path`` and renames it."""
        import pyarrow.parquet as pq

        report = report_to(progress)
        total = self._count(table)
        suppressed = [0]
        rows = 0
        writer: Any = None
        try:
            for i, piece in enumerate(self._pieces(table)):
                for batch in kernels.release_tables(piece, plan, self.batch_rows, suppressed):
                    if writer is None:
                        writer = pq.ParquetWriter(path, batch.schema)
                    elif not batch.schema.equals(writer.schema):
                        batch = batch.cast(writer.schema)
                    writer.write_table(batch)
                    rows += batch.num_rows
                report("writing the release", i + 1, total)
        finally:
            if writer is not None:
                writer.close()
        return rows, suppressed[0]

    def _count(self, table: Table) -> int:
        return len(table.pieces) if table.dask_frame is None else int(table.dask_frame.npartitions)

    def map_pieces(
        self,
        table: Table,
        kernel: Callable[..., Any],
        *args: Any,
        progress: ProgressFn | None = None,
        step: str = "reading pieces",
    ) -> list[Any]:
        """``kernel(piece, *args)`` for each piece in turn."""
        report = report_to(progress)
        total = self._count(table)
        out = []
        for i, piece in enumerate(self._pieces(table)):
            out.append(self._run(kernel, piece, *args))
            report(step, i + 1, total)
        return out

    def reduce_partials(
        self,
        table: Table,
        qi: Sequence[str],
        sensitive: Sequence[str],
        progress: ProgressFn | None,
        weights: str | None = None,
    ) -> kernels.PartialFrequencySet:
        """A lazy left fold of the pieces' partial frequency sets; with ``weights`` (a column
        whose sums they carry) the tree of the Dask engine's merges (module text)."""
        report = report_to(progress)
        total = self._count(table)
        if weights is not None:

            def parts() -> Any:
                for i, piece in enumerate(self._pieces(table)):
                    yield self._run(
                        kernels.piece_partial,
                        piece,
                        qi,
                        sensitive,
                        self.batch_rows,
                        self.budget,
                        weights,
                    )
                    report("counting the frequency set", i + 1, total)

            united = kernels.tree_merge(parts(), self._merge)
            return (
                united
                if united is not None
                else kernels.empty_partial(len(qi), len(sensitive), weighted=True)
            )
        done: kernels.PartialFrequencySet | None = None
        pending: list[kernels.PartialFrequencySet] = []
        for i, piece in enumerate(self._pieces(table)):
            pending.append(
                self._run(kernels.piece_partial, piece, qi, sensitive, self.batch_rows, self.budget)
            )
            if done is None or sum(len(p.counts) for p in pending) >= len(done.counts):
                done = self._merge([*([done] if done else []), *pending])
                pending = []
            report("counting the frequency set", i + 1, total)
        if done is None and not pending:
            return kernels.empty_partial(len(qi), len(sensitive))
        return self._merge([*([done] if done else []), *pending])

    def _merge(self, parts: list[kernels.PartialFrequencySet]) -> kernels.PartialFrequencySet:
        try:
            return kernels.merge_partials(parts, self.budget)
        except kernels.FrequencySetTooLarge as exc:
            raise too_large(exc, self.memory_limit) from None

    def _run(self, kernel: Callable[..., Any], piece: Piece, *args: Any) -> Any:
        try:
            return kernel(piece, *args)
        except kernels.FrequencySetTooLarge as exc:
            raise too_large(exc, self.memory_limit) from None
        except kernels.UnknownValue as exc:
            raise unknown_value(exc) from None
        except MemoryError:
            raise AnonlabError(
                f"input: not enough memory to process {piece.describe()}: "
                "free memory, or lower batch_rows",
                parameter="input",
            ) from None


def too_large(exc: kernels.FrequencySetTooLarge, memory_limit: int | None) -> AnonlabError:
    """The one-line error of a frequency set larger than the memory limit allows."""
    limit = "?" if memory_limit is None else f"{memory_limit / 2**20:,.0f} MiB"
    return AnonlabError(
        f"memory_limit {limit} is too small for the frequency set: merging "
        f"{exc.tuples:,} distinct quasi-identifier tuples needs about "
        f"{exc.needed / 2**20:,.0f} MiB, more than the {exc.budget / 2**20:,.0f} MiB a merge may "
        "use; raise memory_limit (or use fewer quasi-identifiers)",
        parameter="memory_limit",
    )


def unknown_value(exc: kernels.UnknownValue) -> AnonlabError:
    """The one-line error of a value the first pass did not see."""
    return AnonlabError(
        f"input: column '{exc.column}' of {exc.where} holds the value '{exc.value}', which "
        "the transformation's dictionary lacks: the table changed since its frequency set was "
        "computed; compute it again",
        parameter="input",
    )
