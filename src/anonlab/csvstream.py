"""A CSV file read block by block into dictionary (categorical) columns.

:func:`anonlab.io.read_table` with ``strings="dictionary"`` reads a CSV
through :func:`read_dictionary_csv`: pyarrow's streaming reader parses one
small block at a time (:data:`STREAM_BLOCK` bytes, on one thread), each
block's text columns dictionary-encoded; each block's codes are mapped onto
one dictionary per column (its texts in the order they first occur in the
file, as Arrow's ``unify_dictionaries`` orders them) and kept as the
narrowest integers that hold them. So neither the file's text nor 32-bit
codes for all its rows are ever held at once: reading
Adult x33 (995,346 rows, 80 MiB) peaks about 25 MiB above the loaded
interpreter where reading it whole in 1 MiB blocks on every core peaked
about 145 MiB above it (docs/benchmarks.md, round 5).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    from numpy.typing import NDArray

#: the streaming reader's block (a record longer than this retries with larger blocks)
STREAM_BLOCK = 1 << 18


def index_dtype(size: int) -> np.dtype[Any]:
    """The narrowest signed integer type whose codes number ``size`` values (pandas' rule
    for a categorical's codes: ``int8`` below 128 values, ``int16`` below 32,768, ...)."""
    for kind in (np.int8, np.int16, np.int32):
        if size < np.iinfo(kind).max:
            return np.dtype(kind)
    return np.dtype(np.int64)


class DictionaryColumn:
    """One text column's codes, block by block, onto one dictionary.

    ``positions`` maps each text to its code (in the order texts first occur);
    a block's dictionary array is added by mapping its own dictionary onto
    ``positions`` once per distinct text, then taking that map for every row.
    """

    def __init__(self) -> None:
        self.positions: dict[str, int] = {}
        self.parts: list[NDArray[np.integer[Any]]] = []

    def add(self, array: pa.DictionaryArray) -> None:
        """Append a block's rows (a dictionary array of strings without nulls)."""
        positions = self.positions
        texts = array.dictionary.to_pylist()
        mapping = np.fromiter((positions.setdefault(t, len(positions)) for t in texts),
                              dtype=np.int64, count=len(texts))
        codes = array.indices.to_numpy(zero_copy_only=False)
        self.parts.append(mapping.astype(index_dtype(len(positions)))[codes])

    def finish(self) -> pa.DictionaryArray:
        """The whole column: codes of the narrowest type, the dictionary of its texts."""
        import pyarrow as pa

        kind = index_dtype(len(self.positions))
        codes = np.concatenate(self.parts).astype(kind, copy=False) if self.parts \
            else np.empty(0, dtype=kind)
        self.parts = []
        return pa.DictionaryArray.from_arrays(pa.array(codes),
                                              pa.array(list(self.positions), pa.string()))


class PlainColumn:
    """A column read as it is parsed (e.g. ``float64``): its blocks, concatenated at the end."""

    def __init__(self, kind: pa.DataType) -> None:
        self.kind = kind
        self.parts: list[pa.Array] = []

    def add(self, array: pa.Array) -> None:
        """Append a block's rows."""
        self.parts.append(array)

    def finish(self) -> pa.Array:
        """The whole column as one array."""
        import pyarrow as pa

        whole = pa.concat_arrays(self.parts) if self.parts else pa.array([], self.kind)
        self.parts = []
        return whole


def read_dictionary_csv(path: Path, read_options: pacsv.ReadOptions,
                        parse_options: pacsv.ParseOptions,
                        convert_options: pacsv.ConvertOptions) -> pa.Table:
    """The CSV file as pyarrow's ``read_csv`` with these options reads it, its dictionary
    columns each one chunk over one dictionary (see the module's docstring).

    ``read_options``' block size is used as given, on one thread; a parse error is
    raised as ``read_csv`` raises it (``pyarrow.ArrowInvalid``).
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    read_options.use_threads = False
    reader = pacsv.open_csv(path, read_options=read_options, parse_options=parse_options,
                            convert_options=convert_options)
    schema = reader.schema
    columns = [DictionaryColumn() if pa.types.is_dictionary(f.type) else PlainColumn(f.type)
               for f in schema]
    for batch in reader:
        for column, array in zip(columns, batch.columns, strict=True):
            column.add(array)
    return pa.Table.from_arrays([c.finish() for c in columns], names=schema.names)
