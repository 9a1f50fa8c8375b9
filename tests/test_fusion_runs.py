"""The fusion family's run layer: settings, run_fuse from Python, all-or-nothing outputs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.errors import AnonlabError
from anonlab.runs.common import PATHS_ABSOLUTE, PATHS_RELATIVE, resolve_stored_path
from anonlab.runs.fusion import FuseSettings, PartySettings, run_fuse
from anonlab.verify.fusion import check_fusion
from test_fusion_cli import write_setup

runner = CliRunner()
# the small setting's release is risky by design; tests/test_fusion_roles.py checks the warnings
pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")
QIDS = [["age", "workclass", "marital-status", "race", "sex", "native-country"], ["age", "sex"]]


@pytest.fixture()
def setup(tmp_path: Path) -> Path:
    return write_setup(tmp_path, rows=400)


def files_in(folder: Path) -> set[str]:
    """Every file name in ``folder``, hidden temporary files included."""
    return {p.name for p in folder.iterdir()}


def test_python_run_equals_the_cli_release(setup: Path, tmp_path: Path) -> None:
    cli_out = tmp_path / "cli" / "fused.csv"
    result = runner.invoke(app, ["fuse", str(setup), "--output", str(cli_out), "--quiet"])
    assert result.exit_code == 0, result.output
    steps: list[tuple[str, int, int | None]] = []
    py_out, py_report = tmp_path / "py" / "fused.csv", tmp_path / "py" / "fused.json"
    run = run_fuse(
        FuseSettings(config=str(setup), output=str(py_out), report=str(py_report)),
        progress=lambda step, done, total: steps.append((step, done, total)),
    )
    assert py_out.read_bytes() == cli_out.read_bytes()
    assert sorted(run.written) == sorted([py_out, py_report])
    release = pd.read_csv(py_out, dtype=str, keep_default_na=False)
    assert run.release is not None
    pd.testing.assert_frame_equal(release, run.release.astype(str).reset_index(drop=True))
    assert check_fusion(release, [(q, 20) for q in QIDS], records=400) == []
    report = json.loads(py_report.read_text())
    assert report == json.loads(json.dumps(run.report, default=str))
    assert report["verified"] is True and report["parameters"]["verify"] is True
    rounds = report["rounds"]
    assert rounds > 0 and steps == [("fusion rounds", r, None) for r in range(1, rounds + 1)]


def test_report_stores_paths_relative_to_itself(setup: Path, tmp_path: Path) -> None:
    report = tmp_path / "reports" / "fused.json"
    run_fuse(FuseSettings.load(None, config=setup, report=report))  # Path objects too
    data = json.loads(report.read_text())
    assert data["paths"] == PATHS_RELATIVE
    assert data["parameters"]["config"] == "../fusion.toml"
    assert (
        resolve_stored_path(data["parameters"]["config"], report, data["paths"]).resolve()
        == setup.resolve()
    )
    assert data["parameters"]["output"] is None
    # keys of the report before the run layer, plus "paths"
    assert {
        "command",
        "inputs",
        "parameters",
        "providers",
        "records",
        "rounds",
        "templates",
        "specializations",
        "bytes_sent",
        "protocol",
        "verified",
        "runtime_seconds",
        "paths",
    } <= set(data)
    no_file = run_fuse(FuseSettings(config=str(setup), output=str(tmp_path / "t.csv")))
    assert no_file.report["paths"] == PATHS_ABSOLUTE
    assert Path(no_file.report["parameters"]["config"]) == setup.resolve()


@pytest.mark.parametrize("suffix", [".parquet", ".xlsx", ".tsv"])
def test_other_formats_are_verified_after_reading_back(
    setup: Path, tmp_path: Path, suffix: str
) -> None:
    out = tmp_path / f"fused{suffix}"
    run = run_fuse(FuseSettings(config=str(setup), output=str(out)))
    assert run.report["verified"] is True and out.exists()
    from anonlab.io import read_table

    back = read_table(out, delimiter="\t" if suffix == ".tsv" else None)
    assert check_fusion(back, [(q, 20) for q in QIDS], records=400) == []


def test_a_failing_later_output_writes_nothing(
    setup: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anonlab.htmlreport

    def broken(report: dict[str, Any], **_: Any) -> str:
        raise AnonlabError("the HTML page cannot be made (test)")

    monkeypatch.setattr(anonlab.htmlreport, "render_html", broken)
    out = tmp_path / "out"
    before = files_in(tmp_path)
    settings = FuseSettings(
        config=str(setup),
        output=str(out / "fused.csv"),
        report=str(out / "fused.json"),
        html=str(out / "fused.html"),
    )
    with pytest.raises(AnonlabError, match="HTML page cannot be made"):
        run_fuse(settings)
    assert not out.exists() or files_in(out) == set()  # no release, no report, no temp file
    assert files_in(tmp_path) - {"out"} == before


def test_failed_verification_of_the_staged_file_writes_nothing(
    setup: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anonlab.io

    original = anonlab.io.read_table

    def tampered(source: Any, **options: Any) -> pd.DataFrame:
        """The staged release as read back, with one record moved to a group of its own."""
        table = original(source, **options)
        table.loc[0, "sex"] = "tampered"  # a group of one record: template k = 20 fails
        return table

    monkeypatch.setattr(anonlab.io, "read_table", tampered)
    out, report = tmp_path / "fused.csv", tmp_path / "fused.json"
    with pytest.raises(AnonlabError, match="verification failed, nothing written"):
        run_fuse(FuseSettings(config=str(setup), output=str(out), report=str(report)))
    assert not out.exists() and not report.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    run = run_fuse(FuseSettings(config=str(setup), output=str(out), verify=False))
    assert run.report["verified"] is False and out.exists()  # --no-verify skips the check


@pytest.mark.parametrize("flag", ["--output", "--report", "--html"])
def test_existing_folder_as_output_is_one_line_exit_2(
    setup: Path, tmp_path: Path, flag: str
) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    others = [f for f in ("--output", "--report") if f != flag][:1]
    extra = [others[0], str(tmp_path / "x.out")] if others else []
    result = runner.invoke(app, ["fuse", str(setup), flag, str(folder), *extra])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {flag} ") and "is a folder" in lines[0]
    assert files_in(folder) == set() and not (tmp_path / "x.out").exists()


def test_verify_flag_forms_and_defaults_in_help() -> None:
    result = runner.invoke(app, ["fuse", "--help"], terminal_width=200)
    assert result.exit_code == 0
    assert "--verify" in result.output and "--no-verify" in result.output
    assert "<bool>" not in result.output.lower() and "(default: on)" in result.output
    party = runner.invoke(app, ["party", "--help"], terminal_width=200)
    assert "--no-verify" in party.output and "(default: 120)" in party.output
    assert "(default: 300)" in party.output


def test_settings_name_the_parameter() -> None:
    with pytest.raises(AnonlabError, match=r"^score: must be 'sensitivity' or 'tds'") as info:
        FuseSettings(config="f.toml", score="best")
    assert info.value.parameter == "score"
    for name, value in (
        ("timeout", math.nan),
        ("timeout", math.inf),
        ("connect_timeout", 0.0),
        ("connect_timeout", -math.inf),
        ("timeout", -3.0),
    ):
        with pytest.raises(AnonlabError, match=rf"^{name}: must be a finite number") as err:
            values: dict[str, Any] = {name: value}
            PartySettings.load(None, config="f.toml", party="a", **values)
        assert err.value.parameter == name
    ok = PartySettings.load(None, config="f.toml", party="a", timeout=5)
    assert (ok.timeout, ok.connect_timeout, ok.verify) == (5.0, 300.0, True)


def test_library_channel_refuses_non_finite_timeouts() -> None:
    from anonlab.fusion.transport import check_timeout

    for value in (math.nan, math.inf, 0, -1):
        with pytest.raises(AnonlabError, match="finite number of seconds above 0"):
            check_timeout(value, "timeout")
    assert check_timeout(2, "timeout") == 2.0


def test_nothing_to_write_and_score_override(setup: Path, tmp_path: Path) -> None:
    with pytest.raises(AnonlabError, match="nothing to write: give output, report and/or html"):
        run_fuse(FuseSettings(config=str(setup)))
    run = run_fuse(
        FuseSettings(config=str(setup), report=str(tmp_path / "r.json"), score="tds", keep_id=True)
    )
    assert run.report["score"] == "tds" and run.report["parameters"]["keep_id"] is True
    assert run.release is not None and "id" in run.release.columns


def test_providers_read_any_source_of_the_one_reader(setup: Path, tmp_path: Path) -> None:
    """Provider a from Parquet, b from a SQLite table: the same release as from the CSVs."""
    import sqlite3

    want = run_fuse(FuseSettings(config=str(setup), output=str(tmp_path / "csv.csv")))
    a = pd.read_csv(tmp_path / "a.csv", dtype=str, keep_default_na=False)
    a.to_parquet(tmp_path / "a.parquet", index=False)
    b = pd.read_csv(tmp_path / "b.csv", dtype=str, keep_default_na=False)
    b.to_csv(tmp_path / "b_semicolon.txt", sep=";", index=False)
    with sqlite3.connect(tmp_path / "b.db") as db:
        b.to_sql("provider_b", db, index=False)
    text = setup.read_text()
    parquet = text.replace('file = "a.csv"', 'file = "a.parquet"')
    sqlite = parquet.replace(
        'file = "b.csv"', f'file = "sqlite:///{tmp_path / "b.db"}"\ntable = "provider_b"'
    )
    semicolon = parquet.replace('file = "b.csv"', 'file = "b_semicolon.txt"\ndelimiter = ";"')
    for name, config_text in (("sqlite", sqlite), ("semicolon", semicolon)):
        config = tmp_path / f"{name}.toml"
        config.write_text(config_text)
        out = tmp_path / f"{name}.csv"
        run_fuse(FuseSettings(config=str(config), output=str(out)))
        assert out.read_bytes() == (tmp_path / "csv.csv").read_bytes(), name
    assert want.report["records"] == 400
