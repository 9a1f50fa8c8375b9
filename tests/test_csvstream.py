"""The block-by-block dictionary CSV read, the key-table grouping and the allocator set-up.

``read_table(..., strings="dictionary")`` streams a CSV in small blocks
(:mod:`anonlab.csvstream`); whatever the block size, it must give what pyarrow's
whole-file read gives once its dictionaries are unified: the same texts, the
same categories in the same order (of first appearance), the same doubles.
:func:`anonlab.grouping.group_tuples` groups small key spaces with a table over the
keys and must give :func:`pandas.factorize`'s numbering.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from anonlab import csvstream
from anonlab.csvstream import index_dtype, read_dictionary_csv
from anonlab.errors import AnonlabError
from anonlab.grouping import first_appearance_groups, group_tuples
from anonlab.io import read_table
from anonlab.risk.classes import code_dtype, encode_columns


def _write_rows(path: Path, rows: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    ages = rng.integers(17, 91, rows)
    words = np.array(["a", "b,c", 'q"z', "", "é", "long text " * 3])
    picks = rng.integers(0, len(words), rows)
    ids = rng.integers(0, 400, rows)  # more than an int8 code holds
    frame = pd.DataFrame(
        {
            "age": ages.astype(str),
            "word": words[picks],
            "id": [f"id{i}" for i in ids],
            "x": (ages / 7).round(3).astype(str),
        }
    )
    frame.to_csv(path, index=False)


def _whole_read(path: Path, doubles: tuple[str, ...] = ()) -> pa.Table:
    """pyarrow's whole-file read with the same options, dictionaries unified."""
    names = path.read_text(encoding="utf-8").splitlines()[0].split(",")
    kind = pa.dictionary(pa.int32(), pa.string())
    types = {f"f{i}": pa.float64() if n in doubles else kind for i, n in enumerate(names)}
    table = pacsv.read_csv(
        path,
        read_options=pacsv.ReadOptions(
            block_size=1 << 12, autogenerate_column_names=True, skip_rows_after_names=1
        ),
        convert_options=pacsv.ConvertOptions(
            column_types=types,
            null_values=[],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    )
    return table.unify_dictionaries().combine_chunks().rename_columns(names)


@pytest.mark.parametrize("block", [1 << 10, 1 << 12, 1 << 20])
def test_streamed_read_equals_the_whole_read(
    tmp_path: Path, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.csv"
    _write_rows(path, 5000)
    monkeypatch.setattr(csvstream, "STREAM_BLOCK", block)
    streamed = read_table(path, strings="dictionary", doubles=["x"])
    whole = _whole_read(path, doubles=("x",))
    text = read_table(path)
    for name in ("age", "word", "id"):
        expected = whole.column(name).chunk(0)
        assert list(streamed[name].cat.categories) == expected.dictionary.to_pylist()
        assert streamed[name].astype(str).tolist() == text[name].tolist()
    assert streamed["x"].tolist() == whole.column("x").to_pylist()
    assert streamed["id"].cat.codes.dtype == np.int16  # 400 values: two bytes a code


def test_read_dictionary_csv_keeps_the_narrowest_codes(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n" + "".join(f"v{i % 3},w{i}\n" for i in range(300)), encoding="utf-8")
    kind = pa.dictionary(pa.int32(), pa.string())
    table = read_dictionary_csv(
        path,
        pacsv.ReadOptions(block_size=256, autogenerate_column_names=True, skip_rows_after_names=1),
        pacsv.ParseOptions(),
        pacsv.ConvertOptions(column_types={"f0": kind, "f1": kind}),
    )
    assert table.column(0).type.index_type == pa.int8()
    assert table.column(1).type.index_type == pa.int16()
    assert table.column(0).chunk(0).dictionary.to_pylist() == ["v0", "v1", "v2"]
    assert table.column(1).to_pylist() == [f"w{i}" for i in range(300)]


def test_streamed_read_of_a_header_without_rows(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n", encoding="utf-8")
    with pytest.raises(AnonlabError, match="has a header but no rows"):
        read_table(path, strings="dictionary")


def test_a_record_longer_than_a_block_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.csv"
    long = "x" * 5000
    path.write_text(f"a,b\n1,{long}\n2,y\n", encoding="utf-8")
    monkeypatch.setattr(csvstream, "STREAM_BLOCK", 1 << 10)
    frame = read_table(path, strings="dictionary")
    assert frame["b"].astype(str).tolist() == [long, "y"]


def test_line_breaks_inside_quotes(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text('a,b\n1,"two\nlines"\n2,y\n', encoding="utf-8")
    frame = read_table(path, strings="dictionary")
    assert frame["b"].astype(str).tolist() == ["two\nlines", "y"]


def test_index_dtype_follows_pandas() -> None:
    assert index_dtype(0) == np.int8 and index_dtype(126) == np.int8
    assert index_dtype(127) == np.int16 and index_dtype(40000) == np.int32
    codes = pd.Categorical([str(i) for i in range(126)]).codes
    assert codes.dtype == index_dtype(126)
    assert pd.Categorical([str(i) for i in range(127)]).codes.dtype == index_dtype(127)


def test_first_appearance_groups_are_factorize_groups() -> None:
    rng = np.random.default_rng(1)
    for _ in range(50):
        space = int(rng.integers(1, 50))
        key = rng.integers(0, space, int(rng.integers(1, 500))).astype(np.int64)
        inverse, first = first_appearance_groups(key, space)
        expected, uniques = pd.factorize(key)
        assert inverse.tolist() == expected.tolist()
        assert first.tolist() == [int(np.flatnonzero(key == u)[0]) for u in uniques]


def test_group_tuples_of_some_rows_is_group_tuples_of_their_copy() -> None:
    rng = np.random.default_rng(2)
    for big in (False, True):  # a small key space (table) and a large one (hash table)
        cards = [300, 300, 300] if big else [2, 3, 4]
        tuples = np.column_stack([rng.integers(0, c, 400) for c in cards]).astype(np.int32)
        rows = np.flatnonzero(rng.random(400) < 0.6)
        inverse, first = group_tuples(tuples, cards, rows)
        copied_inverse, copied_first = group_tuples(tuples[rows], cards)
        assert inverse.tolist() == copied_inverse.tolist()
        assert first.tolist() == copied_first.tolist()


def test_encoded_codes_are_narrow_and_the_same() -> None:
    frame = pd.DataFrame({"a": ["x", "y", "x", None], "b": [str(i) for i in range(4)]})
    encoded = encode_columns(frame, ["a", "b"])
    assert encoded.codes.dtype == np.int8
    assert encoded.codes.tolist() == [[0, 0], [1, 1], [0, 2], [2, 3]]
    assert code_dtype(128) == np.int8 and code_dtype(129) == np.int16


def _pool_after_tuning(command: str, env: dict[str, str], *args: str) -> str:
    code = (
        "import sys\n"
        "from anonlab.cli.app import main\n"
        "from anonlab.memory import tune_allocators_at_start\n"
        "tune_allocators_at_start(sys.argv[1:])\n"
        "import pyarrow as pa\n"
        "print(pa.default_memory_pool().backend_name)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, command, *args, "--help"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_generalize_puts_arrow_on_the_c_allocator() -> None:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    assert _pool_after_tuning("generalize", env) == "system"
    # an engine run holds no large array to give back: the allocators stay as they are
    assert _pool_after_tuning("generalize", env, "--output", "out/") != "system"
    assert _pool_after_tuning("generalize", env, "--engine=dask") != "system"
    default = _pool_after_tuning("perturb", env)  # other commands keep Arrow's default
    assert default != "system"
    env["ARROW_DEFAULT_MEMORY_POOL"] = default  # a user's choice is kept
    assert _pool_after_tuning("generalize", env) == default


def _options(path: Path, skip: bool = True) -> tuple[Any, Any, Any]:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    kind = pa.dictionary(pa.int32(), pa.string())
    types = {f"f{i}": kind for i in range(len(first.split(",")))}
    return (
        pacsv.ReadOptions(
            block_size=1 << 10, autogenerate_column_names=True, skip_rows_after_names=int(skip)
        ),
        pacsv.ParseOptions(delimiter=","),
        pacsv.ConvertOptions(
            column_types=types,
            null_values=[],
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
        ),
    )


def _repeated_rows(path: Path, rows: int, seed: int = 0, end: str = "\n") -> None:
    rng = np.random.default_rng(seed)
    lines = [
        f"{a},{w},id{i}"
        for a, w, i in zip(
            rng.integers(17, 25, rows),
            rng.choice(["x", "", "é", "y z"], rows),
            rng.integers(0, 300, rows),
            strict=True,
        )
    ]
    path.write_text("age,word,id\n" + "\n".join(lines) + end, encoding="utf-8")


@pytest.mark.parametrize("end", ["\n", ""])
@pytest.mark.parametrize("skip", [True, False])
def test_distinct_lines_read_equals_the_streamed_read(
    tmp_path: Path, end: str, skip: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each distinct line parsed once: the same table (texts, codes, dictionaries in order of
    first appearance, narrowest codes) as reading every line, with or without the header
    and a line break at the end, whatever the block of lines."""
    path = tmp_path / "t.csv"
    _repeated_rows(path, 20_000, end=end)
    monkeypatch.setattr(csvstream, "LINES_BLOCK", 997)  # blocks end inside lines
    once = csvstream.read_repeated_csv(path, skip, '"', *_options(path, skip))
    assert once is not None
    every = read_dictionary_csv(path, *_options(path, skip))
    assert once.equals(every)
    assert [c.type for c in once.columns] == [c.type for c in every.columns]


def test_distinct_lines_read_gives_way(tmp_path: Path) -> None:
    """None (read every line instead) where lines may not be records, a line is empty, the
    lines are mostly distinct or do not parse."""
    path = tmp_path / "t.csv"
    _repeated_rows(path, 2000)
    text = path.read_text(encoding="utf-8")
    cases = {
        "quote": text + '"a,b",x,id1\n',
        "carriage return": text.replace("\n", "\r\n"),
        "empty line": text + "\n20,x,id1\n",
        "short line": text + "20,x\n",
    }
    for name, content in cases.items():
        path.write_text(content, encoding="utf-8")
        assert csvstream.read_repeated_csv(path, True, '"', *_options(path)) is None, name
    path.write_text("i\n" + "".join(f"{i}\n" for i in range(100_000)), encoding="utf-8")
    assert csvstream.read_repeated_csv(path, True, '"', *_options(path)) is None


def test_read_table_repeated_is_the_same_frame(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    _repeated_rows(path, 5000)
    once = read_table(path, strings="dictionary", repeated=True)
    pd.testing.assert_frame_equal(once, read_table(path, strings="dictionary"))
    for column in once.columns:
        assert once[column].cat.codes.dtype == np.int8 or column == "id"
    path.write_text(path.read_text(encoding="utf-8") + '"a,b",x,id1\n', encoding="utf-8")
    pd.testing.assert_frame_equal(
        read_table(path, strings="dictionary", repeated=True),
        read_table(path, strings="dictionary"),
    )
