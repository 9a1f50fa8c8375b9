"""Reading and writing perturbed tables: exact doubles, parts joined in order, fast paths."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from anonlab.perturbation import table as table_module
from anonlab.perturbation.attacks import procrustes_rotation
from anonlab.perturbation.evaluate import privacy_measures
from anonlab.perturbation.measures import measure_block
from anonlab.perturbation.table import (
    numeric_columns,
    read_perturb_table,
    with_columns,
    write_csv_parts,
    write_release,
)

FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)
EDGE = [0.1, -0.0, 5e-324, 2.2250738585072014e-308, 1e16, 1.7976931348623157e308,
        123456789012345678.0, 1 / 3, -2.5e-7, 9007199254740993.0]


def _plain_csv(table: pa.Table, delimiter: str = ",", style: str = "none") -> bytes:
    sink = io.BytesIO()
    pacsv.write_csv(table, sink, write_options=pacsv.WriteOptions(
        include_header=False, delimiter=delimiter, quoting_style=style))
    return sink.getvalue()


@settings(max_examples=25, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 30), st.integers(2, 4)), elements=FINITE))
def test_csv_release_gives_back_the_exact_doubles(values: np.ndarray) -> None:
    import tempfile

    values = np.asfortranarray(values)
    names = [f"c{j}" for j in range(values.shape[1])]
    table = with_columns(pa.table({n: pa.array(np.zeros(values.shape[0])) for n in names}),
                         names, [values[:, j] for j in range(values.shape[1])])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rel.csv"
        write_release(table, path)
        back = numeric_columns(read_perturb_table(path, names), names, allow_constant=True)
    assert np.all(back.values == values)  # every double exactly (-0.0 reads back as 0.0)


def test_edge_doubles_are_printed_shortest_and_read_back_exactly(tmp_path: Path) -> None:
    values = np.array(EDGE)
    table = pa.table({"x": values, "y": values[::-1].copy()})
    path = tmp_path / "edge.csv"
    write_release(table, path)
    lines = path.read_text().splitlines()
    assert lines[0] == "x,y"
    printed = [line.split(",")[0] for line in lines[1:]]
    for text, v in zip(printed, values, strict=True):
        assert float(text) == v
        digits = text.lstrip("-").split("e")[0].replace(".", "").strip("0")
        assert len(digits) <= len(repr(float(v)).lstrip("-").split("e")[0].replace(".", "")
                                  .strip("0"))  # no more significant digits than repr
    back = numeric_columns(read_perturb_table(path, ["x", "y"]), ["x", "y"]).values
    assert np.all(back[:, 0] == values) and np.all(back[:, 1] == values[::-1])


@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_parts_join_to_the_bytes_of_one_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              parts: int) -> None:
    monkeypatch.setattr(table_module, "CSV_PART_ROWS", 5)
    rng = np.random.default_rng(parts)
    table = pa.table({"a": rng.standard_normal(101), "b": rng.integers(-9, 9, 101),
                      "t": [f"z{i:03d}" for i in range(101)]})
    options = pacsv.WriteOptions(include_header=False, quoting_style="none")
    path = tmp_path / "p.csv"
    write_csv_parts(table, path, b"a,b,t\n", options, parts=parts)
    assert path.read_bytes() == b"a,b,t\n" + _plain_csv(table)
    assert sorted(os.listdir(tmp_path)) == ["p.csv"]  # no part file left behind


def test_parts_are_joined_without_copy_file_range(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> int:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(table_module, "CSV_PART_ROWS", 10)
    monkeypatch.setattr(os, "copy_file_range", refuse)
    table = pa.table({"a": np.arange(95.0) / 7})
    path = tmp_path / "p.csv"
    write_csv_parts(table, path, b"a\n", pacsv.WriteOptions(include_header=False), parts=4)
    assert path.read_bytes() == b"a\n" + _plain_csv(table, style="needed")


@pytest.mark.parametrize("delimiter", [",", ";", "\t"])
def test_delimiter_and_quoting_are_kept_in_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 delimiter: str) -> None:
    monkeypatch.setattr(table_module, "CSV_PART_ROWS", 4)
    monkeypatch.setattr(table_module, "usable_cpus", lambda: 3)
    texts = ["plain", f"has{delimiter}delim", 'has "quote"', "two\nlines", ""] * 6
    table = pa.table({"v": np.linspace(-1, 1, 30), "s": texts,
                      "c": pa.array(["p", "q"] * 15).dictionary_encode()})
    path = tmp_path / "q.csv"
    write_release(table, path, delimiter)
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh, delimiter=delimiter))
    assert rows[0] == ["v", "s", "c"]
    assert [r[1] for r in rows[1:]] == texts
    assert [r[2] for r in rows[1:]] == ["p", "q"] * 15  # categories decoded
    assert [float(r[0]) for r in rows[1:]] == np.linspace(-1, 1, 30).tolist()
    plain = pa.table({"v": np.linspace(-1, 1, 30), "s": ["x"] * 30})
    write_release(plain, path, delimiter)
    assert '"' not in path.read_text()  # quotes only when a value needs them


def test_numeric_columns_copy_every_chunk_in_order() -> None:
    a = pa.chunked_array([[1.5, 2.5], [3.5], [4.5, 5.5, 6.5]])
    b = pa.chunked_array([[1, 2, 3], [4, 5, 7]])
    c = pa.chunked_array([pa.array([2.0, 1.0, 2.0]).dictionary_encode(),
                          pa.array([3.0, 3.0, 1.0]).dictionary_encode()])
    data = numeric_columns(pa.table({"a": a, "b": b, "c": c}), None)
    assert data.values.flags.f_contiguous
    assert data.values.tolist() == [[1.5, 1, 2], [2.5, 2, 1], [3.5, 3, 2], [4.5, 4, 3],
                                    [5.5, 5, 3], [6.5, 7, 1]]
    assert data.integer == [False, True, False]


def test_release_columns_are_wrapped_without_a_copy() -> None:
    values = np.asfortranarray(np.arange(12.0).reshape(6, 2))
    table = with_columns(pa.table({"x": [0.0] * 6, "y": [0.0] * 6}), ["x", "y"],
                         [values[:, 0], values[:, 1]])
    assert table.column("y").chunk(0).buffers()[1].address == values[:, 1].ctypes.data
    strided = with_columns(pa.table({"x": [0.0] * 3}), ["x"], [np.arange(6.0)[::2]])
    assert strided.column("x").to_pylist() == [0.0, 2.0, 4.0]


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 6), st.integers(3, 40))
def test_procrustes_rotation_matches_scipy(seed: int, d: int, m: int) -> None:
    from scipy.linalg import orthogonal_procrustes

    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((m, d)), rng.standard_normal((m, d))
    q = procrustes_rotation(a, b)
    assert np.allclose(q @ q.T, np.eye(d), atol=1e-12)
    assert np.allclose(q, orthogonal_procrustes(a, b)[0], atol=1e-9)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["obt", "rbt", "rotation", "gdp"]),
       st.integers(2, 7))
def test_privacy_measures_equal_the_block_by_block_reference(seed: int, method: str,
                                                             d: int) -> None:
    import pandas as pd

    from anonlab.perturbation import perturb

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.exponential(1.0, (60, d)) @ rng.standard_normal((d, d)),
                         columns=[f"c{j}" for j in range(d)])
    p = perturb(frame, method=method, seed=seed % 1000, rho=(0.2, 0.2), noise=0.3)
    blocks, overall = privacy_measures(p.key, p.standardized, p.released)
    names = list(p.key.columns)
    for got, block in zip(blocks, p.key.blocks, strict=True):
        idx = [names.index(c) for c in block.columns]
        ref = measure_block(block.matrix, p.standardized[:, idx], p.released[:, idx])
        assert got["columns"] == list(block.columns)
        for k, v in ref.items():
            assert got[k] == pytest.approx(v, rel=1e-10, abs=1e-12)
    ref = measure_block(p.key.full_matrix(), p.standardized, p.released)
    for k, v in ref.items():
        assert overall[k] == pytest.approx(v, rel=1e-10, abs=1e-15)


def test_perturb_command_imports_neither_pandas_nor_scipy(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    src = tmp_path / "in.csv"
    src.write_text("a,b,c\n" + "\n".join(",".join(f"{v:.4f}" for v in row)
                                         for row in rng.standard_normal((50, 3))) + "\n")
    out, key, back = tmp_path / "out.csv", tmp_path / "key.json", tmp_path / "back.csv"
    code = (
        "import sys, json\n"
        "from anonlab.cli.app import main\n"
        "sys.argv = ['anonlab'] + json.loads(sys.argv[1])\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "print(json.dumps(sorted(m for m in ('pandas', 'scipy', 'sklearn') if m in sys.modules)))\n"
    )
    for args in (["perturb", str(src), "--output", str(out), "--key", str(key), "--quiet"],
                 ["perturb", "--invert", "--key", str(key), str(out), "--output", str(back),
                  "--quiet"]):
        res = subprocess.run([sys.executable, "-c", code, json.dumps(args)],
                             capture_output=True, text=True, check=False)
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout.strip().splitlines()[-1]) == []
    original = numeric_columns(read_perturb_table(src, None), None).values
    restored = numeric_columns(read_perturb_table(back, None), None).values
    assert np.allclose(restored, original, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", [pa.int8(), pa.uint16(), pa.int32(), pa.int64(), pa.uint64(),
                                  pa.float16(), pa.float32(), pa.float64()])
def test_numeric_columns_read_every_width_and_offset(kind: pa.DataType) -> None:
    base = pa.array(np.arange(12).astype(kind.to_pandas_dtype()), type=kind)
    table = pa.table({"a": pa.chunked_array([base.slice(3, 4), base.slice(9, 2)]),
                      "b": pa.chunked_array([base.slice(0, 4), base.slice(5, 2)])})
    data = numeric_columns(table, None)
    assert data.values[:, 0].tolist() == [3, 4, 5, 6, 9, 10]
    assert data.values[:, 1].tolist() == [0, 1, 2, 3, 5, 6]


def test_decimal_columns_are_numeric() -> None:
    # Parquet files from databases often hold money as decimal128
    import decimal

    a = pa.array([decimal.Decimal("1.25"), decimal.Decimal("-3.50"), decimal.Decimal("7.00")],
                 type=pa.decimal128(9, 2))
    table = pa.table({"a": pa.chunked_array([a.slice(0, 1), a.slice(1, 2)]),
                      "b": pa.array([1.0, 2.0, 4.0])})
    data = numeric_columns(table, None)
    assert data.values[:, 0].tolist() == [1.25, -3.5, 7.0]
    assert data.integer == [False, False]
