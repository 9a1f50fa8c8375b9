"""Inputs and outputs named by URL (issue #23): read and written through fsspec.

The tests need no network: fsspec's in-process ``memory://`` filesystem stands for an
object store in this process (in memory and on the NumPy engine), and ``file://`` URLs
for the Dask engine, whose worker processes do not share this process's memory
filesystem. Every run from a URL must give the release the same run gives from the local
file; a URL that is missing, or whose filesystem's package is not installed (``s3fs``,
``gcsfs``, ``aiohttp`` are not, here), is one line ``Error: ...`` and writes nothing.
"""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.engine import open_table
from anonlab.engine.table import ParquetPiece
from anonlab.errors import AnonlabError, AnonlabWarning, ReleaseRiskWarning
from anonlab.io import read_table
from anonlab.paths import is_url
from anonlab.runs.apply import run_apply
from anonlab.runs.generalize import run_generalize
from anonlab.runs.generalize_settings import ApplySettings, GeneralizeSettings
from anonlab.runs.microaggregate import MicroaggregateSettings, run_microaggregate
from anonlab.runs.perturb import PerturbSettings, run_perturb
from anonlab.runs.risk import run_risk
from anonlab.settings import resolve_paths

fsspec = pytest.importorskip("fsspec")

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO / "data" / "adult"
TARRAGONA = REPO / "data" / "sdc" / "Tarragona.csv"
QIS = ("age", "sex", "race")
ROWS = 3_000  # Adult rows the generalization tests use (its first ones)
MODES = ("memory", "numpy", "dask")


@pytest.fixture
def memfs() -> Iterator[tuple[Any, str]]:
    """The memory filesystem and a fresh folder on it (``memory://anonlab-<hex>``), removed
    after the test."""
    fs = fsspec.filesystem("memory")
    root = f"/anonlab-{uuid.uuid4().hex[:12]}"
    fs.makedirs(root, exist_ok=True)
    yield fs, root
    if fs.exists(root):
        fs.rm(root, recursive=True)


@pytest.fixture(scope="module")
def adult(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first :data:`ROWS` rows of Adult as a local CSV (``;`` as the file has it)."""
    path = tmp_path_factory.mktemp("adult") / "adult.csv"
    lines = (ADULT / "adult.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[: ROWS + 1]), encoding="utf-8")
    return path


def _put(fs: Any, root: str, local: Path, kind: str) -> str:
    """``local`` (a CSV) put on the memory filesystem as ``kind`` (``csv``, or ``parquet``
    written from the table read as text); its URL."""
    if kind == "csv":
        fs.pipe(f"{root}/{local.name}", local.read_bytes())
        return f"memory://{root}/{local.name}"
    name = local.with_suffix(".parquet").name
    with fs.open(f"{root}/{name}", "wb") as fh:
        read_table(local).to_parquet(fh, index=False)
    return f"memory://{root}/{name}"


def _local(local: Path, kind: str, folder: Path) -> Path:
    """``local`` as ``kind`` in ``folder``: itself (``csv``) or a Parquet copy."""
    if kind == "csv":
        return local
    path = folder / local.with_suffix(".parquet").name
    read_table(local).to_parquet(path, index=False)
    return path


def _file_url(path: Path) -> str:
    return f"file://{path}"


def _source_and_output(
    mode: str, kind: str, local: Path, fs: Any, root: str, tmp_path: Path, name: str
) -> tuple[str, str | None]:
    """The input URL and the release output of one mode: in memory (no output), on the NumPy
    engine (a memory:// folder), on Dask (file:// URLs: the workers are other processes)."""
    if mode == "dask":
        source = _local(local, kind, tmp_path)
        return _file_url(source), _file_url(tmp_path / name) + "/"
    url = _put(fs, root, local, kind)
    return url, (None if mode == "memory" else f"memory://{root}/{name}/")


def _released(output: str | None, result: Any) -> pd.DataFrame:
    """The release a run wrote to ``output`` (read back through the URL), or returned."""
    if output is None:
        released: pd.DataFrame = result.release
        return released.reset_index(drop=True)
    return read_table(output).reset_index(drop=True)


def _engine(mode: str, dask_scheduler: str | None) -> dict[str, Any]:
    if mode == "dask":
        return {"engine": "dask", "scheduler": dask_scheduler}
    return {}


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    assert list(a.columns) == list(b.columns)
    assert a.astype(str).equals(b.astype(str))


@pytest.fixture
def scheduler(request: pytest.FixtureRequest) -> str | None:
    """The shared cluster's address for the ``dask`` mode (started only then)."""
    mode = request.node.callspec.params.get("mode")
    if mode != "dask":
        return None
    address: str = request.getfixturevalue("dask_scheduler")
    return address


# ---------------------------------------------------------------------------
# The same release from a URL as from the local file
# ---------------------------------------------------------------------------


def _generalize(source: str, output: str | None, **extra: Any) -> Any:
    given: dict[str, Any] = {
        "qi": {q: str(ADULT / f"hierarchy_{q}.csv") for q in QIS},
        "sensitive": ["salary-class"],
        "other": "insensitive",
        "k": 5,
        "suppression": 0.02,
    }
    settings = GeneralizeSettings(input=source, output=output, **{**given, **extra})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        return run_generalize(settings)


@pytest.mark.parametrize("kind", ["csv", "parquet"])
@pytest.mark.parametrize("mode", MODES)
def test_generalize_from_a_url_equals_the_local_run(
    mode: str,
    kind: str,
    scheduler: str | None,
    adult: Path,
    memfs: tuple[Any, str],
    tmp_path: Path,
) -> None:
    fs, root = memfs
    engine = _engine(mode, scheduler)
    local = _local(adult, kind, tmp_path)
    expected_out = None if mode == "memory" else f"{tmp_path / 'local'}/"
    expected = _released(expected_out, _generalize(str(local), expected_out, **engine))
    source, output = _source_and_output(mode, kind, adult, fs, root, tmp_path, "release")
    result = _generalize(source, output, **engine)
    _same(_released(output, result), expected)
    assert result.report["inputs"]["data"]["name"] == Path(source).name
    assert result.report["parameters"]["input"] == source  # as given, never resolved


def _perturb(source: str, output: str | None, key: Path, **extra: Any) -> Any:
    settings = PerturbSettings(
        input=source, method="obt", seed=7, output=output, key=str(key), **extra
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnonlabWarning)  # Tarragona's release is recoverable
        return run_perturb(settings)


@pytest.mark.parametrize("kind", ["csv", "parquet"])
@pytest.mark.parametrize("mode", MODES)
def test_perturb_from_a_url_equals_the_local_run(
    mode: str, kind: str, scheduler: str | None, memfs: tuple[Any, str], tmp_path: Path
) -> None:
    fs, root = memfs
    engine = _engine(mode, scheduler)
    local = _local(TARRAGONA, kind, tmp_path)
    local_out = f"{tmp_path / 'local'}/" if mode != "memory" else str(tmp_path / "local.csv")
    _perturb(str(local), local_out, tmp_path / "k1.json", **engine)
    expected = read_table(local_out)
    source, output = _source_and_output(mode, kind, TARRAGONA, fs, root, tmp_path, "release")
    if output is None:  # in memory: the release written to a memory:// file
        output = f"memory://{root}/release.csv"
    _perturb(source, output, tmp_path / "k2.json", **engine)
    _same(read_table(output), expected)
    assert json.loads((tmp_path / "k1.json").read_text()) == json.loads(
        (tmp_path / "k2.json").read_text()
    )


def _microaggregate(source: str, output: str | None, **extra: Any) -> Any:
    settings = MicroaggregateSettings(
        input=source, columns="all-numeric", k=3, variant="scalable", output=output, **extra
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnonlabWarning)
        return run_microaggregate(settings)


@pytest.mark.parametrize("kind", ["csv", "parquet"])
@pytest.mark.parametrize("mode", MODES)
def test_microaggregate_from_a_url_equals_the_local_run(
    mode: str, kind: str, scheduler: str | None, memfs: tuple[Any, str], tmp_path: Path
) -> None:
    fs, root = memfs
    engine = _engine(mode, scheduler)
    local = _local(TARRAGONA, kind, tmp_path)
    expected_out = None if mode == "memory" else f"{tmp_path / 'local'}/"
    expected = _released(expected_out, _microaggregate(str(local), expected_out, **engine))
    source, output = _source_and_output(mode, kind, TARRAGONA, fs, root, tmp_path, "release")
    result = _microaggregate(source, output, **engine)
    _same(_released(output, result), expected)


@pytest.mark.parametrize("kind", ["csv", "parquet"])
@pytest.mark.parametrize("mode", MODES)
def test_risk_from_a_url_equals_the_local_run(
    mode: str,
    kind: str,
    scheduler: str | None,
    adult: Path,
    memfs: tuple[Any, str],
    tmp_path: Path,
) -> None:
    fs, root = memfs
    options: dict[str, Any] = {"qi": list(QIS), "other": "insensitive"}
    if mode == "dask":  # the engine's passes over the pieces, on the workers
        options.update(engine="dask", scheduler=scheduler)
    local = _local(adult, kind, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        expected = run_risk(str(local), **options).report
        source, _ = _source_and_output(mode, kind, adult, fs, root, tmp_path, "unused")
        report = f"memory://{root}/risk.json" if mode != "dask" else None
        got = run_risk(source, report=report, **options).report
    assert got["risk"] == expected["risk"]
    assert got["inputs"]["data"]["sha256"] == expected["inputs"]["data"]["sha256"]
    if report is not None:
        written = json.loads(fs.cat(report.removeprefix("memory://")))
        assert written["risk"] == expected["risk"]
        assert written["parameters"]["report"] == report


@pytest.mark.parametrize("mode", ["memory", "numpy"])
def test_apply_to_a_url_equals_the_local_run(
    mode: str, adult: Path, memfs: tuple[Any, str], tmp_path: Path
) -> None:
    """``apply`` of a local generalization report to a table at a URL, written to a URL."""
    fs, root = memfs
    report = tmp_path / "g.json"
    _generalize(str(adult), None, report=str(report))
    engine: dict[str, Any] = {"engine": "numpy"} if mode == "numpy" else {}
    local_out = f"{tmp_path / 'local'}/" if mode == "numpy" else str(tmp_path / "a.csv")
    url_out = f"memory://{root}/applied/" if mode == "numpy" else f"memory://{root}/a.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        run_apply(
            ApplySettings(report_in=str(report), input=str(adult), output=local_out, **engine)
        )
        source = _put(fs, root, adult, "csv")
        run_apply(ApplySettings(report_in=str(report), input=source, output=url_out, **engine))
    _same(read_table(url_out), read_table(local_out))


def test_evaluate_scores_tables_at_urls(memfs: tuple[Any, str], tmp_path: Path) -> None:
    """``evaluate`` reads the original and the masked table from URLs, writes its report to
    one, and gives the local run's measures."""
    fs, root = memfs
    masked = tmp_path / "masked.csv"
    _microaggregate(str(TARRAGONA), str(masked))
    original_url = _put(fs, root, TARRAGONA, "csv")
    masked_url = _put(fs, root, masked, "csv")
    runner = CliRunner()
    local = runner.invoke(
        app,
        [
            "evaluate",
            str(TARRAGONA),
            str(masked),
            "--columns",
            "all-numeric",
            "--report",
            str(tmp_path / "e.json"),
            "--quiet",
        ],
    )
    assert local.exit_code == 0, local.output
    remote = runner.invoke(
        app,
        [
            "evaluate",
            original_url,
            masked_url,
            "--columns",
            "all-numeric",
            "--report",
            f"memory://{root}/e.json",
            "--quiet",
        ],
    )
    assert remote.exit_code == 0, remote.output
    expected = json.loads((tmp_path / "e.json").read_text(encoding="utf-8"))
    got = json.loads(fs.cat(f"{root}/e.json"))
    assert got["measures"] == expected["measures"]
    assert got["inputs"] == expected["inputs"]


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------


def test_a_parquet_folder_and_a_glob_read_from_urls(memfs: tuple[Any, str]) -> None:
    """Hive ``key=value`` folders become text columns; hidden and ``_`` files are skipped;
    parts come in natural order; the engine's pieces carry the storage options."""
    fs, root = memfs
    frame = pd.DataFrame({"a": ["1", "2"], "b": ["x", "y"]})
    for part, zone in (("part-10", "01"), ("part-2", "02")):
        with fs.open(f"{root}/data/zone={zone}/{part}.parquet", "wb") as fh:
            frame.to_parquet(fh, index=False)
    fs.pipe(f"{root}/data/_SUCCESS", b"")
    fs.pipe(f"{root}/data/.hidden.parquet", b"not parquet")
    whole = read_table(f"memory://{root}/data")
    assert list(whole.columns) == ["a", "b", "zone"]
    assert sorted(whole["zone"]) == ["01", "01", "02", "02"]
    table = open_table(f"memory://{root}/data", storage_options={"skip_instance_cache": True})
    assert table.column_names == ("a", "b", "zone")
    assert [p.describe() for p in table.pieces] == [
        f"Parquet part 'memory://{root}/data/zone=01/part-10.parquet'",
        f"Parquet part 'memory://{root}/data/zone=02/part-2.parquet'",
    ]
    assert all(isinstance(p, ParquetPiece) for p in table.pieces)
    assert {p.storage for p in table.pieces if isinstance(p, ParquetPiece)} == {
        (("skip_instance_cache", True),)
    }
    rows = [b for p in table.pieces for b in p.batches(["zone", "a"], 10)]
    assert [r.column("zone").to_pylist() for r in rows] == [["01", "01"], ["02", "02"]]
    globbed = open_table(f"memory://{root}/data/*/*.parquet")
    assert len(globbed.pieces) == 2


def test_a_csv_url_is_read_in_byte_ranges(memfs: tuple[Any, str]) -> None:
    """A CSV named by URL is cut into byte ranges as a local one is: the same rows."""
    fs, root = memfs
    lines = ["a;b"] + [f"{i};v{i}" for i in range(500)]
    fs.pipe(f"{root}/t.csv", ("\n".join(lines) + "\n").encode())
    table = open_table(f"memory://{root}/t.csv", csv_block=200)
    assert len(table.pieces) > 5
    values = [v for p in table.pieces for b in p.batches(["a"], 64) for v in b["a"].to_pylist()]
    assert values == [str(i) for i in range(500)]


def test_urls_pass_through_settings_and_reports(tmp_path: Path) -> None:
    """A URL in a TOML file is never resolved against its folder (no ``cwd/s3:/...``); a
    local relative path still is."""
    values = {"input": "s3://bucket/data/table.csv", "output": "data/out.csv"}
    resolved = resolve_paths(values, tmp_path, ("input", "output"))
    assert resolved["input"] == "s3://bucket/data/table.csv"
    assert resolved["output"] == str(tmp_path / "data" / "out.csv")
    assert is_url("s3://bucket/x") and is_url("memory://x") and is_url("file:///tmp/x")
    assert not is_url("sqlite:///x.db") and not is_url("postgresql+psycopg://h/db")
    assert not is_url("data/x.csv")


def test_a_toml_file_keeps_its_urls_and_storage_options(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text(
        'input = "s3://bucket/adult.csv"\noutput = "out/release.csv"\nk = 5\n'
        'report = "gs://bucket/report.json"\n'
        "storage_options = { anon = true, endpoint_url = 'http://localhost:9000' }\n"
        "[qi]\nage = 'hierarchy_age.csv'\n",
        encoding="utf-8",
    )
    settings = GeneralizeSettings.load(config)
    assert settings.input == "s3://bucket/adult.csv"
    assert settings.report == "gs://bucket/report.json"
    assert settings.output == str(tmp_path / "out" / "release.csv")
    assert settings.storage_options == {"anon": True, "endpoint_url": "http://localhost:9000"}
    assert "storage_options" not in settings.model_dump()


def test_storage_options_reach_fsspec_and_never_the_report(
    adult: Path, memfs: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every filesystem a run opens gets its storage options (on the driver and in the
    pieces); the report holds none of them."""
    fs, root = memfs
    source = _put(fs, root, adult, "csv")
    seen: list[dict[str, Any]] = []
    real = fsspec.core.url_to_fs

    def recording(url: str, **options: Any) -> Any:
        seen.append(options)
        return real(url, **options)

    monkeypatch.setattr(fsspec.core, "url_to_fs", recording)
    secret = {"token": "secret-token-123"}
    result = _generalize(
        source,
        f"memory://{root}/out/",
        engine="numpy",
        storage_options=secret,
        report=f"memory://{root}/r.json",
    )
    assert seen and all(options == secret for options in seen)
    assert "secret-token-123" not in fs.cat(f"{root}/r.json").decode()
    assert "storage_options" not in result.report["parameters"]


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------


def test_parquet_outputs_to_a_url_are_written_whole(
    adult: Path, memfs: tuple[Any, str], tmp_path: Path
) -> None:
    """A Parquet file, and a folder of parts replacing an earlier one, written to
    memory://, with the report and page beside them; no temporary name is left."""
    fs, root = memfs
    source = _put(fs, root, adult, "csv")
    expected = _released(None, _generalize(str(adult), None))
    _generalize(
        source,
        f"memory://{root}/out/release.parquet",
        report=f"memory://{root}/out/report.json",
        html=f"memory://{root}/out/report.html",
    )
    assert sorted(fs.ls(f"{root}/out", detail=False)) == [
        f"{root}/out/{n}" for n in ("release.parquet", "report.html", "report.json")
    ]
    _same(read_table(f"memory://{root}/out/release.parquet"), expected)
    report = json.loads(fs.cat(f"{root}/out/report.json"))
    assert report["outputs"]["output"] == f"memory://{root}/out/release.parquet"
    folder = f"memory://{root}/parts/"
    for _ in range(2):  # the second run replaces the first's parts
        _generalize(source, folder, engine="numpy")
    assert [Path(p).name for p in fs.find(f"{root}/parts")] == ["part-00000.parquet"]
    _same(read_table(folder), expected)
    assert not [p for p in fs.find(root) if p.endswith(".tmp")]


def test_verify_rechecks_a_release_written_to_a_url(
    adult: Path, memfs: tuple[Any, str], tmp_path: Path
) -> None:
    """``verify`` reads the report, the release and the input from their URLs (the report's
    paths absolute, as a report at a URL stores them) and writes its own report to one."""
    fs, root = memfs
    source = _put(fs, root, adult, "csv")
    report = f"memory://{root}/out/report.json"
    _generalize(source, f"memory://{root}/out/release.parquet", report=report)
    stored = json.loads(fs.cat(report.removeprefix("memory://")))
    assert stored["paths"] == "absolute"
    assert stored["parameters"]["qi"]["age"] == str(ADULT / "hierarchy_age.csv")
    result = CliRunner().invoke(
        app, ["verify", report, "--report", f"memory://{root}/out/verify.json"]
    )
    assert result.exit_code == 0, result.output
    checked = json.loads(fs.cat(f"{root}/out/verify.json"))
    assert checked["ok"] is True
    assert checked["checked_release"] == f"memory://{root}/out/release.parquet"
    assert checked["inputs"]["release"]["name"] == "release.parquet"


def test_an_excel_workbook_at_a_url_is_read_whole_on_an_engine(
    memfs: tuple[Any, str], tmp_path: Path
) -> None:
    """As a local workbook: microaggregate and perturb read it whole, the engine cuts it."""
    fs, root = memfs
    frame = read_table(TARRAGONA)
    with fs.open(f"{root}/t.xlsx", "wb") as fh:
        frame.to_excel(fh, index=False)
    local = tmp_path / "t.xlsx"
    local.write_bytes(fs.cat(f"{root}/t.xlsx"))
    expected = _microaggregate(str(local), f"{tmp_path / 'local'}/", engine="numpy")
    got = _microaggregate(f"memory://{root}/t.xlsx", f"memory://{root}/out/", engine="numpy")
    _same(read_table(f"memory://{root}/out/"), read_table(f"{tmp_path / 'local'}/"))
    assert got.report["measures"] == expected.report["measures"]


def test_an_output_may_not_be_its_input_url(memfs: tuple[Any, str]) -> None:
    fs, root = memfs
    source = _put(fs, root, TARRAGONA, "csv")
    before = fs.cat(source.removeprefix("memory://"))
    with pytest.raises(AnonlabError, match="is also an input"):
        _microaggregate(source, source)
    assert fs.cat(source.removeprefix("memory://")) == before


def test_a_failed_move_keeps_the_earlier_release(
    adult: Path, memfs: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new parts cannot be moved onto the target (one copied, then the store is full):
    the half folder goes, the earlier release, moved aside, comes back, and no temporary
    name is left."""
    from anonlab import urls

    fs, root = memfs
    source = _put(fs, root, adult, "csv")
    folder = f"memory://{root}/parts/"
    _generalize(source, folder, engine="numpy")
    before = {p: fs.cat(p) for p in fs.find(f"{root}/parts")}
    real = urls.move
    onto_target: list[str] = []

    def failing(a: str, b: str, options: Any = None) -> None:
        if ".tmp" in a and ".tmp" not in b:
            onto_target.append(a)
            if len(onto_target) == 1:  # the staged parts onto the target; not the way back
                first = fs.cat(sorted(fs.find(a.removeprefix("memory://")))[0])
                assert first not in before.values()  # another release than the first run's
                fs.pipe(b.removeprefix("memory://") + "/part-00000.parquet", first)
                raise OSError(28, "No space left on device")  # one part copied, then full
        real(a, b, options)

    monkeypatch.setattr(urls, "move", failing)
    with pytest.raises(AnonlabError, match="no space left"):
        _generalize(source, folder, engine="numpy", k=50)
    assert {p: fs.cat(p) for p in fs.find(f"{root}/parts")} == before
    assert not [p for p in fs.find(root) if p.endswith(".tmp") or ".tmp/" in p]


def test_a_killed_workers_half_part_is_not_uploaded(memfs: tuple[Any, str]) -> None:
    """A staged folder's hidden ``.part-*.tmp`` (a killed worker's, its task run again) stays
    behind: only whole parts reach the URL; nothing is left in the local staging."""
    from anonlab.outputs import Outputs

    fs, root = memfs
    with Outputs({"output": f"memory://{root}/rel/"}, folders=("output",)) as outputs:
        staged = outputs.stage_folder("output")
        pd.DataFrame({"a": ["1"]}).to_parquet(staged.path / "part-00000.parquet")
        (staged.path / ".part-00001.parquet.77-ab12cd34.tmp").write_bytes(b"half")
        local = staged.path
        outputs.commit()
    assert fs.find(f"{root}/rel") == [f"{root}/rel/part-00000.parquet"]
    assert not local.exists()


def test_a_folder_of_other_files_is_not_replaced(
    adult: Path, memfs: tuple[Any, str], tmp_path: Path
) -> None:
    fs, root = memfs
    source = _put(fs, root, adult, "csv")
    fs.pipe(f"{root}/mine/notes.txt", b"keep")
    with pytest.raises(AnonlabError, match="other files than Parquet parts"):
        _generalize(source, f"memory://{root}/mine/", engine="numpy")
    assert fs.cat(f"{root}/mine/notes.txt") == b"keep"


# ---------------------------------------------------------------------------
# Errors: one line, exit code 2, nothing written
# ---------------------------------------------------------------------------


def _fails(args: list[str], needle: str, tmp_path: Path) -> str:
    before = sorted(tmp_path.rglob("*"))
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert needle in lines[0]
    assert sorted(tmp_path.rglob("*")) == before
    return lines[0]


def _generalize_args(source: str, *more: str) -> list[str]:
    qi = [f"--qi={q}={ADULT / f'hierarchy_{q}.csv'}" for q in QIS]
    return ["generalize", source, *qi, "--k", "5", "--other", "insensitive", *more]


@pytest.mark.parametrize(
    ("url", "package"),
    [
        ("s3://bucket/adult.csv", "s3fs"),
        ("gs://bucket/adult.csv", "gcsfs"),
        ("abfs://container/adult.csv", "adlfs"),
        ("https://example.org/adult.csv", "aiohttp"),
    ],
)
def test_a_protocol_without_its_package_names_it(url: str, package: str, tmp_path: Path) -> None:
    out = str(tmp_path / "out.csv")
    line = _fails(_generalize_args(url, "--output", out), f"pip install {package}", tmp_path)
    assert url in line


def test_a_missing_url_is_one_line(memfs: tuple[Any, str], tmp_path: Path) -> None:
    _, root = memfs
    url = f"memory://{root}/missing.csv"
    out = str(tmp_path / "out.csv")
    _fails(_generalize_args(url, "--output", out), f"'{url}' does not exist", tmp_path)
    _fails(["risk", url, "--qi", "age", "--engine", "numpy"], f"'{url}' does not exist", tmp_path)
    for command in ("microaggregate", "perturb"):
        args = [command, url, "--output", out]
        if command == "perturb":
            args += ["--key", str(tmp_path / "key.json")]
        _fails(args, f"'{url}' does not exist", tmp_path)


def test_an_output_url_without_its_package_writes_nothing(
    adult: Path, memfs: tuple[Any, str], tmp_path: Path
) -> None:
    fs, root = memfs
    source = _put(fs, root, adult, "csv")
    report = str(tmp_path / "r.json")
    _fails(
        _generalize_args(source, "--output", "s3://bucket/out.parquet", "--report", report),
        "pip install s3fs",
        tmp_path,
    )
    assert not [p for p in fs.find(root) if not p.endswith("adult.csv")]


def test_an_http_output_is_refused_before_any_work(
    adult: Path, memfs: tuple[Any, str], tmp_path: Path
) -> None:
    fs, root = memfs
    source = _put(fs, root, adult, "csv")
    _fails(
        _generalize_args(source, "--output", "https://example.org/out.csv"),
        "cannot write them",
        tmp_path,
    )


def test_a_key_is_never_written_to_a_url(memfs: tuple[Any, str], tmp_path: Path) -> None:
    fs, root = memfs
    source = _put(fs, root, TARRAGONA, "csv")
    _fails(
        ["perturb", source, "--output", str(tmp_path / "o.csv"), "--key", f"memory://{root}/k"],
        "a secret key is written to a local file only",
        tmp_path,
    )


def test_a_url_that_lost_a_slash_is_refused(tmp_path: Path) -> None:
    """``s3:/bucket/x`` (what a path type makes of ``s3://bucket/x``) is never written as a
    local folder ``s3:``."""
    _fails(
        ["risk", str(TARRAGONA), "--qi", "SALES", "--report", "memory:/somewhere/r.json"],
        "write it as 'memory://somewhere/r.json'",
        tmp_path,
    )
    assert not Path("memory:").exists()


def test_a_bad_storage_option_flag_is_one_line(tmp_path: Path) -> None:
    _fails(
        ["risk", str(TARRAGONA), "--qi", "SALES", "--storage-option", "anon"],
        "--storage-option 'anon' is not KEY=VALUE",
        tmp_path,
    )
