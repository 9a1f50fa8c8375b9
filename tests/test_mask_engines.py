"""``anonlab mask`` on the NumPy and Dask engines (docs/masking.md, "Engines").

The row-wise methods (``topbot``; ``recode`` with its breaks given) run piece by piece
and write a folder of Parquet parts that reads back as the in-memory release of the
same table, with the same report figures; the other methods, and recode's computed
breaks, are refused in one line with nothing written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from anonlab.errors import AnonlabError
from anonlab.io import read_table
from anonlab.runs.mask import MaskSettings, run_mask
from engines import assert_refused, write_parts

pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")

ROWS = 1_200
#: the input's parts: uneven, one of them empty of the lowest break's value
BOUNDS = [0, 100, 101, 700, ROWS]


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    data = pd.DataFrame(
        {
            "income": rng.normal(50.0, 15.0, ROWS).round(2).clip(0.5, 99.5),
            "age": rng.integers(18, 90, ROWS),
            "region": rng.choice(["north", "south", "east"], ROWS),
            "name": [f"p{i}" for i in range(ROWS)],
        }
    )
    data.loc[400, "income"] = 0.0  # on recode's lowest break, in the third part only
    return data


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, frame: pd.DataFrame) -> Path:
    return write_parts(frame, tmp_path_factory.mktemp("mask") / "input", BOUNDS)


def _engine(name: str, cluster: str | None) -> dict[str, Any]:
    return {"engine": "dask", "scheduler": cluster} if name == "dask" else {}


CASES: list[tuple[str, dict[str, Any]]] = [
    ("topbot", {"top": 70, "top_replacement": 75.5, "bottom": 30}),
    ("recode", {"breaks": [0, 20, 40, 60, 80, 100]}),
    ("recode", {"breaks": "0,50,100", "labels": "low,high"}),
]


@pytest.mark.parametrize("engine", ["numpy", "dask"])
@pytest.mark.parametrize(("method", "parameters"), CASES)
def test_engine_release_is_the_in_memory_one(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    folder: Path,
    engine: str,
    method: str,
    parameters: dict[str, Any],
) -> None:
    cluster = request.getfixturevalue("dask_scheduler") if engine == "dask" else None
    common: dict[str, Any] = {
        "input": str(folder),
        "method": method,
        "columns": ["income", "age"],
        "parameters": parameters,
        "identifying": ["name"],
        "other": "insensitive",
    }
    on_engine = run_mask(
        MaskSettings(
            **common,
            output=f"{tmp_path}/release/",
            report=str(tmp_path / "engine.json"),
            **_engine(engine, cluster),
        )
    )
    in_memory = run_mask(
        MaskSettings(
            **common, output=str(tmp_path / "memory.parquet"), report=str(tmp_path / "m.json")
        )
    )
    written = read_table(tmp_path / "release")
    expected = read_table(tmp_path / "memory.parquet")
    pd.testing.assert_frame_equal(written, expected)
    assert len(list((tmp_path / "release").glob("*.parquet"))) == len(BOUNDS) - 1
    for key in ("masking", "measures", "risk", "records", "masked_columns", "verified"):
        assert on_engine.report[key] == in_memory.report[key], key
    report = json.loads((tmp_path / "engine.json").read_text())
    assert report["engine"]["name"] == engine
    assert report["engine"]["parts"] == len(BOUNDS) - 1
    assert "name" not in written.columns


def test_recode_closes_the_first_interval_in_every_piece(tmp_path: Path, folder: Path) -> None:
    """The lowest break's value lies in one piece; every piece writes '[0,20]' alike."""
    run_mask(
        MaskSettings(
            input=str(folder),
            method="recode",
            columns=["income"],
            parameters={"breaks": [0, 20, 40, 60, 80, 100]},
            output=f"{tmp_path}/out/",
            identifying=["name"],
            other="insensitive",
        )
    )
    first: dict[str, set[str]] = {}
    for part in sorted((tmp_path / "out").glob("part-*.parquet")):
        values = pq.read_table(part).column("income").to_pylist()
        first[part.name] = {v for v in values if v.startswith(("[0,", "(0,"))}
    assert set().union(*first.values()) == {"[0,20]"}
    assert sum(1 for values in first.values() if values) >= 2  # not only the piece holding 0


def test_a_missing_value_stays_missing_on_an_engine(tmp_path: Path) -> None:
    data = pd.DataFrame({"x": ["5", "", "150", "7.25", ""], "k": ["a", "b", "c", "d", "e"]})
    source = write_parts(data, tmp_path / "in", [0, 2, 5])
    common: dict[str, Any] = {
        "input": str(source),
        "method": "recode",
        "columns": ["x"],
        "parameters": {"breaks": [0, 100, 200], "labels": ["low", "high"]},
        "other": "insensitive",
        "insensitive": ["k"],
    }
    result = run_mask(
        MaskSettings(**common, output=f"{tmp_path}/out/", report=str(tmp_path / "r.json"))
    )
    written = read_table(tmp_path / "out")
    assert written["x"].tolist() == ["low", "", "high", "low", ""]
    assert result.report["masking"]["columns"]["x"]["counts"] == {"low": 2, "high": 1}


@pytest.mark.parametrize(
    ("method", "parameters", "needle"),
    [
        ("noise", {"noise_method": "correlated"}, "noise method correlated runs in memory only"),
        ("noise", {"noise_method": "romm"}, "noise method romm runs in memory only"),
        ("rankswap", {}, "mask method rankswap runs in memory only"),
        ("shuffle", {"predictors": ["region"]}, "mask method shuffle runs in memory only"),
        ("recode", {"breaks": 4}, "recode with a count of breaks runs in memory only"),
        ("pram", {"matrix": None}, "invariant pram (no matrix for income, age) runs in memory"),
    ],
)
def test_whole_column_methods_refuse_an_engine(
    tmp_path: Path, folder: Path, method: str, parameters: dict[str, Any], needle: str
) -> None:
    with pytest.raises(AnonlabError, match=re.escape(needle)) as caught:
        MaskSettings(
            input=str(folder),
            method=method,
            columns=["income", "age"],
            parameters=parameters,
            output=f"{tmp_path}/out/",
        )
    assert "\n" not in str(caught.value)
    assert caught.value.parameter == "engine"
    assert not list(tmp_path.iterdir())


def test_cli_refusals_are_one_line(tmp_path: Path, folder: Path) -> None:
    base = ["mask", str(folder), "--columns", "income", "--other", "insensitive"]
    assert_refused(
        [*base, "--method", "rankswap", "--output", f"{tmp_path}/out/"],
        tmp_path,
        "runs in memory only (it ranks the whole column)",
    )
    csv = str(tmp_path / "r.csv")
    assert_refused(
        [*base, "--method", "topbot", "--top", "70", "--engine", "dask", "--output", csv],
        tmp_path,
        "--output: engine 'dask' writes the release as a folder",
    )


@pytest.mark.parametrize("output", ["r.csv", "r/"])
def test_an_empty_table_is_refused_with_the_in_memory_line(tmp_path: Path, output: str) -> None:
    """A CSV with a header only: the one reader's line on the engine too (it named the staged
    release folder, which held no Parquet part)."""
    source = tmp_path / "empty.csv"
    source.write_text("income,age\n")
    out = tmp_path / "out"
    out.mkdir()
    args = ["mask", str(source), "--method", "noise", "--columns", "income", "--seed", "1"]
    args += ["--other", "insensitive", "--output", f"{out}/{output}"]
    assert_refused(args, out, f"file '{source}' has a header but no rows")


def test_a_missing_matrix_file_is_named_before_any_piece_is_read(
    tmp_path: Path, folder: Path
) -> None:
    missing = tmp_path / "nope.csv"
    line = assert_refused(
        [
            "mask",
            str(folder),
            "--method",
            "pram",
            "--columns",
            "region",
            "--matrix",
            str(missing),
            "--seed",
            "1",
            "--other",
            "insensitive",
            "--output",
            f"{tmp_path}/out/",
        ],
        tmp_path,
        f"input file '{missing}' does not exist",
    )
    assert line.startswith("Error: input file")  # not a piece's location first


def test_engine_cli_writes_the_folder(tmp_path: Path, folder: Path) -> None:
    from typer.testing import CliRunner

    from anonlab.cli.app import app

    args = ["mask", str(folder), "--method", "topbot", "--columns", "income"]
    args += ["--top", "80"]
    args += ["--identifying", "name", "--other", "insensitive", "--output", f"{tmp_path}/out/"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    released = read_table(tmp_path / "out")
    assert pd.to_numeric(released["income"]).max() <= 80


def test_the_piece_check_finds_a_changed_part(tmp_path: Path, folder: Path) -> None:
    """The independent piecewise check refuses a part whose value is not the coded one."""
    from anonlab.engine import open_engine
    from anonlab.engine.base import base_engine
    from anonlab.engine.table import open_table
    from anonlab.verify.masking import check_masking_pieces

    result = run_mask(
        MaskSettings(
            input=str(folder),
            method="topbot",
            columns=["income"],
            parameters={"top": 70},
            output=f"{tmp_path}/out/",
            identifying=["name"],
            other="insensitive",
        )
    )
    keep = ["income", "age", "region"]
    part = tmp_path / "out" / "part-00002.parquet"
    table = pq.read_table(part)
    values = table.column("income").to_pylist()
    row = next(i for i, v in enumerate(values) if v == "70")
    values[row] = "99"
    pq.write_table(table.set_column(0, "income", pa.array(values, pa.string())), part)
    engine = base_engine(open_engine("numpy"))
    report = {**result.report, "parameters": {"parameters": {"top": 70}}}
    problems = check_masking_pieces(
        engine, open_table(folder), tmp_path / "out", ["income"], keep, report, BOUNDS[:-1]
    )
    assert len(problems) == 1
    assert "part-2.parquet" in problems[0] and f"record {row + 1}" in problems[0]


def test_a_value_that_is_no_number_names_its_piece(tmp_path: Path) -> None:
    data = pd.DataFrame({"x": ["1", "2", "3", "four"]})
    source = write_parts(data, tmp_path / "in", [0, 2, 4])
    with pytest.raises(AnonlabError, match=r"part-1\.parquet.*'four' in record 2") as caught:
        run_mask(
            MaskSettings(
                input=str(source),
                method="topbot",
                columns=["x"],
                parameters={"top": 2},
                output=f"{tmp_path}/out/",
            )
        )
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------
# pram with a given matrix
# ---------------------------------------------------------------------------

MATRIX = "level,a,b,c\na,0.8,0.1,0.1\nb,0.2,0.7,0.1\nc,0.1,0.1,0.8\n"


@pytest.fixture(scope="module")
def categories(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A folder of uneven parts (one of a single record) with a missing value, and a
    matrix file."""
    rng = np.random.default_rng(3)
    rows = 3_000
    data = pd.DataFrame(
        {
            "roof": rng.choice(["a", "b", "c"], rows),
            "wall": rng.choice(["a", "b", "c"], rows),
            "region": rng.choice(["north", "south"], rows),
            "v": rng.integers(0, 9, rows),
        }
    )
    data.loc[5, "roof"] = None
    base = tmp_path_factory.mktemp("pram")
    folder = write_parts(data, base / "input", [0, 700, 701, 2_000, rows])
    matrix = base / "matrix.csv"
    matrix.write_text(MATRIX)
    return folder, matrix


@pytest.mark.parametrize("engine", ["numpy", "dask"])
@pytest.mark.parametrize("strata", [[], ["region"]])
def test_pram_on_an_engine_is_the_in_memory_release(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    categories: tuple[Path, Path],
    engine: str,
    strata: list[str],
) -> None:
    cluster = request.getfixturevalue("dask_scheduler") if engine == "dask" else None
    folder, matrix = categories
    common: dict[str, Any] = {
        "input": str(folder),
        "method": "pram",
        "columns": ["roof", "wall"],
        "parameters": {"matrix": str(matrix), "strata": strata},
        "seed": 11,
        "other": "insensitive",
    }
    on_engine = run_mask(
        MaskSettings(**common, output=f"{tmp_path}/release/", **_engine(engine, cluster))
    )
    in_memory = run_mask(MaskSettings(**common, output=str(tmp_path / "memory.parquet")))
    pd.testing.assert_frame_equal(
        read_table(tmp_path / "release"), read_table(tmp_path / "memory.parquet")
    )
    for key in ("masking", "measures", "risk", "risk_pram", "records"):
        assert on_engine.report[key] == in_memory.report[key], key
    assert on_engine.report["masking"]["columns"]["roof"]["missing"] == 1
    assert on_engine.report["masking"]["columns"]["roof"]["changed"] > 0


def test_pram_uniforms_depend_on_the_record_alone() -> None:
    """A record's uniform is the same whichever run of records it is drawn with."""
    from anonlab.masking.pram import BLOCK_ROWS, record_uniforms

    whole = record_uniforms(7, 2, 0, 3 * BLOCK_ROWS + 5)
    for first, rows in [(5, BLOCK_ROWS), (BLOCK_ROWS - 3, 7), (100_000, 96_000), (9, 0)]:
        np.testing.assert_array_equal(
            record_uniforms(7, 2, first, rows), whole[first : first + rows]
        )
    # the documented layout: block b from default_rng([seed, column, 1, b])
    second = np.random.default_rng([7, 2, 1, 1]).random(BLOCK_ROWS)
    np.testing.assert_array_equal(whole[BLOCK_ROWS : 2 * BLOCK_ROWS], second)


def test_the_piece_check_finds_a_wrong_pram_draw(
    tmp_path: Path, categories: tuple[Path, Path]
) -> None:
    """The checker redraws each piece at its first record's position; a flipped value (the
    transition counts kept) is found by the redraw, in its piece."""
    from anonlab.engine import open_engine
    from anonlab.engine.base import base_engine
    from anonlab.engine.table import open_table
    from anonlab.verify.masking import check_masking_pieces

    folder, matrix = categories
    result = run_mask(
        MaskSettings(
            input=str(folder),
            method="pram",
            columns=["roof"],
            parameters={"matrix": str(matrix)},
            seed=4,
            output=f"{tmp_path}/out/",
            other="insensitive",
        )
    )
    keep = ["roof", "wall", "region", "v"]
    report = {**result.report, "seed": 4}
    engine = base_engine(open_engine("numpy"))
    starts = [0, 700, 701, 2_000]
    table = open_table(folder)
    assert (
        check_masking_pieces(engine, table, tmp_path / "out", ["roof"], keep, report, starts) == []
    )
    # the same release checked as if its pieces started elsewhere: the redraw disagrees
    shifted = [0, 0, 0, 0]
    problems = check_masking_pieces(
        engine, table, tmp_path / "out", ["roof"], keep, report, shifted
    )
    assert problems and "the seed's draw gives" in problems[0]
    assert (
        "part-1.parquet" in problems[0]
        or "part-2.parquet" in problems[0]
        or "part-3" in problems[0]
    )


def test_a_report_of_the_earlier_pram_layout_is_still_redrawn() -> None:
    """A release drawn from one stream ``default_rng([seed, column, 1])`` checks against
    a report whose ``seed_layout`` names that layout; against the block layout its records
    beyond the first block disagree (the first block's stream is the old one's for a seed
    below 2**32: numpy's SeedSequence reads ``[seed, c, 1, 0]`` as ``[seed, c, 1]``)."""
    from anonlab.masking.pram import BLOCK_ROWS
    from anonlab.verify.masking import check_masking

    rows = BLOCK_ROWS + 100
    levels = ["a", "b"]
    original = pd.DataFrame({"x": ["a", "b"] * (rows // 2)})
    u = np.random.default_rng([9, 0, 1]).random(rows)
    released = pd.DataFrame({"x": np.where(u < 0.5, "a", "b")})
    counts: dict[tuple[str, str], int] = {}
    for before, after in zip(original["x"], released["x"], strict=True):
        counts[(before, after)] = counts.get((before, after), 0) + 1
    entry = {
        "levels": levels,
        "matrix_source": "given",
        "matrices": [{"stratum": {}, "matrix": [[0.5, 0.5], [0.5, 0.5]]}],
        "transitions": [{"from": a, "to": b, "count": n} for (a, b), n in counts.items()],
        "marginals": {"released": {lv: int((released["x"] == lv).sum()) for lv in levels}},
    }
    section = {"strata": [], "seed_layout": "[seed, column, 0|1]", "columns": {"x": entry}}
    report: dict[str, Any] = {"method": "pram", "seed": 9, "masking": section}
    assert check_masking(original, released, ["x"], report) == []
    section["seed_layout"] = "[seed, column, 0] matrices, [seed, column, 1, block] records"
    problems = check_masking(original, released, ["x"], report)
    assert len(problems) == 1 and "the seed's draw gives" in problems[0]
    record = int(problems[0].split("record ")[1].split()[0])
    assert record > BLOCK_ROWS


# ---------------------------------------------------------------------------
# additive noise
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def numbers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Parts cut inside and across the first block of 65,536 records, a missing value."""
    rng = np.random.default_rng(4)
    rows = 70_000
    data = pd.DataFrame(
        {
            "a": rng.normal(50.0, 10.0, rows).round(3),
            "b": rng.integers(0, 1_000, rows).astype(str),
            "k": rng.choice(["x", "y"], rows),
        }
    )
    data.loc[66_000, "b"] = ""
    bounds = [0, 40_000, 65_540, 65_541, rows]
    return write_parts(data, tmp_path_factory.mktemp("noise") / "input", bounds)


@pytest.mark.parametrize("engine", ["numpy", "dask"])
def test_additive_noise_on_an_engine_is_the_in_memory_release(
    request: pytest.FixtureRequest, tmp_path: Path, numbers: Path, engine: str
) -> None:
    cluster = request.getfixturevalue("dask_scheduler") if engine == "dask" else None
    common: dict[str, Any] = {
        "input": str(numbers),
        "method": "noise",
        "columns": ["a", "b"],
        "parameters": {"noise": 50},
        "seed": 2**40 + 5,
        "other": "insensitive",
    }
    on_engine = run_mask(
        MaskSettings(**common, output=f"{tmp_path}/release/", **_engine(engine, cluster))
    )
    in_memory = run_mask(MaskSettings(**common, output=str(tmp_path / "memory.parquet")))
    written = read_table(tmp_path / "release")
    pd.testing.assert_frame_equal(written, read_table(tmp_path / "memory.parquet"))
    for key in ("masking", "measures", "risk", "records"):
        assert on_engine.report[key] == in_memory.report[key], key
    assert written["b"].iloc[66_000] == ""
    assert on_engine.report["masking"]["columns"]["b"]["changed"] == 70_000 - 1


def test_additive_draws_and_sds_do_not_depend_on_the_pieces() -> None:
    from anonlab.masking.noise import BLOCK_ROWS, additive_draws, blocked_sd

    whole = additive_draws(3, 2, 0, 2 * BLOCK_ROWS + 9)
    for first, rows in [(4, 10), (BLOCK_ROWS - 2, 5), (70_000, 60_000), (1, 0)]:
        np.testing.assert_array_equal(
            additive_draws(3, 2, first, rows), whole[first : first + rows]
        )
    np.testing.assert_array_equal(
        whole[BLOCK_ROWS : 2 * BLOCK_ROWS],
        np.random.default_rng([3, 0, 1]).standard_normal((BLOCK_ROWS, 2)),
    )
    x = np.random.default_rng(1).normal(5.0, 2.0, (BLOCK_ROWS + 1_000, 2))
    x[7, 1] = np.nan
    expected = [np.std(x[:, 0], ddof=1), np.nanstd(x[:, 1], ddof=1)]
    np.testing.assert_allclose(blocked_sd(x), expected, rtol=1e-12)


def test_the_piece_check_finds_a_changed_noise_value(tmp_path: Path, numbers: Path) -> None:
    """Each piece is redrawn at its first record with the report's SDs; the SDs are checked
    from the pieces' moments added up."""
    from anonlab.engine import open_engine
    from anonlab.engine.base import base_engine
    from anonlab.engine.table import open_table
    from anonlab.verify.masking import check_masking_pieces

    result = run_mask(
        MaskSettings(
            input=str(numbers),
            method="noise",
            columns=["a"],
            parameters={"noise": 50},
            seed=8,
            output=f"{tmp_path}/out/",
            other="insensitive",
        )
    )
    report = {**result.report, "seed": 8}
    engine = base_engine(open_engine("numpy"))
    table = open_table(numbers)
    starts = [0, 40_000, 65_540, 65_541]
    keep = ["a", "b", "k"]
    assert check_masking_pieces(engine, table, tmp_path / "out", ["a"], keep, report, starts) == []
    wrong_sd = json.loads(json.dumps(report))
    wrong_sd["masking"]["columns"]["a"]["sd"] *= 1.001
    problems = check_masking_pieces(engine, table, tmp_path / "out", ["a"], keep, wrong_sd, starts)
    assert problems and "additive" in problems[0]
    part = tmp_path / "out" / "part-00003.parquet"
    data = pq.read_table(part)
    values = data.column("a").to_pylist()
    values[10] = str(float(values[10]) + 0.5)
    pq.write_table(data.set_column(0, "a", pa.array(values, pa.string())), part)
    problems = check_masking_pieces(engine, table, tmp_path / "out", ["a"], keep, report, starts)
    assert len(problems) == 1 and "part-3.parquet" in problems[0] and "record 11" in problems[0]


@pytest.mark.parametrize(
    ("method", "columns", "parameters"),
    [("topbot", ["expend"], {"top": 50_000}), ("pram", ["roof"], None)],
)
def test_a_csv_input_on_an_engine(
    tmp_path: Path, method: str, columns: list[str], parameters: dict[str, Any] | None
) -> None:
    """sdcMicro's testdata as CSV (its text as written) through the NumPy engine."""
    source = Path(__file__).resolve().parents[1] / "data" / "sdc" / "testdata.csv"
    if parameters is None:
        levels = ["2", "4", "5", "6", "9"]
        rows = [",".join([lv, *("0.8" if lv == to else "0.05" for to in levels)]) for lv in levels]
        matrix = tmp_path / "roof.csv"
        matrix.write_text("\n".join([",".join(["", *levels]), *rows]) + "\n")
        parameters = {"matrix": str(matrix)}
    common: dict[str, Any] = {
        "input": str(source),
        "method": method,
        "columns": columns,
        "parameters": parameters,
        "seed": 3,
        "other": "insensitive",
    }
    on_engine = run_mask(MaskSettings(**common, output=f"{tmp_path}/release/"))
    in_memory = run_mask(MaskSettings(**common, output=str(tmp_path / "memory.csv")))
    pd.testing.assert_frame_equal(
        read_table(tmp_path / "release"), read_table(tmp_path / "memory.csv")
    )
    assert on_engine.report["masking"] == in_memory.report["masking"]
