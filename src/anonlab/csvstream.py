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

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    from numpy.typing import NDArray

#: the streaming reader's block (a record longer than this retries with larger blocks)
STREAM_BLOCK = 1 << 18
#: the bytes of a file split into lines at once by :func:`read_repeated_csv`
LINES_BLOCK = 1 << 22
#: :func:`read_repeated_csv` gives up when more than this share of the lines are distinct
DISTINCT_SHARE = 0.5


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
        mapping = np.fromiter(
            (positions.setdefault(t, len(positions)) for t in texts),
            dtype=np.int64,
            count=len(texts),
        )
        codes = array.indices.to_numpy(zero_copy_only=False)
        self.parts.append(mapping.astype(index_dtype(len(positions)))[codes])

    def finish(self) -> pa.DictionaryArray:
        """The whole column: codes of the narrowest type, the dictionary of its texts."""
        import pyarrow as pa

        kind = index_dtype(len(self.positions))
        codes = (
            np.concatenate(self.parts).astype(kind, copy=False)
            if self.parts
            else np.empty(0, dtype=kind)
        )
        self.parts = []
        return pa.DictionaryArray.from_arrays(
            pa.array(codes), pa.array(list(self.positions), pa.string())
        )


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


def read_dictionary_csv(
    path: Path | pa.NativeFile,
    read_options: pacsv.ReadOptions,
    parse_options: pacsv.ParseOptions,
    convert_options: pacsv.ConvertOptions,
) -> pa.Table:
    """The CSV file as pyarrow's ``read_csv`` with these options reads it, its dictionary
    columns each one chunk over one dictionary (see the module's docstring).

    ``read_options``' block size is used as given, on one thread; a parse error is
    raised as ``read_csv`` raises it (``pyarrow.ArrowInvalid``).
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    read_options.use_threads = False
    reader = pacsv.open_csv(
        path,
        read_options=read_options,
        parse_options=parse_options,
        convert_options=convert_options,
    )
    schema = reader.schema
    columns = [
        DictionaryColumn() if pa.types.is_dictionary(f.type) else PlainColumn(f.type)
        for f in schema
    ]
    for batch in reader:
        for column, array in zip(columns, batch.columns, strict=True):
            column.add(array)
    return pa.Table.from_arrays([c.finish() for c in columns], names=schema.names)


class LineDictionary:
    """The distinct lines of a file, in the order they first occur, and each line's number
    among them; fed block by block (Arrow's hash tables: no Python object per line)."""

    def __init__(self) -> None:
        import pyarrow as pa

        self.distinct: pa.Array = pa.array([], pa.large_binary())
        self.parts: list[NDArray[np.int32]] = []
        self.count = 0

    def add(self, lines: pa.Array) -> None:
        """Append a block's lines (a ``large_binary`` array)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        encoded = pc.dictionary_encode(lines)
        block = encoded.dictionary
        known = pc.index_in(block, value_set=self.distinct).to_numpy(zero_copy_only=False)
        new = np.isnan(known)
        mapping = np.where(new, 0, known).astype(np.int32)
        mapping[new] = np.arange(
            len(self.distinct), len(self.distinct) + int(new.sum()), dtype=np.int32
        )
        if new.any():
            self.distinct = pa.concat_arrays([self.distinct, block.filter(pa.array(new))])
        self.parts.append(mapping[encoded.indices.to_numpy(zero_copy_only=False)])
        self.count += len(lines)

    def codes(self) -> NDArray[np.int32]:
        """Each line's number among the distinct lines, for the whole file."""
        return np.concatenate(self.parts) if self.parts else np.zeros(0, dtype=np.int32)


def file_lines(path: Path, skip: bool, refused: bytes) -> Iterator[pa.Array]:
    """The lines of a file, each with its ``\\n`` (one is added to a last line without it),
    :data:`LINES_BLOCK` bytes at a time, as ``large_binary`` arrays over the bytes read
    (no copy per line); the first line left out with ``skip``. Raises :class:`NotPlain` at
    a block holding a byte of ``refused``."""
    import pyarrow as pa

    rest, first = b"", skip
    with path.open("rb") as fh:
        while True:
            block = fh.read(LINES_BLOCK)
            data = rest + block if block else rest + b"\n" if rest else b""
            if not data:
                return
            if any(byte in data for byte in refused):
                raise NotPlain
            ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n"))
            offsets = np.concatenate([np.zeros(1, dtype=np.int64), ends + 1])
            if first and len(offsets) > 1:
                offsets, first = offsets[1:], False
            if len(offsets) > 1:
                yield pa.LargeBinaryArray.from_buffers(
                    pa.large_binary(),
                    len(offsets) - 1,
                    [None, pa.py_buffer(offsets), pa.py_buffer(data)],
                )
            rest = data[int(offsets[-1]) :]
            if not block:
                return


class NotPlain(Exception):  # noqa: N818 - a signal between two functions of this module
    """A block holds a quote or a carriage return: its lines may not be its records."""


def read_repeated_csv(
    path: Path,
    skip: bool,
    quotechar: str,
    read_options: pacsv.ReadOptions,
    parse_options: pacsv.ParseOptions,
    convert_options: pacsv.ConvertOptions,
) -> pa.Table | None:
    """:func:`read_dictionary_csv` of a file whose records repeat, each distinct line parsed
    once; ``None`` where that does not apply (then read it with that function).

    When the file holds no quote (``quotechar``) and no carriage return, every
    ``\\n`` ends a record, so equal lines are equal records. The lines are
    numbered in the order they first occur (:class:`LineDictionary`); the
    distinct lines, one after another, are parsed as the file would be
    (``skip``: its first line, the header, left out before), and each column's
    codes are taken for every line by its number. A text first occurs in a
    column on the first occurrence of a line holding it, so each column's
    dictionary is in the same order, its codes the same, as reading the whole
    file gives. ``None`` also when more than :data:`DISTINCT_SHARE` of the lines
    are distinct (nothing to gain), a line is empty (the reader skips it) or the
    distinct lines do not parse (the whole file's read then reports it).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    lines = LineDictionary()
    try:
        for block in file_lines(path, skip, b"\r" + quotechar.encode("utf-8")):
            lines.add(block)
            if lines.count > 1 << 16 and len(lines.distinct) > DISTINCT_SHARE * lines.count:
                return None
    except NotPlain:
        return None
    distinct = lines.distinct
    if not len(distinct) or pc.any(pc.equal(distinct, pa.scalar(b"\n", pa.large_binary()))).as_py():
        return None
    read_options.skip_rows_after_names = 0
    try:
        table = read_dictionary_csv(
            pa.BufferReader(_joined(distinct)), read_options, parse_options, convert_options
        )
    except pa.ArrowInvalid:
        return None
    if table.num_rows != len(distinct):
        return None
    codes = lines.codes()
    return pa.Table.from_arrays(
        [_for_every_line(c.chunk(0) if c.num_chunks else c, codes) for c in table.columns],
        names=table.column_names,
    )


def _joined(values: pa.Array) -> pa.Buffer:
    """The values of a ``large_binary`` array one after another, as one buffer (no copy)."""
    offsets = np.frombuffer(
        values.buffers()[1], dtype=np.int64, count=len(values) + 1, offset=values.offset * 8
    )
    return values.buffers()[2].slice(int(offsets[0]), int(offsets[-1] - offsets[0]))


def _for_every_line(column: pa.Array, codes: NDArray[np.int32]) -> pa.Array:
    """A column of the distinct lines taken for every line (``codes``: each line's number)."""
    import pyarrow as pa

    if pa.types.is_dictionary(column.type):
        indices = column.indices.to_numpy(zero_copy_only=False)
        return pa.DictionaryArray.from_arrays(pa.array(indices[codes]), column.dictionary)
    return column.take(pa.array(codes))
