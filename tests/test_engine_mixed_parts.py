"""A Parquet folder whose parts store a column with other (compatible) types, on the engines.

The one reader (:func:`anonlab.sources.read_parquet`) reads such a folder as a pyarrow
dataset: the first part's types, the other parts' values cast to them (an integer part
of a double column, an all-null part of a text column, numbers in a text column). The
NumPy and Dask engines read it the same way, so the in-memory run, the NumPy engine and
Dask write the same release (``generalize``, ``microaggregate``); parts that do not fit
(a column missing, text in a number column) are refused in one line naming the part.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.io import read_table
from anonlab.runs.microaggregate import MicroaggregateSettings, run_microaggregate
from engines import assert_refused

pytest.importorskip("distributed")
pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")

QIS = ["sex", "age", "race", "education"]


def _digest(frame: pd.DataFrame) -> str:
    """A content hash of a table's rows as text, independent of their order."""
    text = frame.astype(str)
    rows = sorted("\x1f".join(r) for r in text.itertuples(index=False, name=None))
    return hashlib.sha256("\x1e".join([",".join(frame.columns), *rows]).encode()).hexdigest()


def _write(folder: Path, tables: list[pa.Table]) -> Path:
    folder.mkdir()
    for i, table in enumerate(tables):
        pq.write_table(table, folder / f"part-{i}.parquet")
    return folder


@pytest.fixture(scope="module")
def adult(data_dir: Path) -> pd.DataFrame:
    frame = read_table(data_dir / "adult" / "adult.csv", delimiter=";")
    return frame.iloc[:3000][[*QIS, "salary-class"]].reset_index(drop=True)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory, adult: pd.DataFrame) -> Path:
    """Adult's first 3,000 records in three parts: ``age`` int64, double, int64; ``note``
    text, all null (Arrow's null type), integers."""

    def part(rows: slice, age: pa.DataType, note: pa.Array) -> pa.Table:
        chunk = adult.iloc[rows]
        columns = {c: pa.array(chunk[c].tolist(), pa.string()) for c in adult.columns}
        columns["age"] = pa.array([int(v) for v in chunk["age"]], pa.int64()).cast(age)
        columns["note"] = note
        return pa.table(columns)

    return _write(
        tmp_path_factory.mktemp("mixed") / "in",
        [
            part(slice(0, 1000), pa.int64(), pa.array(["n", "m"] * 500)),
            part(slice(1000, 2000), pa.float64(), pa.nulls(1000)),
            part(slice(2000, 3000), pa.int64(), pa.array(list(range(7, 1007)))),
        ],
    )


def _generalize(data_dir: Path, source: Path, output: str, *extra: str) -> list[str]:
    args = ["generalize", str(source)]
    for q in QIS:
        args += ["--qi", f"{q}={data_dir / 'adult' / f'hierarchy_{q}.csv'}"]
    args += ["--sensitive", "salary-class", "--insensitive", "note", "--k", "5"]
    return [*args, "--suppression", "1%", "--output", output, *extra]


def test_the_folder_reads_in_memory(mixed: Path, adult: pd.DataFrame) -> None:
    frame = read_table(mixed)
    assert frame["age"].tolist() == adult["age"].tolist()  # the doubles cast to int64
    assert frame["note"].iloc[[0, 1000, 2000]].tolist() == ["n", "", "7"]


def test_generalize_in_memory_numpy_and_dask_write_one_release(
    data_dir: Path, mixed: Path, tmp_path: Path, dask_scheduler: str
) -> None:
    runner = CliRunner()
    memory = runner.invoke(app, _generalize(data_dir, mixed, str(tmp_path / "m.parquet")))
    assert memory.exit_code == 0, memory.output
    expected = _digest(read_table(tmp_path / "m.parquet"))
    for engine in ("numpy", "dask"):
        extra = ["--engine", "dask", "--scheduler", dask_scheduler] if engine == "dask" else []
        out = f"{tmp_path / engine}/"
        result = runner.invoke(app, _generalize(data_dir, mixed, out, *extra))
        assert result.exit_code == 0, result.output
        assert _digest(read_table(tmp_path / engine)) == expected, engine


def _settings(source: Path, output: str, **extra: Any) -> MicroaggregateSettings:
    return MicroaggregateSettings(
        input=str(source),
        k=3,
        variant="scalable",
        identifying=["id"],
        sensitive=["s"],
        output=output,
        **extra,
    )


def test_microaggregate_in_memory_numpy_and_dask_write_one_release(
    tmp_path: Path, dask_scheduler: str
) -> None:
    """Numbers stored as int64 in one part and double in another; the sensitive column all
    null in one part: the Python API and the command give the in-memory release."""
    rng = np.random.default_rng(3)
    a = rng.integers(0, 1000, 900)
    b = rng.normal(0.0, 10.0, 900).round(2)
    s = rng.choice(["x", "y"], 900)

    def part(rows: slice, kind: pa.DataType, text: bool) -> pa.Table:
        ids = [f"p{i:04d}" for i in range(rows.start, rows.stop)]
        sensitive = pa.array(s[rows].tolist()) if text else pa.nulls(rows.stop - rows.start)
        return pa.table(
            {
                "id": ids,
                "a": pa.array(a[rows], pa.int64()).cast(kind),
                "b": b[rows],
                "s": sensitive,
            }
        )

    source = _write(
        tmp_path / "in",
        [part(slice(0, 300), pa.int64(), True), part(slice(300, 900), pa.float64(), False)],
    )
    run_microaggregate(_settings(source, str(tmp_path / "memory.parquet")))
    expected = pd.read_parquet(tmp_path / "memory.parquet")
    run_microaggregate(_settings(source, f"{tmp_path / 'numpy'}/"))
    code = CliRunner().invoke(
        app,
        [
            "microaggregate",
            str(source),
            "--variant",
            "scalable",
            "--k",
            "3",
            "--identifying",
            "id",
            "--sensitive",
            "s",
            "--engine",
            "dask",
            "--scheduler",
            dask_scheduler,
            "--output",
            f"{tmp_path / 'dask'}/",
        ],
    )
    assert code.exit_code == 0, code.output
    for engine in ("numpy", "dask"):
        got = pd.read_parquet(tmp_path / engine)
        assert np.array_equal(got[["a", "b"]].to_numpy(), expected[["a", "b"]].to_numpy())
        assert [str(v) for v in got["s"]] == [str(v) for v in expected["s"]], engine


@pytest.mark.parametrize(
    ("second", "needle"),
    [
        (pa.table({"age": pa.array([1.5, 2.0])}), "lacks the column 'sex'"),
        (
            pa.table({"sex": ["Male", "Female"], "age": pa.array([1.5, 2.0])}),
            "a value cannot be read as int64",
        ),
        (
            pa.table({"sex": ["Male", "Female"], "age": ["39", "x"]}),
            "a value cannot be read as int64",
        ),
        (
            pa.table({"sex": ["Male", "Female"], "age": pa.array([None, None], pa.date32())}),
            "Arrow cannot cast date32[day] to int64",
        ),
    ],
)
@pytest.mark.parametrize("engine", ["numpy", "dask"])
def test_parts_that_do_not_fit_are_refused_naming_the_part(
    data_dir: Path,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    second: pa.Table,
    needle: str,
    engine: str,
) -> None:
    first = pa.table({"sex": ["Male", "Female"], "age": pa.array([39, 50], pa.int64())})
    source = _write(tmp_path / "in", [first, second])
    args = ["generalize", str(source), "--k", "1"]
    args += ["--qi", f"age={data_dir / 'adult' / 'hierarchy_age.csv'}"]
    args += ["--qi", f"sex={data_dir / 'adult' / 'hierarchy_sex.csv'}"]
    if engine == "dask":
        args += ["--engine", "dask", "--scheduler", request.getfixturevalue("dask_scheduler")]
    line = assert_refused([*args, "--output", f"{tmp_path}/out/"], tmp_path, needle)
    assert "part-1.parquet" in line


def test_a_value_that_does_not_cast_names_both_parts_as_given(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative folder: the refusal names the failing part and the first part as the
    user gave the folder (the pieces keep absolute paths for the workers)."""
    first = pa.table({"sex": ["Male", "Female"], "age": pa.array([39, 50], pa.int64())})
    second = pa.table({"sex": ["Male", "Female"], "age": pa.array([1.5, 2.0])})
    _write(tmp_path / "in", [first, second])
    monkeypatch.chdir(tmp_path)
    args = ["generalize", "in", "--k", "1", "--output", "out/"]
    args += ["--qi", f"age={data_dir / 'adult' / 'hierarchy_age.csv'}"]
    args += ["--qi", f"sex={data_dir / 'adult' / 'hierarchy_sex.csv'}"]
    line = assert_refused(args, tmp_path, "a value cannot be read as int64")
    assert "Parquet part 'in/part-1.parquet' stores column 'age' as double" in line
    assert "but part 'in/part-0.parquet' as int64" in line
