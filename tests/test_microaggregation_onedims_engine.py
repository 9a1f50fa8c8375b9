"""``microaggregate --method onedims`` on the NumPy and Dask engines (issue 25).

Individual ranking runs piece by piece (:mod:`anonlab.microaggregation.onedims`) and
writes the in-memory release: the same values to the last bit (the frames read back are
equal), the same report figures, for every aggregate, with and without strata. The
input is cut into many uneven Parquet parts, so that equal values, strata and groups
(the last one of each stratum too) cross the parts' bounds; one column holds few
distinct values (long runs of ties), one holds ``-0.0`` beside ``0.0``. The other
methods refuse an engine in one line and write nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from anonlab.errors import AnonlabError
from anonlab.io import read_table
from anonlab.microaggregation import onedims as onedims_module
from anonlab.microaggregation.aggregates import fixed_group_aggregates
from anonlab.runs import microaggregate as microaggregate_run
from anonlab.runs.microaggregate import MicroaggregateSettings, run_microaggregate
from engines import assert_refused, write_parts

pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")

ROWS = 700
#: uneven parts: one of one row, a run of small ones, a large one
BOUNDS = [0, 1, 40, 41, 97, 160, 233, 300, 520, 699, ROWS]
#: report keys that must equal the in-memory run's
SAME = (
    "method",
    "aggr",
    "trim",
    "strata",
    "per_column",
    "k",
    "records",
    "columns",
    "groups",
    "group_sizes",
    "measures",
    "risk",
    "verified",
    "roles",
)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(25)
    data = pd.DataFrame(
        {
            "id": [f"r{i:04d}" for i in range(ROWS)],
            "ties": rng.integers(0, 9, ROWS).astype(float),  # long runs of equal values
            "signed": rng.normal(0.0, 1.0, ROWS).round(1),  # -0.0 beside 0.0
            "wide": rng.exponential(40.0, ROWS).round(3),
            "region": rng.choice(["north", "south", "east"], ROWS, p=[0.6, 0.3, 0.1]),
            "band": rng.choice(["1", "2"], ROWS),
        }
    )
    signed = data["signed"].to_numpy()
    assert ((signed == 0) & np.signbit(signed)).any() and (
        (signed == 0) & ~np.signbit(signed)
    ).any()
    return data


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory, frame: pd.DataFrame) -> Path:
    return write_parts(frame, tmp_path_factory.mktemp("onedims") / "input", BOUNDS)


def _common(source: Path, **extra: Any) -> dict[str, Any]:
    return {
        "input": str(source),
        "method": "onedims",
        "k": 4,
        "columns": ["ties", "signed", "wide"],
        "identifying": ["id"],
        "other": "insensitive",
        **extra,
    }


def _both(
    tmp_path: Path, source: Path, engine: dict[str, Any], **extra: Any
) -> tuple[Any, Any, pd.DataFrame, pd.DataFrame]:
    """The run in memory (a file) and on the engine (a folder): results and releases."""
    memory = run_microaggregate(
        MicroaggregateSettings(**_common(source, **extra), output=str(tmp_path / "memory.parquet"))
    )
    folder = tmp_path / "release"
    on_engine = run_microaggregate(
        MicroaggregateSettings(
            **_common(source, **extra),
            output=f"{folder}/",
            report=str(tmp_path / "engine.json"),
            **engine,
        )
    )
    return memory, on_engine, read_table(tmp_path / "memory.parquet"), read_table(folder)


@pytest.mark.parametrize(
    ("aggr", "trim"), [("mean", 0.0), ("median", 0.0), ("trim", 0.25), ("onestep", 0.0)]
)
@pytest.mark.parametrize("strata", [[], ["region"], ["region", "band"]])
def test_numpy_engine_writes_the_in_memory_release(
    tmp_path: Path, parts: Path, aggr: str, trim: float, strata: list[str]
) -> None:
    memory, on_engine, expected, written = _both(
        tmp_path, parts, {}, aggr=aggr, trim=trim, strata=strata
    )
    pd.testing.assert_frame_equal(written, expected)
    for key in SAME:
        assert on_engine.report[key] == memory.report[key], key
    report = json.loads((tmp_path / "engine.json").read_text())
    assert report["engine"] == {
        "name": "numpy",
        "pieces": len(BOUNDS) - 1,
        "parts": len(BOUNDS) - 1,
        "checked": "whole release",
    }
    assert report["per_column"] is True and report["strata"] == strata


def test_one_column_takes_rs_mean_as_in_memory(tmp_path: Path, parts: Path) -> None:
    """One masked column: sdcMicro's one-variable path (R's two-pass mean), as in memory."""
    common = {"columns": ["wide"], "strata": ["region"], "insensitive": ["ties", "signed"]}
    memory, on_engine, expected, written = _both(tmp_path, parts, {}, **common)
    pd.testing.assert_frame_equal(written, expected)
    assert on_engine.report["measures"] == memory.report["measures"]


def test_dask_writes_the_in_memory_release(
    request: pytest.FixtureRequest, tmp_path: Path, parts: Path, frame: pd.DataFrame
) -> None:
    """On the Dask cluster, from the Parquet folder and from a Dask DataFrame."""
    dd = pytest.importorskip("dask.dataframe")
    engine = {"engine": "dask", "scheduler": request.getfixturevalue("dask_scheduler")}
    extra = {"aggr": "median", "strata": ["region", "band"]}
    memory, on_engine, expected, written = _both(tmp_path, parts, engine, **extra)
    pd.testing.assert_frame_equal(written, expected)
    for key in SAME:
        assert on_engine.report[key] == memory.report[key], key
    assert on_engine.report["engine"]["name"] == "dask"
    lazy = dd.from_pandas(frame, npartitions=7)
    settings = {**_common(parts, **extra), "input": lazy}
    run_microaggregate(
        MicroaggregateSettings(**settings, output=f"{tmp_path / 'from_frame'}/", **engine)
    )
    pd.testing.assert_frame_equal(read_table(tmp_path / "from_frame"), expected)


def test_the_command_on_dask(request: pytest.FixtureRequest, tmp_path: Path, parts: Path) -> None:
    from typer.testing import CliRunner

    from anonlab.cli.app import app

    scheduler = request.getfixturevalue("dask_scheduler")
    args = [
        "microaggregate",
        str(parts),
        "--method",
        "onedims",
        "--aggr",
        "trim",
        "--trim",
        "0.1",
        "--strata",
        "region",
        "--columns",
        "ties,signed,wide",
        "--identifying",
        "id",
        "--other",
        "insensitive",
        "--k",
        "5",
    ]
    result = CliRunner().invoke(
        app,
        [
            *args,
            "--engine",
            "dask",
            "--scheduler",
            scheduler,
            "--output",
            f"{tmp_path / 'dask'}/",
            "--report",
            str(tmp_path / "dask.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "onedims, trim 0.1, strata region k=5: 700 records" in result.output
    assert "part(s) on engine dask" in result.output
    assert "release verified" in result.output
    memory = CliRunner().invoke(app, [*args, "--output", str(tmp_path / "memory.csv")])
    assert memory.exit_code == 0, memory.output
    pd.testing.assert_frame_equal(
        read_table(tmp_path / "dask"), read_table(tmp_path / "memory.csv")
    )
    verified = CliRunner().invoke(app, ["verify", str(tmp_path / "dask.json")])
    assert verified.exit_code == 0 and "holds" in verified.output, verified.output


def test_a_large_release_is_checked_column_by_column(
    tmp_path: Path, parts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(microaggregate_run, "IN_MEMORY_ROWS", 100)
    memory, on_engine, expected, written = _both(tmp_path, parts, {}, strata=["band"])
    pd.testing.assert_frame_equal(written, expected)
    assert on_engine.report["engine"]["checked"] == "column by column"
    assert on_engine.report["measures"]["ILh"] == pytest.approx(
        memory.report["measures"]["ILh"], rel=1e-12
    )
    assert on_engine.report["risk"] == memory.report["risk"]


@pytest.mark.parametrize("whole", [True, False])
def test_a_wrong_release_is_refused_and_nothing_written(
    tmp_path: Path, parts: Path, monkeypatch: pytest.MonkeyPatch, whole: bool
) -> None:
    """The independent checker sees a release whose aggregates are off (read back whole, or
    column by column): one line, and neither release nor report is written."""
    if not whole:
        monkeypatch.setattr(microaggregate_run, "IN_MEMORY_ROWS", 100)
    right = fixed_group_aggregates

    def off(*args: Any, **kwargs: Any) -> Any:
        values = right(*args, **kwargs)
        values[0] += 1.0
        return values

    monkeypatch.setattr(
        onedims_module, "fixed_group_aggregates", off
    )  # the method's, not the checker's
    with pytest.raises(AnonlabError, match="verification failed, nothing written"):
        run_microaggregate(
            MicroaggregateSettings(
                **_common(parts),
                output=f"{tmp_path / 'release'}/",
                report=str(tmp_path / "report.json"),
            )
        )
    assert not (tmp_path / "release").exists() and not (tmp_path / "report.json").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_changed_unmasked_column_is_refused_column_by_column(
    tmp_path: Path, parts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release too large to read back whole is still checked for its columns that are not
    masked: a changed 'region' value is refused in one line, and nothing is written."""
    monkeypatch.setattr(microaggregate_run, "IN_MEMORY_ROWS", 100)
    right = onedims_module._plain

    def changed(column: Any) -> Any:
        import pyarrow as pa

        text = right(column)
        values = text.to_pylist()
        if values and values[0] in ("north", "south", "east"):
            values[0] = "west"
        return pa.array(values, pa.string())

    monkeypatch.setattr(onedims_module, "_plain", changed)  # the method's, not the checker's
    with pytest.raises(AnonlabError, match="column 'region' is not masked but changed"):
        run_microaggregate(
            MicroaggregateSettings(
                **_common(parts), output=f"{tmp_path / 'release'}/", strata=["band"]
            )
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--method", "pca"], "method 'pca' runs in memory only (it orders the records"),
        (["--method", "rmd", "--seed", "1"], "method 'rmd' runs in memory only"),
        (["--method", "clustpca"], "needs every record of a stratum in one process"),
        (["--method", "influence"], "method 'influence' runs in memory only"),
        (["--method", "onedims", "--nominal", "region"], "nominal and ordinal columns"),
        (["--method", "onedims", "--variant", "scalable"], "is MDAV's"),
        (["--method", "onedims", "--strata", "nope"], "strata column 'nope'"),
        (["--method", "onedims", "--k", "300", "--strata", "region"], "the stratum region"),
        (["--method", "onedims", "--k", "800"], "k = 800 is larger than the table's 700"),
    ],
)
def test_refusals_in_one_line(tmp_path: Path, parts: Path, extra: list[str], needle: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    assert_refused(
        [
            "microaggregate",
            str(parts),
            "--columns",
            "ties,signed,wide",
            "--identifying",
            "id",
            "--other",
            "insensitive",
            "--output",
            f"{out / 'release'}/",
            *extra,
        ],
        out,
        needle,
    )


@pytest.mark.parametrize("output", ["release.csv", "release/"])
def test_a_stratum_named_twice_is_refused_in_one_line(
    tmp_path: Path, parts: Path, output: str
) -> None:
    """``--strata region,region``: one line, in memory (it crashed in pandas' groupby) as on
    the engine (which ran)."""
    out = tmp_path / "out"
    out.mkdir()
    args = ["microaggregate", str(parts), "--method", "onedims", "--columns", "ties,wide"]
    args += ["--identifying", "id", "--other", "insensitive", "--strata", "region,region"]
    assert_refused([*args, "--output", str(out / output)], out, "'region' is named twice")


def test_a_file_output_on_dask_is_refused(tmp_path: Path, parts: Path) -> None:
    with pytest.raises(AnonlabError, match="give output as a folder path ending in '/'"):
        run_microaggregate(
            MicroaggregateSettings(
                **_common(parts), engine="dask", output=str(tmp_path / "x.parquet")
            )
        )
    assert not (tmp_path / "x.parquet").exists()


def test_a_missing_value_is_refused_as_in_memory(tmp_path: Path, frame: pd.DataFrame) -> None:
    gap = frame.copy()
    gap.loc[150, "wide"] = np.nan
    source = write_parts(gap, tmp_path / "gap", [0, 100, ROWS])
    with pytest.raises(AnonlabError, match="missing value"):
        run_microaggregate(
            MicroaggregateSettings(**_common(source), output=f"{tmp_path / 'release'}/")
        )
    assert not (tmp_path / "release").exists()


def test_a_csv_input(tmp_path: Path, frame: pd.DataFrame) -> None:
    """A CSV file (one piece, its numbers parsed from text) gives the in-memory release."""
    source = tmp_path / "table.csv"
    frame.to_csv(source, index=False)
    memory, on_engine, expected, written = _both(tmp_path, source, {}, aggr="onestep")
    pd.testing.assert_frame_equal(written, expected)
    for key in SAME:
        assert on_engine.report[key] == memory.report[key], key


def test_an_empty_part(tmp_path: Path, frame: pd.DataFrame) -> None:
    """A part without records writes no part of the release; the release is the same."""
    source = write_parts(frame, tmp_path / "gapped", [0, 100, 100, ROWS])
    _memory, on_engine, expected, written = _both(tmp_path, source, {}, strata=["region"])
    pd.testing.assert_frame_equal(written, expected)
    assert on_engine.report["engine"]["pieces"] == 3
    assert on_engine.report["engine"]["parts"] == 2


def test_a_negative_zero_among_whole_numbers(tmp_path: Path, frame: pd.DataFrame) -> None:
    """A column of whole numbers with -0.0 (Arrow's text "-0", which pandas parsed as the
    integer 0): in memory as on the engine, -0.0 keeps its sign, so the releases are equal."""
    whole = frame.copy()
    ties = whole["ties"].to_numpy() - 4.0
    ties[(ties == 0) & (np.arange(ROWS) % 2 == 1)] = -0.0
    whole["ties"] = ties
    assert ((ties == 0) & np.signbit(ties)).any() and (ties == np.round(ties)).all()
    source = write_parts(whole, tmp_path / "whole", [0, 333, ROWS])
    _memory, _engine, expected, written = _both(tmp_path, source, {}, aggr="median")
    pd.testing.assert_frame_equal(written, expected)
    released = pd.read_parquet(tmp_path / "memory.parquet")["ties"].to_numpy()
    assert ((released == 0) & np.signbit(released)).any()


@pytest.mark.parametrize("output", ["release.parquet", "release/"])
def test_a_null_integer_is_refused_as_missing(
    tmp_path: Path, frame: pd.DataFrame, output: str
) -> None:
    """A nullable integer column (pandas' Int64, its null ``<NA>``) with a null in the head
    the engine reads first: refused as a missing value, the in-memory line (the engine said
    "is not numeric: row 4 holds '<NA>'")."""
    gap = frame.copy()
    gap["ties"] = gap["ties"].astype("Int64")
    gap.loc[3, "ties"] = pd.NA
    source = tmp_path / "gap.parquet"
    gap.to_parquet(source, index=False)  # pandas' metadata: read back as Int64
    with pytest.raises(AnonlabError, match="column 'ties' of the table has a missing value"):
        run_microaggregate(MicroaggregateSettings(**_common(source), output=f"{tmp_path}/{output}"))
    assert not (tmp_path / output).exists()


def test_huge_and_tiny_magnitudes(tmp_path: Path, frame: pd.DataFrame) -> None:
    """Numbers near 1e300 (their squares overflow) and near 1e-300 (their squares underflow):
    the same release and ILh in memory and on the engine. Before, in memory refused the tiny
    column as constant and the engine the huge one as holding an infinite value."""
    scaled = frame.copy()
    scaled["signed"] = scaled["signed"] * 1e300
    scaled["wide"] = scaled["wide"] * 1e-300
    source = write_parts(scaled, tmp_path / "scaled", [0, 250, ROWS])
    memory, on_engine, expected, written = _both(tmp_path, source, {}, aggr="onestep")
    pd.testing.assert_frame_equal(written, expected)
    for key in SAME:
        assert on_engine.report[key] == memory.report[key], key
    assert 0 < memory.report["measures"]["ILh"] < 1


def test_a_constant_column_is_refused_with_the_in_memory_line(
    tmp_path: Path, frame: pd.DataFrame
) -> None:
    flat = frame.copy()
    flat["wide"] = 2.5
    source = write_parts(flat, tmp_path / "flat", [0, 250, ROWS])
    for output in ("release.parquet", "release/"):
        with pytest.raises(AnonlabError, match="column 'wide' of the table is constant"):
            run_microaggregate(
                MicroaggregateSettings(**_common(source), output=f"{tmp_path}/{output}")
            )
        assert not (tmp_path / output).exists()


def test_an_empty_first_part(tmp_path: Path, frame: pd.DataFrame) -> None:
    """The columns' roles are decided on the first part with rows: an empty first part was
    taken for an empty table ("the table has no records")."""
    source = write_parts(frame, tmp_path / "late", [0, 0, 300, ROWS])
    _memory, on_engine, expected, written = _both(tmp_path, source, {}, strata=["region"])
    pd.testing.assert_frame_equal(written, expected)
    assert on_engine.report["engine"]["parts"] == 2


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_an_empty_table_is_refused_with_the_in_memory_line(
    tmp_path: Path, frame: pd.DataFrame, kind: str
) -> None:
    source = tmp_path / f"empty.{kind}"
    empty = frame.iloc[:0]
    empty.to_csv(source, index=False) if kind == "csv" else empty.to_parquet(source)
    lines = []
    for output in ("release.parquet", "release/"):
        with pytest.raises(AnonlabError, match="give at least one record") as refused:
            run_microaggregate(
                MicroaggregateSettings(**_common(source), output=f"{tmp_path}/{output}")
            )
        assert not (tmp_path / output).exists()
        lines.append(str(refused.value))
    assert lines[0] == lines[1] and lines[0].startswith(f"file '{source}' has ")
