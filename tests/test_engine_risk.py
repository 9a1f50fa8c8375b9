"""``anonlab risk`` on the engines: the same figures from the frequency set as from the records.

A release of Adult (age generalized to 5-year bands, the records of classes
smaller than 3 suppressed: ``*`` in every attacker column, a few more cells
``*`` alone) is written as a folder of uneven Parquet parts and measured in
memory (the reference: :func:`anonlab.risk.measure.measure_risk` on the
frame) and by each engine's one pass, the NumPy engine in this process and a
Dask engine on a 2-worker ``LocalCluster`` of processes with a 1 GB memory
limit each. Every figure of the ``risk`` section (SUDA2 and the sensitive
attributes' t with a hierarchy included) must be the same double.

With a column of sampling weights the engines sum them per class piece by
piece (batches in row order, pieces by the tree of merges) where the
in-memory path sums each class in row order: the weighted figures must
agree with it to 1e-12 relative (the rounding is ~1e-15) and be the same
bits on the two engines.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.engine import open_engine
from anonlab.engine.base import EngineBase
from anonlab.errors import AnonlabError, ReleaseRiskWarning
from anonlab.io import read_table
from anonlab.risk.classes import equivalence_classes
from anonlab.risk.measure import measure_risk
from anonlab.risk.pieces import risk_frequencies
from anonlab.runs.risk import run_risk
from engines import assert_refused, write_parts

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO / "data" / "adult"
ATTACKER = ["sex", "age", "race", "marital-status", "education"]
SENSITIVE = ["salary-class", "occupation"]
BATCH = 3000


@pytest.fixture(scope="module")
def release() -> pd.DataFrame:
    """Adult with age in 5-year bands, classes under 3 suppressed, some ages hidden alone."""
    frame = read_table(ADULT / "adult.csv", delimiter=";")
    band = (frame["age"].astype(int) // 5) * 5
    frame["age"] = band.astype(str) + "-" + (band + 4).astype(str)
    sizes = frame.groupby(ATTACKER)["sex"].transform("size")
    frame.loc[sizes < 3, ATTACKER] = "*"
    frame.loc[frame.index[5::97], "age"] = "*"
    return frame


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, release: pd.DataFrame) -> Path:
    """The release as a folder of uneven Parquet parts."""
    return write_parts(
        release,
        tmp_path_factory.mktemp("release") / "parts",
        [0, 700, 12000, 12001, 25000, len(release)],
        row_group_size=2000,
    )


@pytest.fixture(scope="module")
def dask_engine(dask_scheduler: str) -> Iterator[EngineBase]:
    """A Dask engine of batches of ``BATCH`` rows on the session's cluster (conftest)."""
    engine = open_engine("dask", scheduler=dask_scheduler, batch_rows=BATCH)
    assert isinstance(engine, EngineBase)
    yield engine
    engine.close()


@pytest.fixture(params=["numpy", "dask"])
def engine(request: pytest.FixtureRequest) -> EngineBase:
    if request.param == "numpy":
        found = open_engine("numpy", batch_rows=BATCH)
    else:
        found = request.getfixturevalue("dask_engine")
    assert isinstance(found, EngineBase)
    return found


@pytest.fixture(scope="module")
def weighted(release: pd.DataFrame) -> pd.DataFrame:
    """The release with sampling weights that are not integers (so their sums round)."""
    rng = np.random.default_rng(14)
    frame = release.copy()
    frame["w"] = rng.uniform(1.0, 60.0, len(frame)) + 1.0 / 3.0
    return frame


@pytest.fixture(scope="module")
def weighted_folder(tmp_path_factory: pytest.TempPathFactory, weighted: pd.DataFrame) -> Path:
    """The weighted release as a folder of uneven Parquet parts."""
    return write_parts(
        weighted,
        tmp_path_factory.mktemp("weighted") / "parts",
        [0, 700, 12000, 12001, 25000, len(weighted)],
        row_group_size=2000,
    )


def _weighted_options() -> dict[str, Any]:
    return {**_options(), "sampling_fraction": None, "weights": "w"}


def _close(a: Any, b: Any, where: str = "risk") -> None:
    """``a`` and ``b`` are the same nested figures, floats to 1e-12 relative."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            _close(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and not isinstance(b, bool):
        assert isinstance(b, float | int), where
        assert math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0), (where, a, b)
    else:
        assert a == b, (where, a, b)


def _options() -> dict[str, Any]:
    return {
        "sensitive": SENSITIVE,
        "sampling_fraction": 0.05,
        "thresholds": (0.2, 0.1, 0.02),
        "hierarchies": {
            "salary-class": ADULT / "hierarchy_salary-class.csv",
            "occupation": ADULT / "hierarchy_occupation.csv",
        },
    }


@pytest.fixture(scope="module")
def reference(release: pd.DataFrame) -> dict[str, Any]:
    return measure_risk(release, ATTACKER, **_options())


def test_the_release_has_what_the_figures_need(reference: dict[str, Any]) -> None:
    assert reference["suppressed"] > 1000
    assert reference["classes"]["sizes"]["1"] > 0  # hidden ages make uniques again
    assert reference["suda2"] is not None and reference["suda2"]["records_with_msu"] > 0
    assert reference["population_uniques"] is not None
    assert reference["sensitive"]["occupation"]["t_hierarchical"] is not None


def test_every_figure_is_the_in_memory_one(
    engine: EngineBase, folder: Path, reference: dict[str, Any]
) -> None:
    found = measure_risk(folder, ATTACKER, engine=engine, **_options())
    assert found == reference
    assert json.dumps(found, sort_keys=True) == json.dumps(reference, sort_keys=True)


def test_a_dask_dataframe_gives_the_same_figures(
    dask_engine: EngineBase, release: pd.DataFrame, reference: dict[str, Any]
) -> None:
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(release, npartitions=4)
    assert measure_risk(frame, ATTACKER, engine=dask_engine, **_options()) == reference
    # without an engine a Dask DataFrame is read piece by piece in this process
    assert measure_risk(frame, ATTACKER, **_options()) == reference


def test_classes_from_the_frequency_set_are_the_in_memory_classes(
    engine: EngineBase, folder: Path, release: pd.DataFrame
) -> None:
    mine = risk_frequencies(engine, folder, ATTACKER, SENSITIVE).classes
    theirs = equivalence_classes(release, ATTACKER)
    assert np.array_equal(mine.sizes, theirs.sizes)
    assert np.array_equal(mine.tuples, theirs.tuples)
    assert mine.cardinalities == theirs.cardinalities
    assert mine.suppressed == theirs.suppressed
    for a, b in zip(mine.encoded.values, theirs.encoded.values, strict=True):
        assert list(a) == list(b)
    with pytest.raises(ValueError, match="frequency set"):
        mine.class_sums(np.ones(len(release)))


def test_a_table_with_nothing_suppressed_and_a_single_attacker_column(
    engine: EngineBase, release: pd.DataFrame
) -> None:
    frame = release[release["sex"] != "*"].reset_index(drop=True)
    expected = measure_risk(frame, ["education"], sensitive=["salary-class"])
    assert expected["suppressed"] == 0
    assert measure_risk(frame, ["education"], sensitive=["salary-class"], engine=engine) == expected


@pytest.fixture(scope="module")
def weighted_reference(weighted: pd.DataFrame) -> dict[str, Any]:
    return measure_risk(weighted, ATTACKER, **_weighted_options())


def test_weighted_figures_are_the_in_memory_ones_to_rounding(
    engine: EngineBase, weighted_folder: Path, weighted_reference: dict[str, Any]
) -> None:
    assert weighted_reference["individual_risk"]["weighted"] is True
    assert weighted_reference["journalist"]["population"] == "weights"
    assert weighted_reference["population_uniques"]["population_from"] == "weights"
    found = measure_risk(weighted_folder, ATTACKER, engine=engine, **_weighted_options())
    _close(found, weighted_reference)
    # the weights matter: unweighted figures differ
    plain = measure_risk(weighted_folder, ATTACKER, engine=engine, **_options())
    assert plain["individual_risk"] != found["individual_risk"]


def test_weight_sums_are_the_in_memory_class_sums(
    engine: EngineBase, weighted_folder: Path, weighted: pd.DataFrame
) -> None:
    found = risk_frequencies(engine, weighted_folder, ATTACKER, weights="w")
    classes = equivalence_classes(weighted, ATTACKER)
    expected = classes.class_sums(weighted["w"].to_numpy())
    assert found.class_weights is not None and found.total_weight is not None
    assert np.allclose(found.class_weights, expected, rtol=1e-13, atol=0.0)
    assert math.isclose(found.total_weight, math.fsum(weighted["w"]), rel_tol=1e-15)
    # the engines' order of additions is not the rows': some sums differ in the last bits
    # here or not, either way by rounding only
    assert np.max(np.abs(found.class_weights / expected - 1.0)) < 1e-14


def test_the_engines_give_the_same_bits(
    dask_engine: EngineBase, weighted_folder: Path, weighted: pd.DataFrame
) -> None:
    dd = pytest.importorskip("dask.dataframe")
    local = open_engine("numpy", batch_rows=BATCH)
    assert isinstance(local, EngineBase)
    # 5 uneven parts; 9 partitions (a tree of 3 levels with a group of one)
    for table in (weighted_folder, dd.from_pandas(weighted, npartitions=9)):
        a = risk_frequencies(local, table, ATTACKER, SENSITIVE, weights="w")
        b = risk_frequencies(dask_engine, table, ATTACKER, SENSITIVE, weights="w")
        assert a.class_weights is not None and b.class_weights is not None
        assert a.class_weights.tobytes() == b.class_weights.tobytes()
        assert a.total_weight == b.total_weight
        assert measure_risk(table, ATTACKER, engine=local, **_weighted_options()) == measure_risk(
            table, ATTACKER, engine=dask_engine, **_weighted_options()
        )


@pytest.mark.parametrize(("value", "shown"), [(0.0, "0.0"), (-2.5, "-2.5"), ("many", "'many'")])
def test_a_bad_weight_is_one_line_on_the_engines(
    engine: EngineBase, weighted: pd.DataFrame, tmp_path: Path, value: Any, shown: str
) -> None:
    frame = weighted.iloc[:3000].copy()
    if isinstance(value, str):
        frame["w"] = frame["w"].map(repr).astype(object)
    frame.loc[2345, "w"] = value
    folder = write_parts(frame, tmp_path / "parts", [0, 1000, 3000], row_group_size=2000)
    with pytest.raises(AnonlabError) as err:
        measure_risk(folder, ATTACKER, weights="w", engine=engine)
    assert err.value.parameter == "weights"
    message = str(err.value)
    assert "\n" not in message
    assert f"weights column 'w' holds {shown} in data row 1346 of Parquet part" in message
    assert (
        "part-1.parquet" in message and "every sampling weight must be a number above 0" in message
    )
    with pytest.raises(AnonlabError, match="every sampling weight must be a number above 0"):
        measure_risk(frame, ATTACKER, weights="w")


def test_a_large_release_with_weights_is_measured_on_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the read-back size, ``generalize`` on an engine measures the release's weighted
    risk from the engine's frequency set, never reading the released columns in."""
    from anonlab.runs import generalize_steps

    assert not hasattr(generalize_steps, "_risk_columns")
    adult = read_table(ADULT / "adult.csv", delimiter=";")
    adult["w"] = np.random.default_rng(7).uniform(1.0, 30.0, len(adult)) + 1.0 / 7.0
    source = write_parts(
        adult, tmp_path / "adult", [0, 9000, 20000, len(adult)], row_group_size=2000
    )
    common = [
        "generalize",
        str(source),
        "--other",
        "insensitive",
        "--qi",
        f"education={ADULT / 'hierarchy_education.csv'}",
        "--qi",
        f"marital-status={ADULT / 'hierarchy_marital-status.csv'}",
        "--sensitive",
        "salary-class",
        "--k",
        "5",
        "--suppression",
        "1%",
        "--weights",
        "w",
        "--quiet",
    ]
    runner = CliRunner()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        memory = runner.invoke(
            app,
            [
                *common,
                "--output",
                str(tmp_path / "a.parquet"),
                "--report",
                str(tmp_path / "a.json"),
            ],
        )
    assert memory.exit_code == 0, memory.output
    monkeypatch.setattr(generalize_steps, "IN_MEMORY_ROWS", 100)
    from anonlab.risk import pieces as risk_pieces

    passes: list[str | None] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        passes.append(kwargs.get("weights"))
        return risk_frequencies(*args, **kwargs)

    monkeypatch.setattr(risk_pieces, "risk_frequencies", counted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        engine = runner.invoke(
            app, [*common, "--output", f"{tmp_path / 'b'}/", "--report", str(tmp_path / "b.json")]
        )
    assert engine.exit_code == 0, engine.output
    a = json.loads((tmp_path / "a.json").read_text())["risk"]
    b = json.loads((tmp_path / "b.json").read_text())["risk"]
    assert a["individual_risk"]["weighted"] is True
    assert a["journalist"]["population"] == "weights"
    assert passes == ["w"]  # one pass of the engine, the weights summed in it
    _close(b, a)


def _scheduler(engine: EngineBase) -> str:
    address: str = engine.client.scheduler.address  # type: ignore[attr-defined]
    return address


def test_the_command_on_dask_writes_the_in_memory_report(
    dask_engine: EngineBase, folder: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    common = [
        "risk",
        str(folder),
        "--qi",
        ",".join(ATTACKER),
        "--sensitive",
        ",".join(SENSITIVE),
        "--other",
        "insensitive",
        "--population",
        "1000000",
        "--quiet",
    ]
    memory = runner.invoke(app, [*common, "--report", str(tmp_path / "numpy.json")])
    dask = runner.invoke(
        app,
        [
            *common,
            "--report",
            str(tmp_path / "dask.json"),
            "--engine",
            "dask",
            "--scheduler",
            _scheduler(dask_engine),
        ],
    )
    assert memory.exit_code == 0, memory.output
    assert dask.exit_code == 0, dask.output
    a = json.loads((tmp_path / "numpy.json").read_text())
    b = json.loads((tmp_path / "dask.json").read_text())
    assert a["risk"] == b["risk"] and a["roles"] == b["roles"]
    assert b["parameters"]["engine"] == "dask" and a["parameters"]["engine"] == "numpy"
    assert b["inputs"]["data"]["sha256"] == a["inputs"]["data"]["sha256"]


def test_run_risk_on_dask_with_a_dask_dataframe(
    dask_engine: EngineBase, release: pd.DataFrame
) -> None:
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(release, npartitions=3)
    with pytest.warns(Warning):
        found = run_risk(
            frame,
            ATTACKER,
            sensitive=["salary-class"],
            other="insensitive",
            engine="dask",
            scheduler=_scheduler(dask_engine),
        )
    with pytest.warns(Warning):
        expected = run_risk(release, ATTACKER, sensitive=["salary-class"], other="insensitive")
    assert found.report["risk"] == expected.report["risk"]
    assert found.report["inputs"]["data"] is None and found.written == []


def test_bad_input_is_one_error_and_writes_nothing(folder: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    base = [
        "risk",
        str(folder),
        "--report",
        str(tmp_path / "report.json"),
        "--quiet",
        "--other",
        "insensitive",
    ]
    assert_refused(
        [*base, "--qi", "sex,agex", "--engine", "dask", "--workers", "1"],
        tmp_path,
        "--qi names columns the table does not have: agex",
    )
    assert_refused(
        [*base, "--qi", "sex,age", "--engine", "dask", "--workers", "1", "--weights", "race"],
        tmp_path,
        "column 'race' holds 'White' in data row 1 of Parquet part",
    )
    assert_refused(
        [*base, "--qi", "sex,age", "--scheduler", "tcp://127.0.0.1:9"],
        tmp_path,
        "--scheduler applies to engine 'dask' only",
    )
    assert_refused(
        [*base, "--qi", "sex,age", "--engine", "spark"], tmp_path, "engine 'spark' is unknown"
    )
    assert_refused(
        [*base, "--qi", "sex,age", "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9"],
        tmp_path,
        "--scheduler 'tcp://127.0.0.1:9' cannot be reached",
    )


def test_library_errors_name_the_parameters(engine: EngineBase, folder: Path) -> None:
    with pytest.raises(AnonlabError) as err:
        measure_risk(folder, ["sex", "nope"], engine=engine)
    assert err.value.parameter == "attacker_columns"
    with pytest.raises(AnonlabError) as err:
        measure_risk(folder, ["sex"], sensitive=["sex"], engine=engine)
    assert err.value.parameter == "sensitive"
    with pytest.raises(AnonlabError) as err:
        measure_risk(folder, ["sex"], weights="age", engine=engine)
    assert err.value.parameter == "weights"
    with pytest.raises(AnonlabError) as err:
        measure_risk(folder, ["sex"], engine="spark")
    assert err.value.parameter == "engine"
