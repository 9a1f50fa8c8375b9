"""New users' mistakes on the engines' paths give the in-memory run's one line.

Each case runs a command in memory (a file output) and on the engines (a folder output on
the NumPy engine, ``--engine dask``) and expects the same line ``Error: ...``, exit code 2
and nothing written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from anonlab.errors import AnonlabError
from anonlab.textnumbers import exact_matrix
from engines import assert_refused

pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")


def _engine_args(engine: str, request: pytest.FixtureRequest) -> list[str]:
    if engine == "dask":
        return ["--engine", "dask", "--scheduler", request.getfixturevalue("dask_scheduler")]
    return []


def _null_column_parts(folder: Path) -> Path:
    """Two Parquet parts whose column ``y`` holds no value (Arrow's null type)."""
    frame = pd.DataFrame(
        {
            "id": [f"p{i}" for i in range(12)],
            "x": [float(i % 5) for i in range(12)],
            "y": [None] * 12,
        }
    )
    folder.mkdir()
    frame.iloc[:6].to_parquet(folder / "part-0.parquet")
    frame.iloc[6:].to_parquet(folder / "part-1.parquet")
    return folder


@pytest.mark.parametrize("engine", ["numpy", "dask"])
def test_perturb_a_column_with_no_value(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A column of nulls was 'not numeric' on the engines, 'has a missing value' in memory."""
    source = _null_column_parts(tmp_path / "in")
    args = ["perturb", str(source), "--columns", "x,y", "--identifying", "id", "--known", "2"]
    needle = "column 'y' has a missing or infinite value (record 1)"
    memory = assert_refused([*args, "--output", str(tmp_path / "m.parquet")], tmp_path, needle)
    args += _engine_args(engine, request)
    assert assert_refused([*args, "--output", f"{tmp_path / 'out'}/"], tmp_path, needle) == memory


def test_a_frame_column_of_nones_is_missing() -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0], "y": [None, None]})
    with pytest.raises(AnonlabError, match=r"column 'y' has a missing or infinite value \(record"):
        exact_matrix(frame, ["x", "y"])


def test_mask_joins_a_scheduler(tmp_path: Path, dask_scheduler: str) -> None:
    """mask had --engine but no --scheduler, --workers or --memory-limit: they were taken for
    the method's parameters ("'workers' is not a parameter of method topbot")."""
    from typer.testing import CliRunner

    from anonlab.cli.app import app
    from anonlab.io import read_table

    source = tmp_path / "t.csv"
    pd.DataFrame({"x": [float(i) for i in range(30)], "k": ["a", "b", "c"] * 10}).to_csv(
        source, index=False
    )
    args = ["mask", str(source), "--method", "topbot", "--top", "20", "--columns", "x"]
    args += ["--other", "insensitive", "--quiet"]
    runner = CliRunner()
    memory = runner.invoke(app, [*args, "--output", str(tmp_path / "m.parquet")])
    assert memory.exit_code == 0, memory.output
    on_dask = [*args, "--engine", "dask", "--scheduler", dask_scheduler]
    result = runner.invoke(app, [*on_dask, "--output", f"{tmp_path / 'out'}/"])
    assert result.exit_code == 0, result.output
    pd.testing.assert_frame_equal(read_table(tmp_path / "out"), read_table(tmp_path / "m.parquet"))
    assert_refused(
        [*args, "--scheduler", dask_scheduler, "--output", f"{tmp_path / 'no'}/"],
        tmp_path,
        "--scheduler applies to engine 'dask' only",
    )
    assert_refused(
        [*args, "--engine", "dask", "--workers", "0", "--output", f"{tmp_path / 'no'}/"],
        tmp_path,
        "--workers",
    )


@pytest.mark.parametrize("command", ["generalize", "suppress", "mask", "microaggregate", "perturb"])
@pytest.mark.parametrize("engine", ["numpy", "dask"])
def test_an_empty_csv_file_gets_the_in_memory_line(
    command: str, engine: str, data_dir: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A 0-byte CSV file: 'file ... is empty: give a table with a header row' in memory; the
    engines said 'the INPUT argument: file ... is empty ...'."""
    source = tmp_path / "empty.csv"
    source.write_text("")
    args = {
        "generalize": ["--qi", f"sex={data_dir / 'adult' / 'hierarchy_sex.csv'}"],
        "suppress": ["--qi", "sex"],
        "mask": ["--method", "topbot", "--top", "3", "--columns", "x"],
        "microaggregate": ["--variant", "scalable", "--k", "2"],
        "perturb": ["--columns", "x,y"],
    }[command]
    args = [command, str(source), *args, "--other", "insensitive"]
    line = f"Error: file '{source}' is empty: give a table with a header row"
    assert assert_refused([*args, "--output", str(tmp_path / "m.parquet")], tmp_path, "") == line
    args += _engine_args(engine, request)
    assert assert_refused([*args, "--output", f"{tmp_path / 'out'}/"], tmp_path, "") == line


@pytest.mark.parametrize("engine", ["numpy", "dask"])
def test_an_empty_folder_is_named_as_in_memory(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A folder without Parquet parts: the line starts as the in-memory one (the advice names
    what the engines read: no Excel)."""
    (tmp_path / "in").mkdir()
    args = ["mask", str(tmp_path / "in"), "--method", "topbot", "--top", "3", "--columns", "x"]
    args += [*_engine_args(engine, request), "--output", f"{tmp_path / 'out'}/"]
    line = assert_refused(args, tmp_path, "holds no Parquet files: give a folder of Parquet parts")
    assert line.startswith(f"Error: folder '{tmp_path / 'in'}' holds no Parquet files"), line


@pytest.mark.parametrize("engine", ["numpy", "dask"])
def test_mask_an_unknown_column(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """An unknown --columns name: the engine said '--columns names the column 'nope', which
    file ... does not have', memory 'unknown column 'nope' (given as quasi-identifier) ...',
    as every other role's unknown column on both paths."""
    from anonlab.runs.mask import MaskSettings, run_mask

    source = tmp_path / "t.csv"
    pd.DataFrame({"x": [1.0, 2.0, 3.0], "k": ["a", "b", "c"]}).to_csv(source, index=False)
    args = ["mask", str(source), "--method", "topbot", "--top", "2", "--columns", "x,nope"]
    args += ["--other", "insensitive"]
    needle = "unknown column 'nope' (given as quasi-identifier): the table has x, k"
    memory = assert_refused([*args, "--output", str(tmp_path / "m.parquet")], tmp_path, needle)
    on_engine = [*args, *_engine_args(engine, request), "--output", f"{tmp_path / 'out'}/"]
    assert assert_refused(on_engine, tmp_path, needle) == memory
    engine_keys: dict[str, Any] = {}
    if engine == "dask":
        engine_keys = {"engine": "dask", "scheduler": request.getfixturevalue("dask_scheduler")}
    with pytest.raises(AnonlabError) as caught:
        run_mask(
            MaskSettings(
                input=str(source),
                method="topbot",
                columns=["x", "nope"],
                parameters={"top": 2},
                other="insensitive",
                output=f"{tmp_path / 'api'}/",
                **engine_keys,
            )
        )
    assert str(caught.value) == memory.removeprefix("Error: ")
    assert not (tmp_path / "api").exists()


@pytest.mark.parametrize("command", ["suppress", "mask", "microaggregate"])
@pytest.mark.parametrize("engine", ["numpy", "dask"])
def test_a_ragged_csv_reads_as_in_memory(
    command: str, engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A row with a field too many: the engines said 'the INPUT argument: file '<absolute
    path>' is malformed near byte 0 ...' (mask: 'bytes 0-40 of CSV file ...: input: file ...'),
    memory 'file 'x.csv' is ragged or malformed (...): ... check the delimiter (now ',')'."""
    source = tmp_path / "t.csv"
    source.write_text("k,x\na,1\nb,2,9\na,3\nb,4\n")
    args = {
        "suppress": ["--qi", "k"],
        "mask": ["--method", "topbot", "--top", "2", "--columns", "x"],
        "microaggregate": ["--variant", "scalable", "--k", "2", "--columns", "x"],
    }[command]
    args = [command, str(source), *args, "--other", "insensitive"]
    start = f"Error: file '{source}' is ragged or malformed (CSV parse error: "
    memory = assert_refused([*args, "--output", str(tmp_path / "m.parquet")], tmp_path, start)
    assert memory.startswith(start) and memory.endswith("check the delimiter (now ',')")
    args += [*_engine_args(engine, request), "--output", f"{tmp_path / 'out'}/"]
    line = assert_refused(args, tmp_path, "got 3: b,2,9")
    assert line.startswith(start), line
    assert "check the delimiter (now ',')" in line and "convert the file to Parquet" in line
