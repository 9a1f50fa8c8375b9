"""The engines: every pass gives the in-memory result, on NumPy and on a Dask cluster.

One fixture, ``engine``, gives each backend in turn (the NumPy engine, and a
Dask engine joined to a module-wide 2-worker ``LocalCluster`` of processes
with a 1 GB memory limit), the way narwhals tests each backend through one
constructor fixture. Each test compares an engine's result with what the
in-memory code computes on the whole table (``FrequencyEngine``,
``encode_qi``, NumPy moments, a row-by-row release), on Adult read as CSV
pieces and as a partitioned Parquet folder, and on a random table with typed
columns, nulls and hive partitions. Small batches and pieces make every
table span many pieces and batches.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from anonlab.dataset import Dataset
from anonlab.engine import AffineRows, ReleasePlan, StagedFolder, open_engine, open_table
from anonlab.engine.base import EngineBase, parse_memory_limit
from anonlab.errors import AnonlabError
from anonlab.hierarchy import Hierarchy
from anonlab.io import read_table
from anonlab.lattice.bridge import encoded_qis, encoded_sensitive, plan_at
from anonlab.lattice.freqset import FrequencyEngine
from engines import write_parts

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO / "data" / "adult"
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
RANDOM_QIS = ["zip", "year", "grade", "code", "flag"]
BATCH = 3000  # rows per batch: Adult spans 11 batches


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return read_table(ADULT / "adult.csv", delimiter=";")


@pytest.fixture(scope="module")
def adult_hierarchies() -> dict[str, Hierarchy]:
    return {q: Hierarchy.from_csv(ADULT / f"hierarchy_{q}.csv") for q in QIS}


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory, adult: pd.DataFrame) -> dict[str, Any]:
    """Adult as CSV pieces and as a Parquet folder of uneven parts; a random typed table."""
    root = tmp_path_factory.mktemp("tables")
    folder = write_parts(
        adult, root / "adult_parts", [0, 1000, 9000, 9001, 20000, len(adult)], row_group_size=2500
    )
    random_folder = root / "random"
    _random_parts(random_folder)
    return {
        "adult_csv": open_table(ADULT / "adult.csv", delimiter=";", csv_block=300_000),
        "adult_parquet": open_table(folder, piece_rows=5000),
        "random": open_table(random_folder, piece_rows=4000),
        "random_folder": random_folder,
    }


def _random_parts(folder: Path) -> None:
    """A hive-partitioned table (``region=...``) with integer, float, text and null values."""
    rng = np.random.default_rng(7)
    for region in ("north", "south", "east"):
        for part in range(2):
            n = int(rng.integers(3000, 9000))
            year = pa.array(rng.integers(1990, 2010, n), pa.int64(), mask=rng.random(n) < 0.02)
            table = pa.table(
                {
                    "zip": pa.array([f"{z:05d}" for z in rng.integers(0, 3000, n)]),
                    "year": year,
                    "grade": pa.array(rng.choice([0.5, 1.0, 1.5, 2.25], n)),
                    "code": pa.array(rng.choice(["a", "b", "c", "d", "e"], n)).dictionary_encode(),
                    "flag": pa.array(rng.random(n) < 0.3),
                    "income": pa.array(rng.normal(40_000, 9_000, n)),
                    "hours": pa.array(rng.integers(10, 60, n).astype(np.float64)),
                    "disease": pa.array(rng.choice(["flu", "cold", "none", ""], n)),
                }
            )
            target = folder / f"region={region}"
            target.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, target / f"part-{part}.parquet", row_group_size=1500)


def _flat_hierarchy(values: list[str]) -> Hierarchy:
    return Hierarchy.from_rows([(v, "*") for v in dict.fromkeys(values)])


# ---------------------------------------------------------------------------
# Engines
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dask_engine() -> Iterator[EngineBase]:
    """A Dask engine that started its own 2-worker LocalCluster of processes (1 GB each)."""
    pytest.importorskip("distributed")
    engine = open_engine("dask", workers=2, memory_limit="1GB", batch_rows=BATCH)
    assert isinstance(engine, EngineBase)
    yield engine
    engine.close()


@pytest.fixture(params=["numpy", "dask"])
def engine(request: pytest.FixtureRequest) -> EngineBase:
    if request.param == "numpy":
        numpy_engine = open_engine("numpy", batch_rows=BATCH)
        assert isinstance(numpy_engine, EngineBase)
        return numpy_engine
    found: EngineBase = request.getfixturevalue("dask_engine")
    return found


def _in_memory(
    frame: pd.DataFrame, qis: list[str], sensitive: list[str], hierarchies: dict[str, Hierarchy]
) -> tuple[Dataset, FrequencyEngine]:
    ds = Dataset.from_frame(
        frame, {q: hierarchies[q] for q in qis}, sensitive=sensitive, other="insensitive"
    )
    return ds, FrequencyEngine(ds, sensitive=sensitive)


def _random_reference(tables: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Hierarchy]]:
    frame = read_table(tables["random_folder"])
    return frame, {q: _flat_hierarchy(list(frame[q])) for q in [*RANDOM_QIS, "region"]}


# ---------------------------------------------------------------------------
# (b) the base frequency set
# ---------------------------------------------------------------------------


def _assert_same_base(base: Any, ds: Dataset, fe: FrequencyEngine, sensitive: list[str]) -> None:
    assert base.rows == ds.n
    assert base.dictionaries == tuple(q.values for q in ds.qis)
    assert np.array_equal(base.tuples, fe.base_tuples)
    assert np.array_equal(base.counts, fe.bottom.counts)
    assert fe.bottom.representatives is not None
    assert np.array_equal(base.first_rows, fe.bottom.representatives)
    for name in sensitive:
        mine, theirs = base.sensitive[name], fe.bottom.sensitive[name]
        assert mine.dictionary == ds.sensitive_attribute(name).values
        assert np.array_equal(mine.classes, theirs.classes)
        assert np.array_equal(mine.values, theirs.values)
        assert np.array_equal(mine.counts, theirs.counts)
        assert np.array_equal(mine.frequencies, theirs.global_counts)


@pytest.mark.parametrize("source", ["adult_csv", "adult_parquet"])
def test_frequency_set_of_adult_is_the_in_memory_one(
    engine: EngineBase,
    tables: dict[str, Any],
    adult: pd.DataFrame,
    adult_hierarchies: dict[str, Hierarchy],
    source: str,
) -> None:
    table = tables[source]
    assert len(table.pieces) > 3
    base = engine.frequency_set(table, QIS, ["salary-class"])
    ds, fe = _in_memory(adult, QIS, ["salary-class"], adult_hierarchies)
    assert base.tuples.shape == (18109, 8)  # Adult's distinct QI tuples (issue 14)
    _assert_same_base(base, ds, fe, ["salary-class"])
    (mine,) = encoded_sensitive(base)
    theirs = ds.sensitive_attribute("salary-class")
    assert mine.values == theirs.values and np.array_equal(mine.frequencies, theirs.frequencies)


def test_frequency_set_of_a_random_hive_table(engine: EngineBase, tables: dict[str, Any]) -> None:
    frame, hierarchies = _random_reference(tables)
    qis = [*RANDOM_QIS, "region"]
    base = engine.frequency_set(tables["random"], qis, ["disease"])
    ds, fe = _in_memory(frame, qis, ["disease"], hierarchies)
    assert base.tuples.shape[0] > 10_000  # mostly distinct: many merges of many tuples
    assert "" in base.dictionaries[1]  # a null year is the empty text
    _assert_same_base(base, ds, fe, ["disease"])


def test_frequency_set_of_a_dataframe_and_a_dask_dataframe(
    engine: EngineBase, adult: pd.DataFrame, adult_hierarchies: dict[str, Hierarchy]
) -> None:
    ds, fe = _in_memory(adult, QIS, ["salary-class"], adult_hierarchies)
    base = engine.frequency_set(open_table(adult, piece_rows=7000), QIS, ["salary-class"])
    _assert_same_base(base, ds, fe, ["salary-class"])
    dd = pytest.importorskip("dask.dataframe")
    lazy = dd.from_pandas(adult, npartitions=5)
    _assert_same_base(engine.frequency_set(lazy, QIS, ["salary-class"]), ds, fe, ["salary-class"])


def test_the_engines_agree_with_each_other(dask_engine: EngineBase, tables: dict[str, Any]) -> None:
    numpy_engine = open_engine("numpy", batch_rows=BATCH)
    qis = [*RANDOM_QIS, "region"]
    a = numpy_engine.frequency_set(tables["random"], qis, ["disease"])
    b = dask_engine.frequency_set(tables["random"], qis, ["disease"])
    assert a.dictionaries == b.dictionaries
    for x, y in (
        (a.tuples, b.tuples),
        (a.counts, b.counts),
        (a.first_rows, b.first_rows),
        (a.sensitive["disease"].counts, b.sensitive["disease"].counts),
    ):
        assert np.array_equal(x, y)


# ---------------------------------------------------------------------------
# (a) dictionary encoding
# ---------------------------------------------------------------------------


def test_encoding_is_encode_qi_and_maps_onto_the_hierarchies(
    engine: EngineBase,
    tables: dict[str, Any],
    adult: pd.DataFrame,
    adult_hierarchies: dict[str, Hierarchy],
) -> None:
    enc = engine.encode(tables["adult_parquet"], QIS, codes=True)
    ds, _ = _in_memory(adult, QIS, [], adult_hierarchies)
    assert enc.rows == ds.n
    assert np.array_equal(enc.code_matrix(), ds.code_matrix())
    for j, q in enumerate(ds.qis):
        assert enc.dictionaries[j] == q.values
        assert np.array_equal(enc.frequencies[j], q.frequencies)
    base = engine.frequency_set(tables["adult_parquet"], QIS)
    for mine, theirs in zip(encoded_qis(base, adult_hierarchies), ds.qis, strict=True):
        assert mine.values == theirs.values and mine.level_labels == theirs.level_labels
        assert all(
            np.array_equal(a, b) for a, b in zip(mine.level_codes, theirs.level_codes, strict=True)
        )
        assert np.array_equal(mine.frequencies, theirs.frequencies)


def test_sorted_dictionaries_decode_to_the_values(
    engine: EngineBase, tables: dict[str, Any]
) -> None:
    frame, _ = _random_reference(tables)
    enc = engine.encode(tables["random"], ["year", "code"], order="sorted", codes=True)
    codes = enc.code_matrix()
    for j, name in enumerate(["year", "code"]):
        assert list(enc.dictionaries[j]) == sorted(set(frame[name]))
        decoded = np.asarray(enc.dictionaries[j], dtype=object)[codes[:, j]]
        assert list(decoded) == list(frame[name])
        assert enc.frequencies[j].sum() == len(frame)


# ---------------------------------------------------------------------------
# (c) the release
# ---------------------------------------------------------------------------


def _expected_release(
    frame: pd.DataFrame,
    hierarchies: dict[str, Hierarchy],
    levels: dict[str, int],
    k: int,
    drop: list[str],
) -> pd.DataFrame:
    """The release row by row: each value's label at its level, classes under k starred."""
    out = frame.drop(columns=drop).copy()
    for q, level in levels.items():
        out[q] = [hierarchies[q].label(v, level) for v in frame[q]]
    sizes = out.groupby(list(levels), sort=False)[next(iter(levels))].transform("size")
    small = (sizes < k).to_numpy()
    for q in levels:
        out.loc[small, q] = "*"
    return out


def _read_release(folder: Path) -> pd.DataFrame:
    parts = list(folder.iterdir())
    assert all(p.name.startswith("part-") and p.suffix == ".parquet" for p in parts)
    return read_table(folder)  # the one reader: parts in order, values as text


def test_release_is_the_row_by_row_release(
    engine: EngineBase,
    tables: dict[str, Any],
    adult: pd.DataFrame,
    adult_hierarchies: dict[str, Hierarchy],
    tmp_path: Path,
) -> None:
    levels = dict(zip(QIS, [0, 2, 1, 1, 2, 1, 1, 1], strict=True))
    base = engine.frequency_set(tables["adult_csv"], QIS)
    qis = encoded_qis(base, adult_hierarchies)
    groups = [q.level_codes[levels[q.name]] for q in qis]
    classes, counts = base.classes_at(groups, [len(q.level_labels[levels[q.name]]) for q in qis])
    plan = plan_at(qis, list(levels.values()), classes[counts < 5], drop=["salary-class"])
    out = tmp_path / "release"
    summary = engine.write_release(tables["adult_csv"], plan, out)
    expected = _expected_release(adult, adult_hierarchies, levels, 5, ["salary-class"])
    written = _read_release(out)
    assert summary.rows == len(adult) and summary.parts == len(tables["adult_csv"].pieces)
    assert summary.suppressed == int((written["sex"] == "*").sum()) > 0
    pd.testing.assert_frame_equal(written, expected)
    assert [p.name for p in tmp_path.iterdir()] == ["release"]  # no staged folder left


def test_release_of_a_hive_table_keeps_the_other_columns_as_text(
    engine: EngineBase, tables: dict[str, Any], tmp_path: Path
) -> None:
    frame, hierarchies = _random_reference(tables)
    levels = {"zip": 0, "code": 1, "region": 0}
    base = engine.frequency_set(tables["random"], list(levels))
    qis = encoded_qis(base, hierarchies)
    classes, counts = base.classes_at(
        [q.level_codes[levels[q.name]] for q in qis],
        [len(q.level_labels[levels[q.name]]) for q in qis],
    )
    plan = plan_at(qis, list(levels.values()), classes[counts < 3], drop=["income"])
    engine.write_release(tables["random"], plan, tmp_path / "out")
    expected = _expected_release(frame, hierarchies, levels, 3, ["income"])
    pd.testing.assert_frame_equal(_read_release(tmp_path / "out"), expected)


def test_release_replaces_an_earlier_release_and_refuses_other_targets(
    engine: EngineBase,
    tables: dict[str, Any],
    adult_hierarchies: dict[str, Hierarchy],
    tmp_path: Path,
) -> None:
    base = engine.frequency_set(tables["adult_parquet"], QIS)
    plan = plan_at(encoded_qis(base, adult_hierarchies), [1] * 8)
    out = tmp_path / "release"
    engine.write_release(tables["adult_parquet"], plan, out)
    first = _read_release(out)
    engine.write_release(tables["adult_parquet"], plan, out)  # an earlier release: replaced
    pd.testing.assert_frame_equal(_read_release(out), first)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    (tmp_path / "file.parquet").write_text("x")
    for target in ("notes", "file.parquet"):
        with pytest.raises(AnonlabError) as err:
            engine.write_release(tables["adult_parquet"], plan, tmp_path / target)
        assert err.value.parameter == "output" and str(err.value).startswith("output")
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine"


def test_a_failing_release_writes_nothing(
    engine: EngineBase,
    tables: dict[str, Any],
    adult_hierarchies: dict[str, Hierarchy],
    tmp_path: Path,
) -> None:
    """A value the plan's dictionary lacks (in a late piece) fails the run; nothing stays."""
    base = engine.frequency_set(tables["adult_parquet"], QIS)
    qis = list(encoded_qis(base, adult_hierarchies))
    plan = plan_at(qis, [1] * 8)
    short = ReleasePlan(
        plan.columns,
        (plan.dictionaries[0], plan.dictionaries[1][:-1], *plan.dictionaries[2:]),
        plan.groups,
        plan.labels,
        plan.suppressed,
    )
    with pytest.raises(AnonlabError) as err:
        engine.write_release(tables["adult_parquet"], short, tmp_path / "release")
    assert err.value.parameter == "input" and "column 'age'" in str(err.value)
    assert list(tmp_path.iterdir()) == []
    staged = StagedFolder(tmp_path / "later")
    engine.write_release(tables["adult_parquet"], plan, staged)  # the caller commits
    assert not (tmp_path / "later").exists()
    staged.commit()
    assert len(_read_release(tmp_path / "later")) == 30162


# ---------------------------------------------------------------------------
# (d) moments and (e) row-wise transforms
# ---------------------------------------------------------------------------


def test_moments_are_numpys(engine: EngineBase, tables: dict[str, Any]) -> None:
    frame, _ = _random_reference(tables)
    x = frame[["income", "hours", "grade"]].astype(float).to_numpy()
    moments = engine.moments(tables["random"], ["income", "hours", "grade"])
    assert moments.count == x.shape[0]
    np.testing.assert_allclose(moments.mean, x.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(moments.std, x.std(axis=0), rtol=1e-12)


def test_moments_are_the_same_doubles_on_both_engines(
    dask_engine: EngineBase, tables: dict[str, Any]
) -> None:
    a = open_engine("numpy", batch_rows=BATCH).moments(tables["random"], ["income", "hours"])
    b = dask_engine.moments(tables["random"], ["income", "hours"])
    assert a.count == b.count
    assert np.array_equal(a.mean, b.mean) and np.array_equal(a.std, b.std)


def test_row_transform_is_the_matrix_product(
    engine: EngineBase, tables: dict[str, Any], tmp_path: Path
) -> None:
    frame, _ = _random_reference(tables)
    columns = ["income", "hours", "grade"]
    moments = engine.moments(tables["random"], columns)
    rotation, _ = np.linalg.qr(np.random.default_rng(3).normal(size=(3, 3)))
    function = AffineRows(moments.mean, moments.std, rotation, moments.mean, moments.std)
    summary = engine.transform_rows(tables["random"], columns, function, tmp_path / "out")
    written = read_table(tmp_path / "out", doubles=columns)  # float64 columns as they are
    x = frame[columns].astype(float).to_numpy()
    expected = ((rotation @ ((x - x.mean(0)) / x.std(0)).T).T * x.std(0)) + x.mean(0)
    assert summary.rows == len(frame)
    np.testing.assert_allclose(written[columns].to_numpy(), expected, rtol=0, atol=1e-9)
    assert list(written.columns) == list(frame.columns)
    assert list(written["zip"]) == list(frame["zip"])  # other columns: their text


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


def test_parts_with_inconsistent_schemas_are_refused(engine: EngineBase, tmp_path: Path) -> None:
    pq.write_table(pa.table({"a": ["x"], "b": [1]}), tmp_path / "part-0.parquet")
    pq.write_table(pa.table({"a": ["y"], "b": ["z"]}), tmp_path / "part-1.parquet")
    with pytest.raises(AnonlabError) as err:
        engine.frequency_set(tmp_path, ["a", "b"])
    assert err.value.parameter == "input" and str(err.value).startswith("input")
    assert "part-1.parquet" in str(err.value) and "'b'" in str(err.value)
    pq.write_table(pa.table({"a": ["y"]}), tmp_path / "part-1.parquet")
    with pytest.raises(AnonlabError, match="lacks the column 'b'"):
        engine.frequency_set(tmp_path, ["a"])


def test_bad_columns_and_sources(
    engine: EngineBase, tables: dict[str, Any], tmp_path: Path
) -> None:
    with pytest.raises(AnonlabError) as err:
        engine.frequency_set(tables["adult_parquet"], ["sex", "nope"])
    assert err.value.parameter == "qi"
    with pytest.raises(AnonlabError) as err:
        engine.frequency_set(tmp_path / "missing", ["a"])
    assert err.value.parameter == "input"
    with pytest.raises(AnonlabError) as err:
        engine.frequency_set(str(tmp_path / "*.parquet"), ["a"])
    assert err.value.parameter == "input"
    with pytest.raises(AnonlabError) as err:
        engine.moments(tables["adult_parquet"], ["sex"])
    assert "read as numbers" in str(err.value)


def test_malformed_csv_piece_is_one_error(engine: EngineBase, tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n" + "1,2\n" * 50 + "3,4,5\n" + "1,2\n" * 50)
    with pytest.raises(AnonlabError) as err:
        engine.frequency_set(open_table(path, csv_block=100), ["a", "b"])
    assert err.value.parameter == "input" and "malformed" in str(err.value)


def test_a_frequency_set_above_the_memory_limit_is_refused(
    dask_engine: EngineBase, tables: dict[str, Any]
) -> None:
    cluster = getattr(dask_engine, "cluster")  # noqa: B009 -- DaskEngine's attribute
    engines = [
        open_engine("numpy", batch_rows=BATCH, memory_limit="1MB"),
        open_engine(
            "dask", scheduler=cluster.scheduler_address, memory_limit="1MB", batch_rows=BATCH
        ),
    ]
    try:
        for limited in engines:
            with pytest.raises(AnonlabError) as err:
                limited.frequency_set(tables["random"], [*RANDOM_QIS, "region"])
            assert err.value.parameter == "memory_limit"
            assert str(err.value).startswith("memory_limit 1 MiB is too small")
    finally:
        engines[1].close()


def test_bad_engine_settings() -> None:
    with pytest.raises(AnonlabError) as err:
        open_engine("dask", workers=1, memory_limit="10MB")  # refused before starting
    assert err.value.parameter == "memory_limit" and "at least 256 MiB" in str(err.value)
    for bad in ("lots", "-1GB", 0):
        with pytest.raises(AnonlabError) as err:
            parse_memory_limit(bad)
        assert err.value.parameter == "memory_limit"
    assert parse_memory_limit("4GB") == 4 * 10**9
    assert parse_memory_limit("512 MiB") == 512 * 2**20
    with pytest.raises(AnonlabError) as err:
        open_engine("numpy", scheduler="tcp://127.0.0.1:8786")
    assert err.value.parameter == "scheduler"
    with pytest.raises(AnonlabError) as err:
        open_engine("spark")
    assert err.value.parameter == "engine"


def test_an_unreachable_scheduler_is_one_error() -> None:
    pytest.importorskip("distributed")
    with pytest.raises(AnonlabError) as err:
        open_engine("dask", scheduler="tcp://127.0.0.1:9", connect_timeout=1)
    assert err.value.parameter == "scheduler"
    assert str(err.value).startswith("scheduler 'tcp://127.0.0.1:9' cannot be reached")
    assert "\n" not in str(err.value)


def test_numpy_engine_and_import_anonlab_do_not_import_dask(tmp_path: Path) -> None:
    code = (
        "import sys, anonlab, anonlab.engine\n"
        "from anonlab.engine import open_engine, open_table\n"
        "import pandas as pd\n"
        "e = open_engine('numpy')\n"
        "e.frequency_set(pd.DataFrame({'a': ['x', 'y']}), ['a'])\n"
        "print([m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


# ---------------------------------------------------------------------------
# A worker killed in the middle
# ---------------------------------------------------------------------------


def slow_partition(i: int, marks: str) -> pd.DataFrame:
    """Partition ``i`` of Adult, made slowly; each run leaves a mark file in ``marks``."""
    frame = read_table(ADULT / "adult.csv", delimiter=";")
    time.sleep(0.4)
    (Path(marks) / f"{i}-{time.monotonic_ns()}").touch()
    return frame.iloc[i * 2600 : (i + 1) * 2600].reset_index(drop=True)


def test_a_worker_killed_in_the_middle_changes_nothing(
    dask_engine: EngineBase,
    adult: pd.DataFrame,
    adult_hierarchies: dict[str, Hierarchy],
    tmp_path: Path,
) -> None:
    """Dask recomputes the lost partitions: the frequency set is the same."""
    dd = pytest.importorskip("dask.dataframe")
    cloudpickle = pytest.importorskip("cloudpickle")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    client = getattr(dask_engine, "client")  # noqa: B009 -- DaskEngine's attribute
    partitions = 12
    meta = adult.iloc[:0]
    lazy = dd.from_map(
        functools.partial(slow_partition, marks=str(tmp_path)),
        list(range(partitions)),
        meta=meta,
        enforce_metadata=False,
    )
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["base"] = dask_engine.frequency_set(lazy, QIS, ["salary-class"])
        except BaseException as exc:  # pragma: no cover - shown by the assert below
            result["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 60
    while len(list(tmp_path.iterdir())) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = client.run(os.getpid)
    victim = sorted(pids.values())[0]
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    os.kill(victim, signal.SIGKILL)
    thread.join(timeout=120)
    assert "error" not in result, result.get("error")
    ds, fe = _in_memory(adult, QIS, ["salary-class"], adult_hierarchies)
    _assert_same_base(result["base"], ds, fe, ["salary-class"])
    runs = len(list(tmp_path.iterdir()))
    assert runs > partitions  # partitions whose results died with the worker ran again
    client.wait_for_workers(2, timeout=60)


def test_staged_folders_of_killed_runs_are_removed(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    first = StagedFolder(tmp_path / "first")
    name = first.path.name  # this host's spelling of a staged folder
    first.discard()
    stale = tmp_path / name.replace(f"-{os.getpid()}-", f"-{dead}-")
    stale.mkdir()
    (stale / "part-00000.parquet").write_bytes(b"half")
    staged = StagedFolder(tmp_path / "release")
    assert not stale.exists() and staged.path.exists()
    staged.discard()
    assert list(tmp_path.iterdir()) == []
