"""``generalize`` on the engines: the same search and the same release on NumPy and on Dask.

Adult (8 quasi-identifiers, k = 5, 1 % suppression, flash) is generalized
in memory (the default path, one Parquet file) and on a 2-worker Dask
``LocalCluster`` with a memory limit (a folder of Parquet parts written by
the workers); the releases are compared by a content hash of their rows
after a sort, the reports by transformation, nodes and suppressed records.
Then the Python API with a Dask DataFrame, the bad inputs (one line
``Error: ...``, exit code 2, nothing written) and a worker killed during the
frequency-set pass.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
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
from anonlab.generalize import Generalizer
from anonlab.hierarchy import Hierarchy
from anonlab.io import read_table
from anonlab.runs.generalize import run_generalize
from anonlab.runs.generalize_settings import GeneralizeSettings
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
runner = CliRunner()


def _qi(folder: Path) -> list[str]:
    out = []
    for q in QIS:
        out += ["--qi", f"{q}={folder / f'hierarchy_{q}.csv'}"]
    return out


def _args(data_dir: Path, source: Path | None = None) -> list[str]:
    folder = data_dir / "adult"
    return [
        "generalize",
        str(source or folder / "adult.csv"),
        "--delimiter",
        ";",
        *_qi(folder),
        "--sensitive",
        "salary-class",
        "--k",
        "5",
        "--suppression",
        "1%",
        "--search",
        "flash",
    ]


def _digest(frame: pd.DataFrame) -> str:
    """A content hash of a table's rows, independent of their order."""
    text = frame.astype(str)
    rows = sorted("\x1f".join(r) for r in text.itertuples(index=False, name=None))
    return hashlib.sha256("\x1e".join([",".join(frame.columns), *rows]).encode()).hexdigest()


def _same_search(a: dict[str, Any], b: dict[str, Any]) -> None:
    for key in (
        "transformation",
        "nodes_checked",
        "lattice_size",
        "suppressed_records",
        "equivalence_classes",
        "class_sizes",
        "criteria",
        "records",
        "distinct_values",
        "risk",
        "lattice_levels",
    ):
        assert a[key] == b[key], key


@pytest.fixture(scope="module")
def numpy_run(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("numpy")
    result = runner.invoke(
        app,
        [
            *_args(data_dir),
            "--output",
            str(out / "r.parquet"),
            "--report",
            str(out / "r.json"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    return {
        "release": read_table(out / "r.parquet"),
        "report": json.loads((out / "r.json").read_text()),
    }


@pytest.fixture(scope="module")
def adult_parts(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Adult as a Parquet folder of 12 parts (pieces of the frequency-set pass)."""
    frame = read_table(data_dir / "adult" / "adult.csv", delimiter=";")
    folder = tmp_path_factory.mktemp("parts") / "adult"
    folder.mkdir()
    step = -(-len(frame) // 12)
    for i in range(12):
        part = frame.iloc[i * step : (i + 1) * step]
        pq.write_table(
            pa.Table.from_pandas(part, preserve_index=False), folder / f"part-{i}.parquet"
        )
    return folder


@pytest.fixture
def cluster(dask_client: Any) -> Any:
    """A client of the session's 2-worker LocalCluster (processes, 1 GB each; conftest)."""
    return dask_client


def test_dask_release_equals_numpy_release(
    data_dir: Path, tmp_path: Path, numpy_run: dict[str, Any]
) -> None:
    out = tmp_path / "release"
    result = runner.invoke(
        app,
        [
            *_args(data_dir),
            "--engine",
            "dask",
            "--workers",
            "2",
            "--memory-limit",
            "1GB",
            "--output",
            f"{out}/",
            "--report",
            str(tmp_path / "r.json"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["part-00000.parquet"]
    release = read_table(out)
    assert _digest(release) == _digest(numpy_run["release"])
    report = json.loads((tmp_path / "r.json").read_text())
    _same_search(report, numpy_run["report"])
    assert report["parameters"]["engine"] == "dask"
    assert report["verified"] is True


def test_numpy_engine_writes_a_folder_too(
    data_dir: Path, tmp_path: Path, adult_parts: Path, numpy_run: dict[str, Any]
) -> None:
    """A folder output on the default engine: the engine's release of a Parquet folder,
    one part per input part, the same rows."""
    out = tmp_path / "release"
    result = runner.invoke(
        app,
        [
            *_args(data_dir, adult_parts),
            "--output",
            f"{out}/",
            "--report",
            str(tmp_path / "r.json"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert len(list(out.iterdir())) == 12
    assert _digest(read_table(out)) == _digest(numpy_run["release"])
    _same_search(json.loads((tmp_path / "r.json").read_text()), numpy_run["report"])


def test_python_api_takes_a_dask_dataframe(
    data_dir: Path, cluster: Any, numpy_run: dict[str, Any]
) -> None:
    dd = pytest.importorskip("dask.dataframe")
    from anonlab.engine import open_engine

    frame = read_table(data_dir / "adult" / "adult.csv", delimiter=";")
    hierarchies = {q: Hierarchy.from_csv(data_dir / "adult" / f"hierarchy_{q}.csv") for q in QIS}
    lazy = dd.from_pandas(frame, npartitions=5)
    with open_engine("dask", scheduler=cluster.scheduler.address) as engine:
        on_dask = Generalizer(
            k=5, suppression=0.01, metric="precision_with_suppression", engine=engine
        )
        released = on_dask.fit_transform(lazy, hierarchies, sensitive=["salary-class"])
        again = on_dask.transform(lazy)
    in_memory = Generalizer(k=5, suppression=0.01, metric="precision_with_suppression")
    expected = in_memory.fit_transform(frame, hierarchies, sensitive=["salary-class"])
    assert isinstance(released, dd.DataFrame)
    assert on_dask.transformation_ == in_memory.transformation_
    assert on_dask.result_.suppressed_records == in_memory.result_.suppressed_records == 207
    assert on_dask.result_.search.nodes_checked == in_memory.result_.search.nodes_checked
    computed = cluster.compute(released).result()
    pd.testing.assert_frame_equal(computed.astype(str), expected.astype(str))
    assert _digest(cluster.compute(again).result()) == _digest(expected)
    assert _digest(expected.reset_index(drop=True)) == _digest(numpy_run["release"])


def test_python_api_on_the_numpy_engine(data_dir: Path) -> None:
    """A pandas frame counted on an engine (rowless search) gives the in-memory release,
    with the frame's index."""
    from anonlab.engine import open_engine

    frame = read_table(data_dir / "adult" / "adult.csv", delimiter=";")
    frame.index = frame.index * 3 + 7
    hierarchies = {q: Hierarchy.from_csv(data_dir / "adult" / f"hierarchy_{q}.csv") for q in QIS}
    expected = Generalizer(k=5, suppression=0.01).fit_transform(
        frame, hierarchies, sensitive=["salary-class"]
    )
    with open_engine("numpy", batch_rows=4096) as engine:
        fitted = Generalizer(k=5, suppression=0.01, engine=engine)
        released = fitted.fit_transform(frame, hierarchies, sensitive=["salary-class"])
    assert fitted.result_.release is None and fitted.result_.plan is not None
    pd.testing.assert_frame_equal(released.astype(str), expected.astype(str))


def test_unreachable_scheduler(data_dir: Path, tmp_path: Path) -> None:
    assert_refused(
        [
            *_args(data_dir),
            "--engine",
            "dask",
            "--scheduler",
            "tcp://127.0.0.1:9",
            "--output",
            f"{tmp_path}/out/",
            "--report",
            str(tmp_path / "r.json"),
        ],
        tmp_path,
        "--scheduler 'tcp://127.0.0.1:9' cannot be reached",
    )


def test_parquet_parts_with_other_schemas(data_dir: Path, tmp_path: Path) -> None:
    frame = read_table(data_dir / "adult" / "adult.csv", delimiter=";")
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(
        pa.Table.from_pandas(frame.iloc[:100], preserve_index=False), folder / "part-0.parquet"
    )
    # a part lacking a column (a part storing a column with another type that Arrow casts,
    # as the one reader does, is read: tests/test_engine_mixed_parts.py)
    odd = frame.iloc[100:200].drop(columns=["race"])
    pq.write_table(pa.Table.from_pandas(odd, preserve_index=False), folder / "part-1.parquet")
    assert_refused(
        [
            *_args(data_dir, folder),
            "--engine",
            "dask",
            "--workers",
            "1",
            "--output",
            f"{tmp_path}/out/",
            "--report",
            str(tmp_path / "r.json"),
        ],
        tmp_path,
        "lacks the column 'race' that part",
    )


@pytest.mark.parametrize(
    ("engine", "limit", "needle"),
    [
        ("dask", "100MB", "--memory-limit 95 MiB is too small"),
        ("numpy", "1MB", "is too small for the frequency set"),
    ],
)
def test_memory_limit_too_small(
    data_dir: Path, adult_parts: Path, tmp_path: Path, engine: str, limit: str, needle: str
) -> None:
    """A Dask worker cannot start in 100 MB; 1 MB cannot merge Adult's 18,109 tuples."""
    assert_refused(
        [
            *_args(data_dir, adult_parts),
            "--engine",
            engine,
            "--memory-limit",
            limit,
            "--output",
            f"{tmp_path}/out/",
            "--report",
            str(tmp_path / "r.json"),
        ],
        tmp_path,
        needle,
    )


def test_dask_refuses_a_file_output(data_dir: Path, tmp_path: Path) -> None:
    assert_refused(
        [*_args(data_dir), "--engine", "dask", "--output", str(tmp_path / "r.parquet")],
        tmp_path,
        "writes the release as a folder of Parquet parts",
    )


def test_a_killed_worker_gives_the_same_release_or_a_clean_error(
    data_dir: Path, adult_parts: Path, cluster: Any, tmp_path: Path, numpy_run: dict[str, Any]
) -> None:
    """One worker killed when the first piece of the frequency-set pass is counted: Dask
    recomputes what it held (the release is the same), or the run fails in one line and
    writes nothing."""
    folder = data_dir / "adult"
    settings = GeneralizeSettings(
        input=str(adult_parts),
        qi={q: str(folder / f"hierarchy_{q}.csv") for q in QIS},
        sensitive=["salary-class"],
        k=5,
        suppression=0.01,
        search="flash",
        engine="dask",
        scheduler=cluster.scheduler.address,
        output=f"{tmp_path}/out/",
        report=str(tmp_path / "r.json"),
    )
    victims = sorted(cluster.run(os.getpid).values())
    killed: list[int] = []

    def progress(step: str, done: int, total: int | None) -> None:
        if step == "counting the frequency set" and not killed:
            logging.getLogger("distributed").setLevel(logging.CRITICAL)
            os.kill(victims[0], signal.SIGKILL)
            killed.append(victims[0])

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ReleaseRiskWarning)  # Adult's l = 1 classes
            result = run_generalize(settings, progress=progress)
    except AnonlabError as exc:
        assert "\n" not in str(exc)
        assert sorted(p.name for p in tmp_path.iterdir()) == []
    else:
        assert _digest(read_table(tmp_path / "out")) == _digest(numpy_run["release"])
        _same_search(result.report, numpy_run["report"])
    finally:
        cluster.wait_for_workers(2, timeout=60)
    assert killed


def test_large_release_is_checked_and_measured_from_frequencies(
    data_dir: Path,
    tmp_path: Path,
    adult_parts: Path,
    numpy_run: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the read-back size the release is verified by the frequency set of what was
    written, and its risk measured by the engine: the same report as in memory."""
    from anonlab.runs import generalize_steps

    monkeypatch.setattr(generalize_steps, "IN_MEMORY_ROWS", 100)
    out = tmp_path / "release"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)  # Adult's l = 1 classes
        result = runner.invoke(
            app,
            [
                *_args(data_dir, adult_parts),
                "--output",
                f"{out}/",
                "--report",
                str(tmp_path / "r.json"),
                "--quiet",
            ],
        )
    assert result.exit_code == 0, result.output
    assert _digest(read_table(out)) == _digest(numpy_run["release"])
    report = json.loads((tmp_path / "r.json").read_text())
    _same_search(report, numpy_run["report"])
    assert report["verified"] is True
    assert report["risk_warnings"] == numpy_run["report"]["risk_warnings"]
