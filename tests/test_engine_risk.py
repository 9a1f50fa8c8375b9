"""``anonlab risk`` on the engines: the same figures from the frequency set as from the records.

A release of Adult (age generalized to 5-year bands, the records of classes
smaller than 3 suppressed: ``*`` in every attacker column, a few more cells
``*`` alone) is written as a folder of uneven Parquet parts and measured in
memory (the reference: :func:`anonlab.risk.measure.measure_risk` on the
frame) and by each engine's one pass, the NumPy engine in this process and a
Dask engine on a 2-worker ``LocalCluster`` of processes with a 1 GB memory
limit each. Every figure of the ``risk`` section (SUDA2 and the sensitive
attributes' t with a hierarchy included) must be the same double.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.engine import open_engine
from anonlab.engine.base import EngineBase
from anonlab.engine.risk_pass import risk_frequencies
from anonlab.errors import AnonlabError
from anonlab.io import read_table
from anonlab.risk.classes import equivalence_classes
from anonlab.risk.measure import measure_risk
from anonlab.risk.run import run_risk

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
    root = tmp_path_factory.mktemp("release") / "parts"
    root.mkdir()
    bounds = [0, 700, 12000, 12001, 25000, len(release)]
    for i, (a, b) in enumerate(itertools.pairwise(bounds)):
        pq.write_table(pa.Table.from_pandas(release.iloc[a:b], preserve_index=False),
                       root / f"part-{i}.parquet", row_group_size=2000)
    return root


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


def _options() -> dict[str, Any]:
    return {"sensitive": SENSITIVE, "sampling_fraction": 0.05, "thresholds": (0.2, 0.1, 0.02),
            "hierarchies": {"salary-class": ADULT / "hierarchy_salary-class.csv",
                            "occupation": ADULT / "hierarchy_occupation.csv"}}


@pytest.fixture(scope="module")
def reference(release: pd.DataFrame) -> dict[str, Any]:
    return measure_risk(release, ATTACKER, **_options())


def test_the_release_has_what_the_figures_need(reference: dict[str, Any]) -> None:
    assert reference["suppressed"] > 1000
    assert reference["classes"]["sizes"]["1"] > 0  # hidden ages make uniques again
    assert reference["suda2"] is not None and reference["suda2"]["records_with_msu"] > 0
    assert reference["population_uniques"] is not None
    assert reference["sensitive"]["occupation"]["t_hierarchical"] is not None


def test_every_figure_is_the_in_memory_one(engine: EngineBase, folder: Path,
                                           reference: dict[str, Any]) -> None:
    found = measure_risk(folder, ATTACKER, engine=engine, **_options())
    assert found == reference
    assert json.dumps(found, sort_keys=True) == json.dumps(reference, sort_keys=True)


def test_a_dask_dataframe_gives_the_same_figures(dask_engine: EngineBase, release: pd.DataFrame,
                                                reference: dict[str, Any]) -> None:
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(release, npartitions=4)
    assert measure_risk(frame, ATTACKER, engine=dask_engine, **_options()) == reference
    # without an engine a Dask DataFrame is read piece by piece in this process
    assert measure_risk(frame, ATTACKER, **_options()) == reference


def test_classes_from_the_frequency_set_are_the_in_memory_classes(
        engine: EngineBase, folder: Path, release: pd.DataFrame) -> None:
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
        engine: EngineBase, release: pd.DataFrame) -> None:
    frame = release[release["sex"] != "*"].reset_index(drop=True)
    expected = measure_risk(frame, ["education"], sensitive=["salary-class"])
    assert expected["suppressed"] == 0
    assert measure_risk(frame, ["education"], sensitive=["salary-class"],
                        engine=engine) == expected


def _scheduler(engine: EngineBase) -> str:
    address: str = engine.client.scheduler.address  # type: ignore[attr-defined]
    return address


def test_the_command_on_dask_writes_the_in_memory_report(dask_engine: EngineBase, folder: Path,
                                                         tmp_path: Path) -> None:
    runner = CliRunner()
    common = ["risk", str(folder), "--qi", ",".join(ATTACKER), "--sensitive",
              ",".join(SENSITIVE), "--population", "1000000", "--quiet"]
    memory = runner.invoke(app, [*common, "--report", str(tmp_path / "numpy.json")])
    dask = runner.invoke(app, [*common, "--report", str(tmp_path / "dask.json"), "--engine",
                               "dask", "--scheduler", _scheduler(dask_engine)])
    assert memory.exit_code == 0, memory.output
    assert dask.exit_code == 0, dask.output
    a = json.loads((tmp_path / "numpy.json").read_text())
    b = json.loads((tmp_path / "dask.json").read_text())
    assert a["risk"] == b["risk"] and a["roles"] == b["roles"]
    assert b["parameters"]["engine"] == "dask" and a["parameters"]["engine"] == "numpy"
    assert b["inputs"]["data"]["sha256"] == a["inputs"]["data"]["sha256"]


def test_run_risk_on_dask_with_a_dask_dataframe(dask_engine: EngineBase,
                                                release: pd.DataFrame) -> None:
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(release, npartitions=3)
    with pytest.warns(Warning):
        found = run_risk(frame, ATTACKER, sensitive=["salary-class"], engine="dask",
                         scheduler=_scheduler(dask_engine))
    with pytest.warns(Warning):
        expected = run_risk(release, ATTACKER, sensitive=["salary-class"])
    assert found.report["risk"] == expected.report["risk"]
    assert found.report["inputs"]["data"] is None and found.written == []


def _fails(args: list[str], tmp_path: Path, expected: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert expected in lines[0]
    assert not (tmp_path / "report.json").exists()


def test_bad_input_is_one_error_and_writes_nothing(folder: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    base = ["risk", str(folder), "--report", str(tmp_path / "report.json"), "--quiet"]
    _fails([*base, "--qi", "sex,agex", "--engine", "dask", "--workers", "1"], tmp_path,
           "--qi names columns the table does not have: agex")
    _fails([*base, "--qi", "sex,age", "--engine", "dask", "--workers", "1", "--weights",
            "race"], tmp_path, "--weights 'race': sampling weights are summed record by record")
    _fails([*base, "--qi", "sex,age", "--scheduler", "tcp://127.0.0.1:9"], tmp_path,
           "--scheduler applies to engine 'dask' only")
    _fails([*base, "--qi", "sex,age", "--engine", "spark"], tmp_path,
           "engine 'spark' is unknown")
    _fails([*base, "--qi", "sex,age", "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9"],
           tmp_path, "--scheduler 'tcp://127.0.0.1:9' cannot be reached")


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
