"""``apply`` on the engines: the in-memory release, counted and written by NumPy or Dask.

The transformation of Adult's generalize report (8 quasi-identifiers, k = 5,
1 % suppression, flash) is applied to another table: the UCI training and
test files together (45,222 records, 15 columns, the 6 the report does not
know released unchanged with ``other="insensitive"``). In memory (one
Parquet file) and on the engines (a Parquet folder of 7 parts, the release a
folder of parts: the NumPy engine from the command line, a 2-worker Dask
``LocalCluster`` of processes with 1 GB each from a TOML config and from
Python) the releases are compared by a content hash of their rows after a
sort, the reports key by key. Then the refusal when the report's model does
not hold on the table (the test file alone) and the bad inputs: one line
``Error: ...``, exit code 2, nothing written.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.errors import AnonlabError, ReleaseRiskWarning
from anonlab.generalize import apply_transformation
from anonlab.hierarchy import Hierarchy
from anonlab.io import read_table
from anonlab.runs.apply import run_apply
from anonlab.runs.generalize import run_generalize
from anonlab.runs.generalize_settings import ApplySettings, GeneralizeSettings
from engines import assert_refused

pytest.importorskip("distributed")

QIS = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
]
#: the report keys an engine run must give as the in-memory run does
SAME = (
    "transformation",
    "k",
    "suppression_limit",
    "suppressed_records",
    "records",
    "verified",
    "criteria",
    "roles",
    "insensitive_by_other",
    "distinct_values",
    "risk",
    "attacker_knowledge",
    "risk_warnings",
)
runner = CliRunner()


def _digest(frame: pd.DataFrame) -> str:
    """A content hash of a table's rows, independent of their order."""
    text = frame.astype(str)
    rows = sorted("\x1f".join(r) for r in text.itertuples(index=False, name=None))
    return hashlib.sha256("\x1e".join([",".join(frame.columns), *rows]).encode()).hexdigest()


def _same_report(report: dict[str, Any], expected: dict[str, Any]) -> None:
    for key in SAME:
        assert report.get(key) == expected.get(key), key


def _quiet_run(settings: ApplySettings) -> dict[str, Any]:
    """``run_apply``, its risk warnings (Adult's classes of one salary class) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        return run_apply(settings).report


@pytest.fixture(scope="module")
def work(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Adult's generalize report, the table to apply it to (one file and a folder of 7
    parts), and the in-memory apply's release and report."""
    folder = data_dir / "adult"
    root = tmp_path_factory.mktemp("apply")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        run_generalize(
            GeneralizeSettings(
                input=str(folder / "adult.csv"),
                delimiter=";",
                qi={q: str(folder / f"hierarchy_{q}.csv") for q in QIS},
                sensitive=["salary-class"],
                k=5,
                suppression=0.01,
                search="flash",
                report=str(root / "g.json"),
            )
        )
    table = pd.concat(
        [read_table(folder / "adult_full_train.csv"), read_table(folder / "adult_full_test.csv")],
        ignore_index=True,
    )
    table.to_parquet(root / "table.parquet", index=False)
    parts = root / "parts"
    parts.mkdir()
    step = -(-len(table) // 7)
    for i in range(7):
        pq.write_table(
            pa.Table.from_pandas(table.iloc[i * step : (i + 1) * step], preserve_index=False),
            parts / f"part-{i}.parquet",
        )
    report = _quiet_run(
        ApplySettings(
            report_in=str(root / "g.json"),
            input=str(root / "table.parquet"),
            other="insensitive",
            output=str(root / "memory.parquet"),
            report=str(root / "memory.json"),
        )
    )
    assert report["suppressed_records"] == 235 and report["records"] == 45_222
    return {
        "root": root,
        "report_in": root / "g.json",
        "parts": parts,
        "table": table,
        "release": read_table(root / "memory.parquet"),
        "report": json.loads((root / "memory.json").read_text()),
    }


@pytest.fixture
def cluster(dask_client: Any) -> Any:
    """A client of the session's 2-worker LocalCluster (processes, 1 GB each; conftest)."""
    return dask_client


@pytest.mark.parametrize("read_back_rows", [None, 100])
def test_numpy_engine_release_equals_in_memory(
    work: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    read_back_rows: int | None,
) -> None:
    """A folder output on the default engine, from the command line: one part per input
    part, the in-memory rows and report. With ``read_back_rows`` the release counts as too
    large to read back: verified by its frequency set, its risk measured by the engine."""
    from anonlab.runs import generalize_steps

    if read_back_rows is not None:
        monkeypatch.setattr(generalize_steps, "IN_MEMORY_ROWS", read_back_rows)
    out = tmp_path / "release"
    result = runner.invoke(
        app,
        [
            "apply",
            str(work["report_in"]),
            str(work["parts"]),
            "--other",
            "insensitive",
            "--output",
            f"{out}/",
            "--report",
            str(tmp_path / "r.json"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert len(list(out.iterdir())) == 7
    assert _digest(read_table(out)) == _digest(work["release"])
    report = json.loads((tmp_path / "r.json").read_text())
    _same_report(report, work["report"])
    assert report["parameters"]["engine"] == "numpy"


def test_dask_release_equals_in_memory(work: dict[str, Any], cluster: Any, tmp_path: Path) -> None:
    """On the 2-worker cluster, the engine settings given as TOML keys."""
    config = tmp_path / "apply.toml"
    config.write_text(
        f'report_in = "{work["report_in"]}"\ninput = "{work["parts"]}"\n'
        'other = "insensitive"\noutput = "release/"\nreport = "r.json"\n'
        f'engine = "dask"\nscheduler = "{cluster.scheduler.address}"\n'
        'memory_limit = "1GB"\n'
    )
    report = _quiet_run(ApplySettings.load(config))
    assert sorted(p.name for p in (tmp_path / "release").iterdir()) == [
        f"part-{i:05d}.parquet" for i in range(7)
    ]
    assert _digest(read_table(tmp_path / "release")) == _digest(work["release"])
    _same_report(report, work["report"])
    assert report["parameters"]["engine"] == "dask"
    assert (
        json.loads((tmp_path / "r.json").read_text())["transformation"]
        == (work["report"]["transformation"])
    )


def test_python_api_takes_a_dask_dataframe(
    work: dict[str, Any], data_dir: Path, cluster: Any
) -> None:
    """``apply_transformation`` on a Dask DataFrame: a lazy release with the in-memory rows,
    the same suppressed records."""
    dd = pytest.importorskip("dask.dataframe")
    from anonlab.engine import open_engine

    hierarchies = {q: Hierarchy.from_csv(data_dir / "adult" / f"hierarchy_{q}.csv") for q in QIS}
    levels = work["report"]["transformation"]
    options = {
        "sensitive": ["salary-class"],
        "other": "insensitive",
        "metric": work["report"]["parameters"]["metric"],
    }
    expected, suppressed = apply_transformation(
        work["table"], hierarchies, levels, 5, 0.01, **options
    )
    lazy = dd.from_pandas(work["table"], npartitions=4)
    with open_engine("dask", scheduler=cluster.scheduler.address) as engine:
        released, on_dask = apply_transformation(
            lazy, hierarchies, levels, 5, 0.01, engine=engine, **options
        )
    assert isinstance(released, dd.DataFrame)
    assert on_dask == suppressed == work["report"]["suppressed_records"]
    computed = cluster.compute(released).result()
    pd.testing.assert_frame_equal(computed.astype(str), expected.astype(str))
    assert _digest(expected) == _digest(work["release"])


def test_a_model_that_fails_is_refused_as_in_memory(
    work: dict[str, Any], data_dir: Path, tmp_path: Path
) -> None:
    """The test file alone would need 244 records suppressed, the limit is 150: the engine
    refuses it with the in-memory message and writes nothing."""
    test = data_dir / "adult" / "adult_full_test.csv"
    args = [
        "apply",
        str(work["report_in"]),
        str(test),
        "--other",
        "insensitive",
        "--report",
        str(tmp_path / "r.json"),
    ]
    in_memory = assert_refused(
        [*args, "--output", str(tmp_path / "r.parquet")],
        tmp_path,
        "244 records would be suppressed but the limit allows 150",
    )
    assert assert_refused([*args, "--output", f"{tmp_path}/out/"], tmp_path, "") == in_memory


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (
            ["--engine", "dask", "--scheduler", "tcp://127.0.0.1:9", "--output", "{tmp}/out/"],
            "--scheduler 'tcp://127.0.0.1:9' cannot be reached",
        ),
        (
            ["--engine", "dask", "--output", "{tmp}/r.parquet"],
            "writes the release as a folder of Parquet parts",
        ),
        (
            ["--scheduler", "tcp://127.0.0.1:9", "--output", "{tmp}/out/"],
            "--scheduler applies to engine 'dask' only",
        ),
        (["--memory-limit", "1MB", "--output", "{tmp}/out/"], "is too small for the frequency set"),
    ],
)
def test_bad_input(work: dict[str, Any], tmp_path: Path, flags: list[str], needle: str) -> None:
    assert_refused(
        [
            "apply",
            str(work["report_in"]),
            str(work["parts"]),
            "--other",
            "insensitive",
            "--report",
            str(tmp_path / "r.json"),
            *(f.format(tmp=tmp_path) for f in flags),
        ],
        tmp_path,
        needle,
    )


def test_engine_settings_of_apply_are_checked() -> None:
    """The engine keys are the generalize ones (``EngineSettings``), checked the same way."""
    with pytest.raises(AnonlabError, match="memory_limit"):
        ApplySettings(report_in="r.json", input="t.csv", engine="dask", memory_limit="lots")
    with pytest.raises(AnonlabError, match="workers applies to engine 'dask' only"):
        ApplySettings(report_in="r.json", input="t.csv", workers=2)
    settings = ApplySettings(
        report_in="r.json", input="t.csv", engine="dask", workers=2, memory_limit="1GB"
    )
    assert (settings.engine, settings.workers, settings.memory_limit) == ("dask", 2, "1GB")
