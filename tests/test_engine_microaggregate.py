"""``microaggregate`` on the engines: MDAV's scalable variant by regions, a partitioned release.

A synthetic table (3,000 records: three numeric columns with rounded values,
so that some tie, an identifier and a sensitive code) is microaggregated in
memory (the scalable variant, a file release) and through each engine (a
folder release): on the NumPy engine and on a module-wide 2-worker Dask
``LocalCluster`` of processes with a 1 GB memory limit. Small ``region_rows``
and ``block_size`` give several regions and several blocks in each.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.engine import open_engine, open_table
from anonlab.engine.base import EngineBase
from anonlab.errors import AnonlabError
from anonlab.microaggregation.pieces import merge_small, region_planes
from anonlab.runs import microaggregate as microaggregate_run
from anonlab.runs.microaggregate import MicroaggregateSettings, run_microaggregate
from anonlab.verify.microaggregation import check_microaggregation
from engines import write_parts

NUMERIC = ["a", "b", "c"]
K, BLOCK, REGION = 3, 256, 800
pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """The scheduler address of a 2-worker LocalCluster (processes, 1 GB each)."""
    pytest.importorskip("distributed")
    engine = open_engine("dask", workers=2, memory_limit="1GB")
    assert isinstance(engine, EngineBase)
    yield str(engine.client.scheduler.address)  # type: ignore[attr-defined]
    engine.close()


@pytest.fixture(scope="module")
def original() -> pd.DataFrame:
    rng = np.random.default_rng(14)
    n = 3_000
    # short decimals: pandas.to_numeric, the in-memory reader's parser, is not correctly
    # rounded on 17-digit texts such as 27.400000000000002 (Arrow's parser is)
    frame = pd.DataFrame(
        (rng.standard_normal((n, 3)) * [1.0, 10.0, 100.0]).round(2), columns=NUMERIC
    )
    frame.insert(0, "id", [f"p{i:05d}" for i in range(n)])
    frame["s"] = rng.choice(["x", "y", "z", "w"], n)
    return frame


@pytest.fixture(scope="module")
def csv(tmp_path_factory: pytest.TempPathFactory, original: pd.DataFrame) -> Path:
    path = tmp_path_factory.mktemp("csv") / "table.csv"
    original.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory, original: pd.DataFrame) -> Path:
    """The table as a Parquet folder of four uneven parts (the last in two row groups)."""
    return write_parts(
        original,
        tmp_path_factory.mktemp("parts") / "table",
        [0, 700, 701, 1_900, len(original)],
        row_group_size=600,
    )


def _settings(source: Any, output: str, **extra: Any) -> MicroaggregateSettings:
    return MicroaggregateSettings(
        input=source,
        k=K,
        variant="scalable",
        block_size=BLOCK,
        identifying=["id"],
        sensitive=["s"],
        output=output,
        **extra,
    )


def _digest(frame: pd.DataFrame) -> str:
    """A content hash of a table's rows, independent of their order."""
    text = frame.astype(str)
    rows = sorted("\x1f".join(r) for r in text.itertuples(index=False, name=None))
    return hashlib.sha256("\x1e".join([",".join(frame.columns), *rows]).encode()).hexdigest()


def _engine(name: str, cluster: str) -> dict[str, Any]:
    return {"engine": "dask", "scheduler": cluster} if name == "dask" else {}


# ---------------------------------------------------------------------------
# Equal releases
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["numpy", "dask"])
def test_one_region_equals_the_in_memory_release(
    engine: str, cluster: str, csv: Path, tmp_path: Path
) -> None:
    """With one region the groups are the in-memory scalable variant's: the same release,
    row for row (the region holds the table in its order)."""
    memory = run_microaggregate(_settings(str(csv), str(tmp_path / "memory.parquet")))
    result = run_microaggregate(
        _settings(str(csv), f"{tmp_path / 'release'}/", **_engine(engine, cluster))
    )
    expected = pd.read_parquet(tmp_path / "memory.parquet")
    got = pd.read_parquet(tmp_path / "release")
    assert result.report["engine"]["regions"] == 1
    assert list(got.columns) == ["a", "b", "c", "s"]
    assert np.array_equal(got[NUMERIC].to_numpy(), expected[NUMERIC].to_numpy())
    assert list(got["s"]) == [str(v) for v in expected["s"]]
    for key in ("groups", "group_sizes", "records"):
        assert result.report[key] == memory.report[key]
    assert result.report["measures"]["ILh"] == pytest.approx(
        memory.report["measures"]["ILh"], rel=1e-12
    )
    assert result.report["risk"] == memory.report["risk"]


def test_numpy_and_dask_write_the_same_regions(
    cluster: str, parts: Path, csv: Path, tmp_path: Path
) -> None:
    """Several regions: the same release (content hash) on both engines and from the CSV
    and the Parquet folder; every region holds at least 2k records."""
    digests, reports = [], []
    for i, (engine, source) in enumerate([("numpy", parts), ("dask", parts), ("dask", csv)]):
        out = f"{tmp_path / f'release{i}'}/"
        result = run_microaggregate(
            _settings(str(source), out, region_rows=REGION, **_engine(engine, cluster))
        )
        digests.append(_digest(pd.read_parquet(out)))
        reports.append(result.report)
    assert len(set(digests)) == 1
    first = reports[0]
    assert first["engine"]["regions"] == 4
    assert sum(first["engine"]["rows_by_region"]) == 3_000
    assert min(first["engine"]["rows_by_region"]) >= 2 * K
    assert first["engine"]["checked"] == "whole release"
    assert all(r["verified"] for r in reports)
    assert reports[1]["measures"] == first["measures"]  # the same pieces: the same figures
    # the CSV is one piece: its moments, summed in another order, differ in the last bits
    assert reports[2]["measures"]["ILh"] == pytest.approx(first["measures"]["ILh"], rel=1e-12)
    assert len(list((tmp_path / "release0").glob("part-*.parquet"))) == 4


@pytest.mark.parametrize("source", ["csv", "parts"])
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_file_output_is_the_folder_release_in_the_input_order(
    source: str, suffix: str, csv: Path, parts: Path, tmp_path: Path
) -> None:
    """In memory, more records than region_rows: the NumPy engine's regions, as with a
    folder output (same groups, same figures), the rows in the input's order."""
    path = str(csv if source == "csv" else parts)
    folder = run_microaggregate(_settings(path, f"{tmp_path / 'folder'}/", region_rows=REGION))
    memory = run_microaggregate(
        _settings(path, str(tmp_path / f"file{suffix}"), region_rows=REGION)
    )
    written = (
        pd.read_csv(tmp_path / "file.csv", dtype={"s": str})
        if suffix == ".csv"
        else pd.read_parquet(tmp_path / "file.parquet")
    )
    released = pd.read_parquet(tmp_path / "folder")
    assert _digest(written.astype({c: float for c in NUMERIC})) == _digest(released)
    assert memory.report["engine"] == folder.report["engine"]
    assert memory.report["engine"]["regions"] == 4
    for key in ("groups", "group_sizes", "records", "measures", "risk", "verified"):
        assert memory.report[key] == folder.report[key]
    assert memory.release is not None  # in the input's order: the sensitive codes as read
    assert list(memory.release["s"]) == list(pd.read_csv(csv, dtype=str)["s"])


def test_a_database_input_is_cut_into_regions_too(original: pd.DataFrame, tmp_path: Path) -> None:
    """The engine does not read a database: its table, as read, is given to the NumPy
    engine, cut into regions all the same, and released in its order, verified."""
    import sqlite3

    with sqlite3.connect(tmp_path / "t.db") as db:
        original.to_sql("t", db, index=False)
    result = run_microaggregate(
        _settings(
            f"sqlite:///{tmp_path / 't.db'}",
            str(tmp_path / "out.csv"),
            region_rows=REGION,
            table="t",
        )
    )
    assert result.report["engine"]["regions"] == 4
    assert result.report["records"] == len(original)
    assert result.report["verified"]
    written = pd.read_csv(tmp_path / "out.csv", dtype={"s": str})
    assert list(written["s"]) == list(original["s"])
    sizes = written.groupby(NUMERIC).size()
    assert sizes.min() >= K


def test_a_database_table_on_the_engine(original: pd.DataFrame, tmp_path: Path) -> None:
    """A database table, read whole as in memory and cut into pieces by the engine, gives
    the release the in-memory run by regions gives (same groups, in the input's order)."""
    import sqlite3

    with sqlite3.connect(tmp_path / "t.db") as db:
        original.to_sql("t", db, index=False)
    url = f"sqlite:///{tmp_path / 't.db'}"
    folder = run_microaggregate(
        _settings(url, f"{tmp_path / 'folder'}/", region_rows=REGION, table="t")
    )
    memory = run_microaggregate(
        _settings(url, str(tmp_path / "file.csv"), region_rows=REGION, table="t")
    )
    assert folder.report["engine"] == memory.report["engine"]
    for key in ("groups", "group_sizes", "records", "measures", "risk", "verified"):
        assert folder.report[key] == memory.report[key]
    written = pd.read_csv(tmp_path / "file.csv", dtype={"s": str})
    assert _digest(written.astype({c: float for c in NUMERIC})) == _digest(
        pd.read_parquet(tmp_path / "folder")
    )
    with pytest.raises(AnonlabError, match="output_table applies to a database output"):
        run_microaggregate(_settings(url, f"{tmp_path / 'o'}/", table="t", output_table="x"))


def test_a_dask_dataframe_input(
    cluster: str, original: pd.DataFrame, parts: Path, tmp_path: Path
) -> None:
    """A Dask DataFrame gives the same release on the NumPy engine (its partitions computed
    here) and on Dask."""
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(original, npartitions=3)
    digests = []
    for engine in ("numpy", "dask"):
        out = f"{tmp_path / engine}/"
        result = run_microaggregate(
            _settings(frame, out, region_rows=REGION, **_engine(engine, cluster))
        )
        assert result.report["parameters"]["input"] == "a Dask DataFrame"
        digests.append(_digest(pd.read_parquet(out)))
    assert digests[0] == digests[1]


def test_regions_pass_the_independent_check(
    original: pd.DataFrame, parts: Path, tmp_path: Path
) -> None:
    """Every group of a several-region release has at least k records and releases its
    records' means: the checker on the release aligned with the input by identifier."""
    out = f"{tmp_path / 'release'}/"
    run_microaggregate(
        MicroaggregateSettings(
            input=str(parts),
            k=K,
            variant="scalable",
            block_size=BLOCK,
            region_rows=500,
            insensitive=["id", "s"],
            output=out,
        )
    )
    release = pd.read_parquet(out)
    aligned = original.set_index("id").loc[release["id"]].reset_index()
    assert check_microaggregation(aligned, release, K, numeric=NUMERIC) == []
    sizes = release.groupby(NUMERIC).size()
    assert sizes.min() >= K and sizes.max() <= 2 * K - 1


def test_a_large_release_is_checked_region_by_region(
    parts: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above IN_MEMORY_ROWS each region's task checks its part; the risk section, then
    measured from the engine's frequency set, equals the one measured on the release."""
    small = run_microaggregate(_settings(str(parts), f"{tmp_path / 'small'}/", region_rows=REGION))
    monkeypatch.setattr(microaggregate_run, "IN_MEMORY_ROWS", 10)
    large = run_microaggregate(_settings(str(parts), f"{tmp_path / 'large'}/", region_rows=REGION))
    assert large.report["engine"]["checked"] == "region by region"
    assert large.report["verified"]
    assert _digest(pd.read_parquet(tmp_path / "large")) == _digest(
        pd.read_parquet(tmp_path / "small")
    )
    assert large.report["risk"]["prosecutor"] == small.report["risk"]["prosecutor"]


@pytest.mark.parametrize("large", [False, True])
def test_a_wrong_release_is_refused_and_nothing_written(
    large: bool, parts: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Means moved off by a little are found by the checker, whole or region by region."""
    from anonlab.microaggregation import mdav

    real = mdav.group_means

    def off(x: Any, labels: Any) -> Any:
        means = real(x, labels)
        means[0, 0] += 1e-3
        return means

    monkeypatch.setattr(mdav, "group_means", off)
    if large:
        monkeypatch.setattr(microaggregate_run, "IN_MEMORY_ROWS", 10)
    with pytest.raises(AnonlabError, match="verification failed, nothing written"):
        run_microaggregate(
            _settings(
                str(parts),
                f"{tmp_path / 'release'}/",
                region_rows=REGION,
                report=str(tmp_path / "r.json"),
            )
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_killed_worker_gives_the_same_release_or_a_clean_error(
    cluster: str, parts: Path, tmp_path: Path
) -> None:
    """One worker killed when the first region is done: Dask recomputes what it held (the
    release is the same as the NumPy engine's), or the run fails in one line and writes
    nothing."""
    import logging
    import os
    import signal

    distributed = pytest.importorskip("distributed")
    expected = tmp_path / "numpy"
    run_microaggregate(_settings(str(parts), f"{expected}/", region_rows=REGION))
    client = distributed.Client(cluster, set_as_default=False)
    victims = sorted(client.run(os.getpid).values())
    killed: list[int] = []

    def progress(step: str, done: int, total: int | None) -> None:
        if step == "microaggregating regions" and not killed:
            logging.getLogger("distributed").setLevel(logging.CRITICAL)
            os.kill(victims[0], signal.SIGKILL)
            killed.append(victims[0])

    out = tmp_path / "dask"
    try:
        run_microaggregate(
            _settings(str(parts), f"{out}/", region_rows=REGION, **_engine("dask", cluster)),
            progress=progress,
        )
    except AnonlabError as exc:
        assert "\n" not in str(exc)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["numpy"]
    else:
        assert _digest(pd.read_parquet(out)) == _digest(pd.read_parquet(expected))
    finally:
        client.wait_for_workers(2, timeout=60)
        client.close()
    assert killed


# ---------------------------------------------------------------------------
# Regions
# ---------------------------------------------------------------------------


def test_planes_cut_a_sample_into_equal_regions() -> None:
    z = np.random.default_rng(2).standard_normal((10_000, 4))
    planes = region_planes(z, 5)
    leaves = planes.route(z)
    assert planes.leaves == 5
    counts = np.bincount(leaves, minlength=5)
    assert counts.min() >= 1_990 and counts.max() <= 2_010


def test_planes_of_tied_values_stay_one_region() -> None:
    z = np.zeros((100, 2))
    planes = region_planes(z, 4)
    assert planes.leaves == 1
    assert set(planes.route(z)) == {0}


def test_small_leaves_join_their_smaller_neighbour() -> None:
    assert merge_small([1, 10, 2, 10], 6) == [[0, 1], [2, 3]]
    assert merge_small([10, 2, 10], 6) == [[0, 1], [2]]
    assert merge_small([3], 6) == [[0]]
    assert merge_small([4, 4, 4], 6) == [[0, 1, 2]]
    assert merge_small([9, 4, 2, 9], 6) == [[0], [1, 2], [3]]


def test_heavy_ties_still_give_regions_of_at_least_2k(tmp_path: Path) -> None:
    """An attribute with three values cuts unevenly; undersized leaves are merged."""
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(
        {
            "a": rng.choice([0.0, 1.0, 2.0], 2_000, p=[0.998, 0.001, 0.001]),
            "b": rng.standard_normal(2_000) * 1e-6,
        }
    )
    frame.to_parquet(tmp_path / "t.parquet")
    result = run_microaggregate(
        MicroaggregateSettings(
            input=str(tmp_path / "t.parquet"),
            k=5,
            variant="scalable",
            block_size=64,
            region_rows=300,
            output=f"{tmp_path / 'out'}/",
        )
    )
    assert min(result.report["engine"]["rows_by_region"]) >= 10
    assert result.report["verified"]


def test_the_engine_opens_a_table_in_pieces(parts: Path) -> None:
    assert len(open_table(parts).pieces) == 4


# ---------------------------------------------------------------------------
# Bad input: one line, exit 2, nothing written
# ---------------------------------------------------------------------------


def _cli(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output


def test_the_command_on_dask(cluster: str, csv: Path, parts: Path, tmp_path: Path) -> None:
    out = f"{tmp_path / 'release'}/"
    code, text = _cli(
        [
            "microaggregate",
            str(csv),
            "--variant",
            "scalable",
            "--k",
            str(K),
            "--block-size",
            str(BLOCK),
            "--region-rows",
            str(REGION),
            "--identifying",
            "id",
            "--sensitive",
            "s",
            "--engine",
            "dask",
            "--scheduler",
            cluster,
            "--output",
            out,
            "--report",
            str(tmp_path / "r.json"),
        ]
    )
    assert code == 0, text
    assert "4 region(s) on engine dask" in text
    api = run_microaggregate(_settings(str(parts), f"{tmp_path / 'api'}/", region_rows=REGION))
    assert _digest(pd.read_parquet(out)) == _digest(pd.read_parquet(tmp_path / "api"))
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["parameters"]["engine"] == "dask"
    assert report["measures"]["ILh"] == pytest.approx(api.report["measures"]["ILh"], rel=1e-12)


def test_toml_keys(cluster: str, parts: Path, tmp_path: Path) -> None:
    """The engine keys of a TOML config: engine, scheduler, region_rows (paths relative to
    the config's folder)."""
    config = tmp_path / "c.toml"
    config.write_text(
        f'input = "{parts}"\nvariant = "scalable"\nk = {K}\n'
        f'block_size = {BLOCK}\nregion_rows = {REGION}\nengine = "dask"\n'
        f'scheduler = "{cluster}"\nidentifying = ["id"]\nsensitive = ["s"]\n'
        'output = "out/"\n'
    )
    settings = MicroaggregateSettings.load(config)
    assert (settings.engine, settings.scheduler, settings.region_rows) == ("dask", cluster, REGION)
    result = run_microaggregate(settings)
    assert result.report["engine"]["name"] == "dask"
    assert result.report["engine"]["regions"] == 4
    assert len(list((tmp_path / "out").glob("part-*.parquet"))) == 4


def test_scheduler_needs_engine_dask(csv: Path) -> None:
    with pytest.raises(AnonlabError, match="scheduler applies to engine 'dask' only"):
        MicroaggregateSettings(input=str(csv), scheduler="tcp://127.0.0.1:1")


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--variant", "exact"], "Error: --variant 'exact' runs in memory only"),
        (["--nominal", "s"], "Error: --nominal columns are masked in memory only"),
        (["--output-file"], "Error: --output: engine 'dask' writes the release as a folder"),
        (["--region-rows", "4"], "Error: --region-rows must be at least 2k = 6 (got 4)"),
        (["--workers", "-1"], "Error: --workers -1 (every CPU) applies in this process only"),
        (["--memory-limit", "lots"], "Error: --memory-limit 'lots' is not an amount of memory"),
    ],
)
def test_bad_input(extra: list[str], says: str, cluster: str, csv: Path, tmp_path: Path) -> None:
    output = f"{tmp_path / 'release'}/"
    if extra == ["--output-file"]:
        output, extra = str(tmp_path / "release.parquet"), []
    args = [
        "microaggregate",
        str(csv),
        "--k",
        str(K),
        "--identifying",
        "id",
        "--sensitive",
        "s",
        "--engine",
        "dask",
        "--scheduler",
        cluster,
        "--output",
        output,
        "--report",
        str(tmp_path / "r.json"),
        *extra,
    ]
    if "--variant" not in extra:
        args += ["--variant", "scalable"]
    code, text = _cli(args)
    assert code == 2, text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(says), text
    assert list(tmp_path.iterdir()) == []
