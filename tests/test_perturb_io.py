"""The chosen columns as numbers: exact doubles through the one reader and writer, every source."""

from __future__ import annotations

import decimal
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.io import read_table, write_table
from anonlab.perturbation.attacks import procrustes_rotation
from anonlab.perturbation.evaluate import privacy_measures
from anonlab.perturbation.measures import measure_block
from anonlab.perturbation.table import numeric_columns

FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)
EDGE = [
    0.1,
    -0.0,
    5e-324,
    2.2250738585072014e-308,
    1e16,
    1.7976931348623157e308,
    123456789012345678.0,
    1 / 3,
    -2.5e-7,
    9007199254740993.0,
]


@settings(max_examples=25, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 30), st.integers(2, 4)), elements=FINITE))
def test_csv_release_gives_back_the_exact_doubles(values: NDArray[np.float64]) -> None:
    import tempfile

    names = [f"c{j}" for j in range(values.shape[1])]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rel.csv"
        write_table(pd.DataFrame(values, columns=names), path)
        back = numeric_columns(read_table(path, dtype=str), names, allow_constant=True)
    assert np.all(back.values == values)  # every double exactly (-0.0 reads back as 0.0)


def test_edge_doubles_are_printed_shortest_and_read_back_exactly(tmp_path: Path) -> None:
    values = np.array(EDGE)
    path = tmp_path / "edge.csv"
    write_table(pd.DataFrame({"x": values, "y": values[::-1].copy()}), path)
    lines = path.read_text().splitlines()
    assert lines[0] == "x,y"
    printed = [line.split(",")[0] for line in lines[1:]]
    for text, v in zip(printed, values, strict=True):
        assert float(text) == v
        digits = text.lstrip("-").split("e")[0].replace(".", "").strip("0")
        assert len(digits) <= len(
            repr(float(v)).lstrip("-").split("e")[0].replace(".", "").strip("0")
        )  # no more significant digits than repr
    back = numeric_columns(read_table(path, dtype=str), ["x", "y"]).values
    assert np.all(back[:, 0] == values) and np.all(back[:, 1] == values[::-1])


def test_text_columns_integer_or_double() -> None:
    frame = pd.DataFrame(
        {
            "i": ["007", "+5", "-3", "12"],
            "f": ["1.50", "2e3", ".5", "-0"],
            "big": ["1", "2", "3", "99999999999999999999"],
        }
    )
    data = numeric_columns(frame, None)
    assert data.integer == [True, False, False]  # 20 digits do not fit 64 bits: doubles
    assert data.values[:, 0].tolist() == [7, 5, -3, 12]
    assert data.values[:, 1].tolist() == [1.5, 2000.0, 0.5, 0.0]
    assert data.values[3, 2] == 1e20 and data.values.flags.f_contiguous


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "column 'b' has a missing or infinite value (record 3)"),
        ("NA", "column 'b' has a missing or infinite value (record 3)"),
        ("nan", "column 'b' has a missing or infinite value (record 3)"),
        ("inf", "column 'b' has a missing or infinite value (record 3)"),
        ("0x10", "column 'b' is not numeric (record 3: '0x10')"),
        (" 1.5", "column 'b' is not numeric (record 3: ' 1.5')"),
        ("1_000", "column 'b' is not numeric (record 3: '1_000')"),
        ("abc", "column 'b' is not numeric (record 3: 'abc')"),
    ],
)
def test_a_bad_text_value_is_named_with_its_record(value: str, message: str) -> None:
    frame = pd.DataFrame({"a": ["1", "2", "3", "4"], "b": ["1.5", "2", value, "4"]})
    with pytest.raises(AnonlabError, match=message.replace("(", r"\(").replace(")", r"\)")):
        numeric_columns(frame, None)


def test_dataframe_columns_of_every_kind() -> None:
    frame = pd.DataFrame(
        {
            "f64": np.array([1.5, 2.5, 3.5]),
            "f32": np.array([1, 2, 4], dtype=np.float32),
            "i8": np.array([1, 2, 7], dtype=np.int8),
            "u64": np.array([3, 2, 1], dtype=np.uint64),
            "nullable": pd.array([4, 5, 6], dtype="Int64"),
            "cat": pd.Categorical([2.0, 1.0, 2.0]),
            "dec": [decimal.Decimal("1.25"), decimal.Decimal("-3.50"), decimal.Decimal("7.00")],
            "arrow": pd.Series(["1", "2", "5"], dtype=pd.ArrowDtype(pa.string())),
        }
    )
    data = numeric_columns(frame, None)
    assert data.values.tolist() == [
        [1.5, 1, 1, 3, 4, 2, 1.25, 1],
        [2.5, 2, 2, 2, 5, 1, -3.5, 2],
        [3.5, 4, 7, 1, 6, 2, 7.0, 5],
    ]
    assert data.integer == [False, False, True, True, True, False, False, True]
    with pytest.raises(
        AnonlabError,
        match="column 'b' has a missing or infinite value "
        r"\(record 2\)",
    ):
        numeric_columns(pd.DataFrame({"a": [1, 2, 3], "b": pd.array([1, None, 3], "Int64")}), None)
    with pytest.raises(AnonlabError, match="column 'b' is not numeric"):
        numeric_columns(pd.DataFrame({"a": [1, 2], "b": [True, False]}), None)


def test_every_source_gives_the_same_numbers(tmp_path: Path) -> None:
    # CSV, Parquet and a DataFrame through the one reader: the same doubles, the same types
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(
        {
            "x": rng.normal(size=50).round(6),
            "n": rng.integers(-9, 9, 50),
            "zip": [f"0{i:04d}" for i in range(50)],
        }
    )
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    results = [
        numeric_columns(read_table(source, dtype=str), ["x", "n"])
        for source in (tmp_path / "t.csv", tmp_path / "t.parquet", frame)
    ]
    for got in results:
        assert np.array_equal(got.values, results[0].values)
        assert got.integer == [False, True]
    assert np.array_equal(results[0].values[:, 0], frame["x"].to_numpy())


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
@given(
    st.integers(0, 2**32 - 1), st.sampled_from(["obt", "rbt", "rotation", "gdp"]), st.integers(2, 7)
)
def test_privacy_measures_equal_the_block_by_block_reference(
    seed: int, method: str, d: int
) -> None:
    import warnings

    from anonlab.perturbation import RecoverableReleaseWarning, perturb

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        rng.exponential(1.0, (60, d)) @ rng.standard_normal((d, d)),
        columns=[f"c{j}" for j in range(d)],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoverableReleaseWarning)  # not what is tested here
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


def test_perturb_command_imports_neither_scipy_nor_sklearn(tmp_path: Path) -> None:
    # without a report the command needs no clustering or PCA/ICA (scikit-learn, SciPy)
    rng = np.random.default_rng(3)
    src = tmp_path / "in.csv"
    src.write_text(
        "a,b,c\n"
        + "\n".join(",".join(f"{v:.4f}" for v in row) for row in rng.standard_normal((50, 3)))
        + "\n"
    )
    out, key, back = tmp_path / "out.csv", tmp_path / "key.json", tmp_path / "back.csv"
    code = (
        "import sys, json\n"
        "from anonlab.cli.app import main\n"
        "sys.argv = ['anonlab'] + json.loads(sys.argv[1])\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "print(json.dumps(sorted(m for m in ('scipy', 'sklearn') if m in sys.modules)))\n"
    )
    for args in (
        ["perturb", str(src), "--output", str(out), "--key", str(key), "--quiet"],
        ["perturb", "--invert", "--key", str(key), str(out), "--output", str(back), "--quiet"],
    ):
        res = subprocess.run(
            [sys.executable, "-c", code, json.dumps(args)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout.strip().splitlines()[-1]) == []
    original = numeric_columns(read_table(src, dtype=str), None).values
    restored = numeric_columns(read_table(back, dtype=str), None).values
    assert np.allclose(restored, original, rtol=0, atol=1e-12)
