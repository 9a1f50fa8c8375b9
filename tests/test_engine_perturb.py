"""``perturb`` and ``invert`` on the engines: the in-memory release, as partitioned Parquet.

The bundled perturbation example (``data/sdc/Tarragona.csv``, 834 records,
13 numeric columns) is perturbed in memory (the numpy path, a file release)
and through each engine (a folder release): on the NumPy engine, and on a
module-wide 2-worker Dask ``LocalCluster`` of processes with a 1 GB memory
limit that every run joins by its scheduler address. The input is given as
the CSV file, as a Parquet folder of uneven parts and as a Dask DataFrame of
several partitions. Releases, keys and restored tables are compared value by
value, rows ordered as the input's (the parts in order, then by row).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.engine import open_engine, open_table
from anonlab.engine.base import AffineRows
from anonlab.errors import AnonlabError
from anonlab.io import read_table
from anonlab.perturbation import RecoverableReleaseWarning
from anonlab.perturbation.pieces import map_rows, sample_findings, written_sample
from anonlab.runs.perturb import InvertSettings, PerturbSettings, run_invert, run_perturb
from anonlab.staging import StagedFolder
from engines import write_parts

REPO = Path(__file__).resolve().parents[1]
TARRAGONA = REPO / "data" / "sdc" / "Tarragona.csv"
TOL = 1e-12
#: Tarragona's 13 columns: rbt rotates its odd one twice; gdp's noise (0.1) comes from the
#: noise block of rows 0..65,535, which the parts of :func:`parts` enter at rows 100, 101, 500
Method = Literal["obt", "rbt", "rotation", "gdp"]
METHODS: tuple[Method, ...] = ("obt", "rotation", "rbt", "gdp")
pytestmark = pytest.mark.filterwarnings("ignore::anonlab.perturbation.RecoverableReleaseWarning")


@pytest.fixture
def cluster(dask_scheduler: str) -> str:
    """The scheduler address of the session's 2-worker LocalCluster (processes, 1 GB each;
    conftest)."""
    return dask_scheduler


@pytest.fixture(scope="module")
def original() -> pd.DataFrame:
    return pd.read_csv(TARRAGONA)


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory, original: pd.DataFrame) -> Path:
    """Tarragona as a Parquet folder of four uneven parts (the last in two row groups)."""
    return write_parts(
        original,
        tmp_path_factory.mktemp("parts") / "tarragona",
        [0, 100, 101, 500, len(original)],
        row_group_size=200,
    )


@pytest.fixture(scope="module")
def in_memory(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The numpy path's release (a Parquet file) and key of each engine method, seed 7."""
    root = tmp_path_factory.mktemp("numpy")
    out: dict[str, dict[str, Any]] = {}
    for method in METHODS:
        settings = PerturbSettings(
            input=str(TARRAGONA),
            method=method,
            seed=7,
            output=str(root / f"{method}.parquet"),
            key=str(root / f"{method}.json"),
        )
        run_perturb(settings)
        out[method] = {
            "release": pd.read_parquet(root / f"{method}.parquet"),
            "key": json.loads((root / f"{method}.json").read_text()),
        }
    return out


def _engine_settings(engine: str, cluster: str | None) -> dict[str, Any]:
    if engine == "numpy":
        return {}
    return {"engine": "dask", "scheduler": cluster}


def _same_release(got: pd.DataFrame, want: pd.DataFrame) -> None:
    """Same columns; the same values to 1e-12 in row order and after sorting the rows."""
    assert list(got.columns) == list(want.columns)
    a, b = got.to_numpy(dtype=np.float64), want.to_numpy(dtype=np.float64)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=0, atol=TOL * max(1.0, float(np.abs(b).max())))
    order_a, order_b = np.lexsort(a.T[::-1]), np.lexsort(b.T[::-1])
    np.testing.assert_allclose(a[order_a], b[order_b], rtol=0, atol=1e-9)


def _same_key(got: dict[str, Any], want: dict[str, Any]) -> None:
    for name in ("method", "columns", "integer", "records", "blocks", "translation", "noise"):
        assert got[name] == want[name], name
    for name in ("means", "stds"):
        np.testing.assert_allclose(got[name], want[name], rtol=TOL)
    for name in ("means", "stds"):
        np.testing.assert_allclose(
            got["release_fingerprint"][name], want["release_fingerprint"][name], rtol=0, atol=1e-12
        )


@pytest.mark.parametrize("engine", ["numpy", "dask"])
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("source", ["csv", "parts"])
def test_release_equals_the_in_memory_one(
    engine: str,
    method: str,
    source: str,
    cluster: str,
    parts: Path,
    tmp_path: Path,
    in_memory: dict[str, dict[str, Any]],
) -> None:
    given = str(TARRAGONA) if source == "csv" else str(parts)
    settings = PerturbSettings(
        input=given,
        method=method,  # type: ignore[arg-type]
        seed=7,
        output=str(tmp_path / "release") + "/",
        key=str(tmp_path / "key.json"),
        report=str(tmp_path / "report.json"),
        **_engine_settings(engine, cluster),
    )
    result = run_perturb(settings)
    written = sorted(p.name for p in (tmp_path / "release").iterdir())
    assert written == [f"part-{i:05d}.parquet" for i in range(len(written))]
    assert len(written) == (1 if source == "csv" else 4)
    _same_release(pd.read_parquet(tmp_path / "release"), in_memory[method]["release"])
    _same_key(json.loads((tmp_path / "key.json").read_text()), in_memory[method]["key"])
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verified"] is True and report["records"] == 834
    assert report["engine"] == {"name": engine, "parts": len(written), "checked_records": 834}
    assert report["parameters"]["engine"] == ("dask" if engine == "dask" else "numpy")
    assert "attacks" in report and "risk" in report and "seed" not in report["parameters"]
    assert result.release is None


def test_dask_dataframe_input(
    cluster: str, original: pd.DataFrame, tmp_path: Path, in_memory: dict[str, dict[str, Any]]
) -> None:
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(original, npartitions=3)
    run_perturb(
        PerturbSettings(
            input=frame,
            method="obt",
            seed=7,
            output=str(tmp_path / "release") + "/",
            key=str(tmp_path / "key.json"),
            engine="dask",
            scheduler=cluster,
        )
    )
    assert len(list((tmp_path / "release").iterdir())) == 3
    _same_release(pd.read_parquet(tmp_path / "release"), in_memory["obt"]["release"])


@pytest.mark.parametrize("engine", ["numpy", "dask"])
@pytest.mark.parametrize("method", ["obt", "gdp"])
def test_invert_restores_the_input(
    engine: str, method: Method, cluster: str, parts: Path, tmp_path: Path, original: pd.DataFrame
) -> None:
    options = _engine_settings(engine, cluster)
    run_perturb(
        PerturbSettings(
            input=str(parts),
            method=method,
            seed=3,
            noise=0.5,
            output=str(tmp_path / "release") + "/",
            key=str(tmp_path / "key.json"),
            **options,
        )
    )
    result = run_invert(
        InvertSettings(
            input=str(tmp_path / "release"),
            key=str(tmp_path / "key.json"),
            output=str(tmp_path / "restored") + "/",
            **options,
        )
    )
    restored = pd.read_parquet(tmp_path / "restored")
    assert list(restored.columns) == list(original.columns)
    assert all(restored.dtypes == np.int64)  # integer columns rounded back, as in memory
    assert (restored.to_numpy() == original.to_numpy()).all()
    assert result.report["verified"] and result.report["engine"]["checked_records"] == 834


def test_sampled_check_on_a_large_release(
    cluster: str,
    parts: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    original: pd.DataFrame,
    in_memory: dict[str, dict[str, Any]],
) -> None:
    """Above the in-memory limit the release and the restored table are checked on a sample."""
    from anonlab.perturbation import pieces as perturb_pieces
    from anonlab.runs import perturb as perturb_run

    monkeypatch.setattr(perturb_run, "IN_MEMORY_ROWS", 100)
    monkeypatch.setattr(perturb_pieces, "SAMPLE_ROWS", 60)
    options: dict[str, Any] = {"engine": "dask", "scheduler": cluster}
    run_perturb(
        PerturbSettings(
            input=str(parts),
            method="obt",
            seed=7,
            attack_records=40,
            output=str(tmp_path / "release") + "/",
            key=str(tmp_path / "key.json"),
            report=str(tmp_path / "report.json"),
            **options,
        )
    )
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["records"] == 834 and report["verified"]
    assert report["sample_records"] == 15 + 1 + 15 + 15  # 60 rows asked: 15 a part
    assert report["engine"]["checked_records"] == report["sample_records"]
    _same_release(pd.read_parquet(tmp_path / "release"), in_memory["obt"]["release"])
    result = run_invert(
        InvertSettings(
            input=str(tmp_path / "release"),
            key=str(tmp_path / "key.json"),
            output=str(tmp_path / "restored") + "/",
            **options,
        )
    )
    assert result.report["engine"]["checked_records"] == 15 + 1 + 15 + 15
    assert (pd.read_parquet(tmp_path / "restored").to_numpy() == original.to_numpy()).all()


def test_sampled_check_of_a_gdp_release(
    cluster: str,
    parts: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    original: pd.DataFrame,
    in_memory: dict[str, dict[str, Any]],
) -> None:
    """A large gdp release is checked on its sample with the noise at the sampled rows (no
    distances: the noise moves them); a release with the noise of other rows is refused."""
    from anonlab.perturbation import pieces as perturb_pieces
    from anonlab.runs import perturb as perturb_run

    monkeypatch.setattr(perturb_run, "IN_MEMORY_ROWS", 100)
    monkeypatch.setattr(perturb_pieces, "SAMPLE_ROWS", 60)
    options: dict[str, Any] = {"engine": "dask", "scheduler": cluster}
    run_perturb(
        PerturbSettings(
            input=str(parts),
            method="gdp",
            seed=7,
            attack_records=40,
            output=str(tmp_path / "release") + "/",
            key=str(tmp_path / "key.json"),
            **options,
        )
    )
    release = pd.read_parquet(tmp_path / "release")
    _same_release(release, in_memory["gdp"]["release"])
    result = run_invert(
        InvertSettings(
            input=str(tmp_path / "release"),
            key=str(tmp_path / "key.json"),
            output=str(tmp_path / "restored") + "/",
            **options,
        )
    )
    assert result.report["engine"]["checked_records"] == 15 + 1 + 15 + 15
    assert (pd.read_parquet(tmp_path / "restored").to_numpy() == original.to_numpy()).all()
    key = json.loads((tmp_path / "key.json").read_text())
    x, y = original.to_numpy(dtype=np.float64), release.to_numpy(dtype=np.float64)
    rows = np.array([0, 99, 100, 400, 833])
    columns = list(original.columns)
    assert sample_findings(x[rows], y[rows], x.std(axis=0), key, columns, rows) == []
    shifted = sample_findings(x[rows], y[rows], x.std(axis=0), key, columns, rows + 1)
    assert "undoing the release with the key gives" in shifted[0]


def test_key_noise_at_sampled_rows_is_the_added_noise() -> None:
    """The sample check's noise, drawn from the key's JSON at global rows in several blocks,
    is the noise the release got; an old key's single stream is not regenerated there."""
    from anonlab.perturbation.key import NOISE_BLOCK, add_noise
    from anonlab.perturbation.pieces import key_noise

    whole = np.zeros((2 * NOISE_BLOCK + 10, 3))
    add_noise(whole, 123, 0.2, sign=0.0, blocked=True)
    rows = np.array([0, 5, NOISE_BLOCK - 1, NOISE_BLOCK, 2 * NOISE_BLOCK + 9])
    noise = {"scale": 0.2, "seed": 123, "stream": "blocked"}
    np.testing.assert_array_equal(key_noise(noise, rows, 3), whole[rows])
    assert not key_noise({"scale": 0.0, "seed": None}, rows, 3).any()
    with pytest.raises(ValueError, match="one stream"):
        key_noise({"scale": 0.2, "seed": 123}, rows, 3)


def test_an_old_gdp_key_inverts_in_memory_and_is_refused_on_the_engine(tmp_path: Path) -> None:
    """A gdp key written before the blocked noise (one stream, no ``noise.stream``) still
    restores its release in memory; the engines, which draw the noise per piece, refuse it.
    The two streams agree on the first block (``default_rng([s, 0])`` is ``default_rng(s)``),
    so the table has more rows than one block."""
    from dataclasses import replace

    from anonlab.perturbation import invert, perturb
    from anonlab.perturbation.key import NOISE_BLOCK, PerturbationKey, add_noise, fingerprint

    rng = np.random.default_rng(8)
    original = pd.DataFrame(
        rng.integers(-5_000, 5_000, (NOISE_BLOCK + 900, 3)), columns=["a", "b", "c"]
    )
    p = perturb(original, method="gdp", seed=11, noise=0.3, known=(2,))
    assert p.key.to_dict()["noise"]["stream"] == "blocked"
    assert p.key.translation is not None and p.key.noise_seed is not None
    released = p.standardized @ p.key.full_matrix().T + p.key.translation
    add_noise(released, p.key.noise_seed, 0.3)  # the single stream of old keys
    assert np.array_equal(released[:NOISE_BLOCK], p.released[:NOISE_BLOCK])
    assert not np.allclose(released[NOISE_BLOCK:], p.released[NOISE_BLOCK:])
    means, stds = fingerprint(released)
    old = replace(p.key, noise_stream="single", release_means=means, release_stds=stds)
    data = old.to_dict()
    assert "stream" not in data["noise"]
    release = pd.DataFrame(released, columns=original.columns)
    restored = invert(release, PerturbationKey.from_dict(data))
    assert (restored.to_numpy() == original.to_numpy()).all()
    blocked = invert(release, replace(old, noise_stream="blocked"))
    assert (blocked.to_numpy()[NOISE_BLOCK:] != original.to_numpy()[NOISE_BLOCK:]).any()
    (tmp_path / "key.json").write_text(json.dumps(data))
    release.to_parquet(tmp_path / "release.parquet")
    with pytest.raises(AnonlabError, match="noise is one stream over all records"):
        run_invert(
            InvertSettings(
                input=str(tmp_path / "release.parquet"),
                key=str(tmp_path / "key.json"),
                output=str(tmp_path / "restored") + "/",
            )
        )
    assert not (tmp_path / "restored").exists()


def _sampled(
    engine: str, cluster: str, parts: Path, folder: Path
) -> tuple[dict[int, list[int]], NDArray[np.float64], NDArray[np.float64], Any]:
    """Rows of ``parts`` mapped by a permutation with signs on ``engine``: the sampled
    positions, input rows, written rows read back, and the moments."""
    table = open_table(parts)
    opened = open_engine(engine, scheduler=cluster if engine == "dask" else None, batch_rows=150)
    try:
        moments = opened.moments(table, ["SALES", "LABOR.COSTS", "NET.PROFIT"])
        staged = StagedFolder(folder)
        mapped = map_rows(
            opened,
            table,
            list(moments.columns),
            list(moments.columns),
            AffineRows(moments.mean, moments.std, ROTATION),
            staged,
            sample_rows=80,
        )
        sample = written_sample(opened, staged.path, mapped)
        staged.discard()
    finally:
        opened.close()
    positions = {i: p.tolist() for i, p in mapped.positions.items()}
    return positions, mapped.sample, sample.to_numpy(dtype=np.float64), moments


ROTATION = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]])


def test_sample_is_the_same_on_both_engines_and_finds_faults(
    cluster: str, parts: Path, tmp_path: Path
) -> None:
    """The sampled rows depend on the pieces only; the check finds a wrong release."""
    positions, x, y, moments = _sampled("numpy", cluster, parts, tmp_path / "a")
    on_dask = _sampled("dask", cluster, parts, tmp_path / "b")
    assert on_dask[0] == positions
    np.testing.assert_array_equal(on_dask[1], x)
    np.testing.assert_array_equal(on_dask[2], y)
    assert [len(positions[i]) for i in sorted(positions)] == [20, 1, 20, 20]  # 80 over 4 parts
    assert all(p == sorted(set(p)) for p in positions.values())
    np.testing.assert_allclose(y, ((x - moments.mean) / moments.std) @ ROTATION.T, atol=1e-12)
    columns = list(moments.columns)
    assert sample_findings(x, y, moments.std, None, columns) == []
    swapped = y.copy()
    swapped[[3, 7]] = swapped[[7, 3]]  # two rows written in each other's place
    assert "distance between records" in sample_findings(x, swapped, moments.std, None, columns)[0]
    scaled = y * np.array([1.0, 1.0 + 1e-6, 1.0])  # a matrix that is not quite orthogonal
    assert sample_findings(x, scaled, moments.std, None, columns)


def test_sample_positions_are_deterministic(parts: Path, tmp_path: Path) -> None:
    """Two runs sample the same rows (the sample is part of the check, seeded by piece)."""
    table = open_table(parts)
    found = []
    for run in range(2):
        engine = open_engine("numpy", batch_rows=150)
        staged = StagedFolder(tmp_path / f"out{run}")
        mapped = map_rows(
            engine,
            table,
            ["SALES", "NET.PROFIT"],
            ["SALES", "NET.PROFIT"],
            AffineRows(np.zeros(2), np.ones(2), np.eye(2)),
            staged,
            sample_rows=40,
        )
        found.append({i: p.tolist() for i, p in mapped.positions.items()})
        staged.discard()
    assert found[0] == found[1]


# ---------------------------------------------------------------------------
# Bad input: one line, exit 2, nothing written
# ---------------------------------------------------------------------------


def _cli(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--output-file"], "output: engine 'dask' writes the release as a folder"),
        (["--workers", "2", "--no-engine"], "workers applies to engine 'dask' only"),
        (["--memory-limit", "lots"], "--memory-limit 'lots' is not an amount of memory"),
    ],
)
def test_bad_input(extra: list[str], says: str, tmp_path: Path, cluster: str) -> None:
    output = str(tmp_path / "release") + "/"
    args = [
        "perturb",
        str(TARRAGONA),
        "--seed",
        "1",
        "--key",
        str(tmp_path / "key.json"),
        "--report",
        str(tmp_path / "report.json"),
    ]
    engine = ["--engine", "dask", "--scheduler", cluster]
    if "--output-file" in extra:
        output, extra = str(tmp_path / "release.parquet"), []
    if "--no-engine" in extra:
        extra, engine = [e for e in extra if e != "--no-engine"], []
    code, text = _cli([*args, "--output", output, *engine, *extra])
    assert code == 2, text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and says in lines[0], text
    assert list(tmp_path.iterdir()) == []


def test_failed_verification_writes_nothing(
    tmp_path: Path, cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anonlab.runs.perturb as runs

    def refuse(*args: Any) -> None:
        raise AnonlabError("verification failed, nothing written: planted")

    monkeypatch.setattr(runs, "_verify", refuse)
    with pytest.raises(AnonlabError, match="planted"):
        run_perturb(
            PerturbSettings(
                input=str(TARRAGONA),
                method="obt",
                seed=1,
                output=str(tmp_path / "release") + "/",
                key=str(tmp_path / "key.json"),
                engine="dask",
                scheduler=cluster,
            )
        )
    assert list(tmp_path.iterdir()) == []


def test_invert_refuses_a_release_of_another_key(tmp_path: Path, parts: Path) -> None:
    run_perturb(
        PerturbSettings(
            input=str(parts),
            method="rotation",
            seed=1,
            output=str(tmp_path / "a") + "/",
            key=str(tmp_path / "a.json"),
        )
    )
    run_perturb(
        PerturbSettings(
            input=str(parts),
            method="rotation",
            seed=2,
            output=str(tmp_path / "b") + "/",
            key=str(tmp_path / "b.json"),
        )
    )
    with pytest.raises(AnonlabError, match="the key does not match"):
        run_invert(
            InvertSettings(
                input=str(tmp_path / "a"),
                key=str(tmp_path / "b.json"),
                output=str(tmp_path / "restored") + "/",
            )
        )
    assert not (tmp_path / "restored").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_release_is_read_back_by_the_one_reader(tmp_path: Path, parts: Path) -> None:
    """The folder release reads back through anonlab's reader (what any user does)."""
    with pytest.warns(RecoverableReleaseWarning):
        run_perturb(
            PerturbSettings(
                input=str(parts),
                method="obt",
                seed=5,
                output=str(tmp_path / "r") + "/",
                key=str(tmp_path / "r.json"),
            )
        )
    frame = read_table(tmp_path / "r")
    assert frame.shape == (834, 13)


@pytest.mark.parametrize("engine", ["numpy", "dask"])
def test_roles_on_the_engine(
    engine: str, cluster: str, original: pd.DataFrame, tmp_path: Path
) -> None:
    """Identifying columns are dropped, insensitive ones pass through as their text, the key
    names the dropped ones: as in memory."""
    frame = original[["SALES", "LABOR.COSTS", "NET.PROFIT"]].copy()
    frame.insert(0, "name", [f"firm {i}" for i in range(len(frame))])
    frame["town"] = ["Reus" if i % 3 else "Tarragona" for i in range(len(frame))]
    source = tmp_path / "firms.csv"
    frame.to_csv(source, index=False)
    common: dict[str, Any] = {
        "input": str(source),
        "method": "rotation",
        "seed": 4,
        "identifying": ["name"],
        "insensitive": ["town"],
    }
    run_perturb(
        PerturbSettings(
            **common, output=str(tmp_path / "mem.parquet"), key=str(tmp_path / "mem.json")
        )
    )
    run_perturb(
        PerturbSettings(
            **common,
            output=str(tmp_path / "rel") + "/",
            key=str(tmp_path / "rel.json"),
            report=str(tmp_path / "r.json"),
            **_engine_settings(engine, cluster),
        )
    )
    got, want = pd.read_parquet(tmp_path / "rel"), pd.read_parquet(tmp_path / "mem.parquet")
    assert list(got.columns) == ["SALES", "LABOR.COSTS", "NET.PROFIT", "town"]
    assert got["town"].tolist() == frame["town"].tolist()
    _same_release(got.drop(columns="town"), want.drop(columns="town"))
    key = json.loads((tmp_path / "rel.json").read_text())
    assert key["identifying"] == ["name"]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["roles"]["name"] == "identifying" and report["released_unchanged"] == ["town"]


def test_toml_keys(tmp_path: Path, cluster: str, in_memory: dict[str, dict[str, Any]]) -> None:
    """``engine``, ``scheduler``, ``memory_limit`` in a config; a folder output keeps its ``/``
    (relative to the config's folder)."""
    config = tmp_path / "perturb.toml"
    config.write_text(
        f'input = "{TARRAGONA}"\nmethod = "obt"\nseed = 7\nengine = "dask"\n'
        f'scheduler = "{cluster}"\nmemory_limit = "1GB"\noutput = "rel/"\n'
        'key = "key.json"\n'
    )
    settings = PerturbSettings.load(config)
    assert (settings.engine, settings.scheduler, settings.memory_limit) == ("dask", cluster, "1GB")
    run_perturb(settings)
    _same_release(pd.read_parquet(tmp_path / "rel"), in_memory["obt"]["release"])


# ---------------------------------------------------------------------------
# Inputs the engines do not stream: read whole by the one reader, then cut into pieces
# ---------------------------------------------------------------------------

PEOPLE_ROLES: dict[str, Any] = {
    "columns": "age,income",
    "identifying": "name",
    "sensitive": "diagnosis",
    "insensitive": "sex,region",
    "seed": 7,
}


@pytest.mark.parametrize("engine", ["numpy", "dask"])
@pytest.mark.parametrize(
    ("source", "read"),
    [
        (f"sqlite:///{REPO / 'examples' / 'people.db'}", {"table": "people"}),
        (str(REPO / "examples" / "survey.xlsx"), {"sheet": "wave2"}),
    ],
    ids=["database", "excel"],
)
def test_database_and_excel_input_on_the_engines(
    engine: str, source: str, read: dict[str, Any], cluster: str, tmp_path: Path
) -> None:
    """A database table or an Excel sheet, which only the one reader reads, perturbed into a
    folder on either engine equals the in-memory release, and inverts back to the input."""
    memory = run_perturb(
        PerturbSettings(
            input=source,
            **read,
            **PEOPLE_ROLES,
            output=str(tmp_path / "memory.parquet"),
            key=str(tmp_path / "memory.json"),
        )
    )
    options = _engine_settings(engine, cluster)
    result = run_perturb(
        PerturbSettings(
            input=source,
            **read,
            **PEOPLE_ROLES,
            **options,
            output=str(tmp_path / "release") + "/",
            key=str(tmp_path / "key.json"),
        )
    )
    assert result.report["verified"] and result.report["engine"]["name"] == engine
    assert result.report["records"] == memory.report["records"] == len(read_table(source, **read))
    release = pd.read_parquet(tmp_path / "release")
    want = pd.read_parquet(tmp_path / "memory.parquet")
    assert release.drop(columns=["age", "income"]).equals(want.drop(columns=["age", "income"]))
    _same_release(release[["age", "income"]], want[["age", "income"]])
    _same_key(
        json.loads((tmp_path / "key.json").read_text()),
        json.loads((tmp_path / "memory.json").read_text()),
    )
    restored = run_invert(
        InvertSettings(
            input=str(tmp_path / "release"),
            key=str(tmp_path / "key.json"),
            output=str(tmp_path / "restored") + "/",
            **options,
        )
    )
    assert restored.report["verified"]
    back = pd.read_parquet(tmp_path / "restored")
    original = read_table(source, **read)
    assert back["age"].tolist() == original["age"].astype(int).tolist()
    assert back["income"].tolist() == original["income"].astype(int).tolist()


def test_a_sheet_of_a_csv_input_is_refused_alike_in_memory_and_on_the_engine(
    tmp_path: Path,
) -> None:
    """``sheet`` with a CSV input: the one reader's refusal, word for word, on both paths."""
    said = []
    for output in ("memory.csv", "release/"):
        with pytest.raises(AnonlabError) as caught:
            run_perturb(
                PerturbSettings(
                    input=str(TARRAGONA),
                    sheet="wave1",
                    seed=1,
                    output=str(tmp_path / output),
                    key=str(tmp_path / "key.json"),
                )
            )
        said.append(str(caught.value))
    assert said[0] == said[1]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("method", METHODS)
def test_one_piece_on_the_numpy_engine_is_the_in_memory_run_bit_for_bit(
    method: Method, tmp_path: Path, in_memory: dict[str, dict[str, Any]]
) -> None:
    """Tarragona is one piece: the NumPy engine's folder release and its key are the in-memory
    ones to the last bit (the same moments, transform and fingerprint arithmetic)."""
    run_perturb(
        PerturbSettings(
            input=str(TARRAGONA),
            method=method,
            seed=7,
            output=str(tmp_path / "release") + "/",
            key=str(tmp_path / "key.json"),
        )
    )
    release = pd.read_parquet(tmp_path / "release")
    assert release.equals(in_memory[method]["release"])
    assert json.loads((tmp_path / "key.json").read_text()) == in_memory[method]["key"]


@pytest.mark.parametrize(
    ("cell", "says"),
    [
        ("x", "column 'c' is not numeric (record 2: 'x'): choose numeric columns"),
        ("", "column 'c' has a missing or infinite value (record 2): fill or drop"),
    ],
    ids=["text", "missing"],
)
def test_a_bad_value_gets_the_in_memory_line_on_the_engine(
    cell: str, says: str, tmp_path: Path
) -> None:
    """A value that is no finite number: word for word the in-memory line on one piece, from
    the CLI and from Python; in a later part of a folder the line says where it counts from."""
    table = tmp_path / "in.csv"
    table.write_text(f"a,b,c\n1,2,3\n3,4,{cell}\n6,7,8\n", encoding="utf-8")
    said = []
    for output in ("memory.csv", "release/"):
        code, text = _cli(
            [
                "perturb",
                str(table),
                "--seed",
                "1",
                "--key",
                str(tmp_path / "key.json"),
                "--output",
                str(tmp_path / output),
            ]
        )
        lines = [line for line in text.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1, text
        with pytest.raises(AnonlabError) as caught:
            run_perturb(
                PerturbSettings(
                    input=str(table),
                    seed=1,
                    key=str(tmp_path / "key.json"),
                    output=str(tmp_path / output),
                )
            )
        assert lines[0] == f"Error: {caught.value}"
        said.append(str(caught.value))
    assert said[0] == said[1] and says in said[0]
    frame = pd.DataFrame(
        {"a": [1.0, 2, 3, 4], "b": [5.0, 6, 8, 7], "c": ["1", "2", "3", cell or None]}
    )
    parts = write_parts(frame, tmp_path / "parts", [0, 2, 4])
    with pytest.raises(AnonlabError, match=r"\(record 2.*counted from row 1 of .*part"):
        run_perturb(
            PerturbSettings(
                input=str(parts),
                seed=1,
                key=str(tmp_path / "key.json"),
                output=str(tmp_path / "release") + "/",
            )
        )
    assert not (tmp_path / "release").exists() and not (tmp_path / "key.json").exists()


@pytest.mark.parametrize("kind", ["csv", "parquet", "folder", "frame"])
def test_a_table_without_rows_gets_the_in_memory_line_on_the_engine(
    kind: str, tmp_path: Path
) -> None:
    """No rows: the in-memory line (the reader's, the table model's for a DataFrame) on the
    engine too, nothing written."""
    empty = pd.DataFrame({"a": pd.Series([], dtype=float), "b": pd.Series([], dtype=float)})
    source: Any = empty
    if kind == "csv":
        source = tmp_path / "in.csv"
        source.write_text("a,b\n", encoding="utf-8")
    elif kind == "parquet":
        source = tmp_path / "in.parquet"
        empty.to_parquet(source)
    elif kind == "folder":
        source = write_parts(empty, tmp_path / "in", [0, 0])
    said = []
    for output in ("memory.csv", "release/"):
        with pytest.raises(AnonlabError) as caught:
            run_perturb(
                PerturbSettings(
                    input=source,
                    seed=1,
                    key=str(tmp_path / "key.json"),
                    output=str(tmp_path / output),
                )
            )
        said.append(str(caught.value))
    want = {
        "csv": "has a header but no rows",
        "parquet": "has no rows",
        "folder": "has no rows",
        "frame": "the table has no records",
    }[kind]
    assert said[0] == said[1] and f"{want}: give at least one record" in said[0]
    assert not (tmp_path / "key.json").exists() and not (tmp_path / "release").exists()
