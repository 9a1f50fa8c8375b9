"""The generalization family's run layer: settings, runs, all-or-nothing outputs, stored paths."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.checker import check_generalization, check_k_anonymity
from anonlab.cli.app import app
from anonlab.errors import AnonlabError
from anonlab.hierarchy import Hierarchy
from anonlab.runs.apply import run_apply
from anonlab.runs.common import PATHS_ABSOLUTE, PATHS_RELATIVE
from anonlab.runs.generalize import run_generalize
from anonlab.runs.generalize_settings import ApplySettings, GeneralizeSettings
from anonlab.runs.hierarchy import (
    GroupingHierarchySettings,
    IntervalHierarchySettings,
    run_hierarchy,
)

REPO = Path(__file__).resolve().parents[1]
ADULT_TOML = REPO / "examples" / "adult.toml"
#: SHA-256 of the example's release (``generalize --config examples/adult.toml``) before the
#: run layer existed: the release must stay byte-identical
ADULT_K5_SHA256 = "96d0fd0489aee9dc39a5d9d4d17019debf3d2915eee7366b9da9237f3b65a0cc"
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
# the small releases made here are risky on purpose: their warnings are tested elsewhere
# (tests/test_release_risk.py)
pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden temporary files included) with its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    (tmp_path / "t.csv").write_text(
        "name,age,zip\nann,31,47677\nbob,32,47602\ncy,33,47678\ndee,34,47605\n"
    )
    (tmp_path / "age.csv").write_text("31;30-34;*\n32;30-34;*\n33;30-34;*\n34;30-34;*\n")
    (tmp_path / "zip.csv").write_text(
        "47677;4767*;*\n47602;4760*;*\n47678;4767*;*\n47605;4760*;*\n"
    )
    return tmp_path


def _tiny_settings(t: Path, **extra: object) -> GeneralizeSettings:
    values: dict[str, Any] = {"k": 2, **extra}
    return GeneralizeSettings.load(
        None,
        input=t / "t.csv",
        qi={"age": t / "age.csv", "zip": t / "zip.csv"},
        identifying="name",
        **values,
    )


# --------------------------------------------------------------------- Python API = CLI


def test_python_run_equals_cli_and_the_baseline(tmp_path: Path) -> None:
    py_out, py_rep = tmp_path / "py" / "adult_k5.csv", tmp_path / "py" / "adult_k5.json"
    settings = GeneralizeSettings.load(ADULT_TOML, output=py_out, report=py_rep)
    assert settings.verify is True and settings.k == 5
    calls: list[tuple[str, int, int | None]] = []
    result = run_generalize(settings, progress=lambda s, d, t: calls.append((s, d, t)))
    assert sorted(result.written) == sorted([py_out, py_rep])
    cli_out, cli_rep = tmp_path / "cli" / "adult_k5.csv", tmp_path / "cli" / "adult_k5.json"
    code, text = _run(
        [
            "generalize",
            "--config",
            str(ADULT_TOML),
            "--output",
            str(cli_out),
            "--report",
            str(cli_rep),
            "--quiet",
        ]
    )
    assert code == 0, text
    assert py_out.read_bytes() == cli_out.read_bytes()
    assert hashlib.sha256(py_out.read_bytes()).hexdigest() == ADULT_K5_SHA256
    report = json.loads(py_rep.read_text())
    assert report == {**result.report, "runtime_seconds": report["runtime_seconds"]}
    assert report["verified"] is True and report["suppressed_records"] == 207
    # progress: lattice nodes checked, one call per node, out of the lattice's size
    assert {c[0] for c in calls} == {"searching the lattice"}
    assert [c[1] for c in calls] == list(range(1, report["nodes_checked"] + 1))
    assert {c[2] for c in calls} == {report["lattice_size"]}
    # the checkers agree with the release on disk
    release = pd.read_csv(py_out, dtype=str, keep_default_na=False)
    original = pd.read_csv(
        REPO / "data" / "adult" / "adult.csv", sep=";", dtype=str, keep_default_na=False
    )
    hierarchies = {
        q: Hierarchy.from_csv(REPO / "data" / "adult" / f"hierarchy_{q}.csv") for q in QIS
    }
    assert check_k_anonymity(release, QIS, 5, 301) == []
    assert (
        check_generalization(
            original, release, hierarchies, report["transformation"], max_suppressed=301
        )
        == []
    )


def test_report_stores_paths_relative_to_itself(tiny: Path) -> None:
    rep = tiny / "reports" / "r.json"
    result = run_generalize(_tiny_settings(tiny, report=rep, output=tiny / "out.csv"))
    params = result.report["parameters"]
    assert result.report["paths"] == PATHS_RELATIVE
    assert params["input"] == "../t.csv" and params["output"] == "../out.csv"
    assert params["qi"] == {"age": "../age.csv", "zip": "../zip.csv"}
    alone = run_generalize(_tiny_settings(tiny, output=tiny / "out2.csv"))
    assert alone.report["paths"] == PATHS_ABSOLUTE
    assert alone.report["parameters"]["qi"]["age"] == str((tiny / "age.csv").resolve())


def test_no_output_runs_in_memory_and_verifies(tiny: Path) -> None:
    result = run_generalize(_tiny_settings(tiny))
    assert result.written == [] and result.report["verified"] is True
    assert result.release is not None and list(result.release.columns) == ["age", "zip"]
    assert sorted(p.name for p in tiny.iterdir()) == ["age.csv", "t.csv", "zip.csv"]


def test_no_verify_is_recorded(tiny: Path) -> None:
    code, text = _run(
        [
            "generalize",
            str(tiny / "t.csv"),
            "--qi",
            f"age={tiny / 'age.csv'}",
            "--qi",
            f"zip={tiny / 'zip.csv'}",
            "--identifying",
            "name",
            "--k",
            "2",
            "--no-verify",
            "--report",
            str(tiny / "r.json"),
            "--quiet",
        ]
    )
    assert code == 0, text
    assert json.loads((tiny / "r.json").read_text())["verified"] is False


# ------------------------------------------------------------- all outputs or none


def test_a_failing_html_render_leaves_no_release(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anonlab.htmlreport

    def broken(*args: object, **kwargs: object) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(anonlab.htmlreport, "render_html", broken)
    before = _files(tiny)
    settings = _tiny_settings(
        tiny, output=tiny / "out.csv", report=tiny / "r.json", html=tiny / "r.html"
    )
    with pytest.raises(OSError, match="No space left"):
        run_generalize(settings)
    assert _files(tiny) == before  # no release, no report, no temporary file


def test_a_failing_plot_leaves_nothing_through_the_cli(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anonlab.htmlreport

    def no_figure(report: object) -> object:
        raise AnonlabError("a 'generalize' report has no plot to draw")

    monkeypatch.setattr(anonlab.htmlreport, "main_figure", no_figure)
    before = _files(tiny)
    code, text = _run(
        [
            "generalize",
            str(tiny / "t.csv"),
            "--qi",
            f"age={tiny / 'age.csv'}",
            "--qi",
            f"zip={tiny / 'zip.csv'}",
            "--identifying",
            "name",
            "--k",
            "2",
            "--output",
            str(tiny / "out.csv"),
            "--plot",
            str(tiny / "p.png"),
        ]
    )
    assert code == 2 and text.startswith("Error: ") and "no plot to draw" in text
    assert _files(tiny) == before


@pytest.mark.parametrize("flag", ["--output", "--report", "--html", "--plot"])
def test_an_existing_folder_as_an_output_is_refused(tiny: Path, flag: str) -> None:
    (tiny / "folder").mkdir()
    args = [
        "generalize",
        str(tiny / "t.csv"),
        "--qi",
        f"age={tiny / 'age.csv'}",
        "--qi",
        f"zip={tiny / 'zip.csv'}",
        "--identifying",
        "name",
        "--k",
        "2",
        flag,
        str(tiny / "folder"),
    ]
    if flag != "--output":
        args += ["--output", str(tiny / "out.csv")]
    before = _files(tiny)
    code, text = _run(args)
    assert code == 2, text
    assert len(text.strip().splitlines()) == 1
    assert text.startswith(f"Error: {flag} '{tiny / 'folder'}' is a folder")
    assert _files(tiny) == before


@pytest.mark.parametrize("flag", ["--output", "--report", "--html"])
def test_apply_refuses_an_existing_folder(tiny: Path, flag: str) -> None:
    run_generalize(_tiny_settings(tiny, report=tiny / "r.json"))
    (tiny / "folder").mkdir()
    before = _files(tiny)
    code, text = _run(
        ["apply", str(tiny / "r.json"), str(tiny / "t.csv"), flag, str(tiny / "folder")]
    )
    assert code == 2 and len(text.strip().splitlines()) == 1, text
    assert text.startswith(f"Error: {flag} '{tiny / 'folder'}' is a folder")
    assert _files(tiny) == before


def test_nothing_to_write_is_refused(tiny: Path) -> None:
    code, text = _run(
        [
            "generalize",
            str(tiny / "t.csv"),
            "--qi",
            f"age={tiny / 'age.csv'}",
            "--qi",
            f"zip={tiny / 'zip.csv'}",
            "--identifying",
            "name",
            "--k",
            "2",
        ]
    )
    assert code == 2 and text.startswith("Error: nothing to write"), text


# --------------------------------------------------------- a config's input overridden


@pytest.fixture()
def example(tmp_path: Path) -> Path:
    """A copy of examples/adult.toml with the data it names, and another table."""
    (tmp_path / "examples").mkdir()
    shutil.copy(ADULT_TOML, tmp_path / "examples")
    shutil.copytree(REPO / "data" / "adult", tmp_path / "data" / "adult")
    lines = (REPO / "data" / "adult" / "adult.csv").read_text().splitlines()
    (tmp_path / "other.csv").write_text("\n".join(lines[:200]) + "\n")
    return tmp_path


def test_a_new_input_needs_its_own_outputs(example: Path) -> None:
    config = example / "examples" / "adult.toml"
    before = _files(example)
    code, text = _run(["generalize", "--config", str(config), str(example / "other.csv")])
    assert code == 2 and len(text.strip().splitlines()) == 1, text
    assert "give --output and --report for the new input" in text
    code, text = _run(
        [
            "generalize",
            "--config",
            str(config),
            str(example / "other.csv"),
            "--output",
            str(example / "o.csv"),
        ]
    )
    assert code == 2 and "give --report for the new input" in text, text
    assert _files(example) == before  # the example's report was not overwritten
    with pytest.raises(AnonlabError, match="output, report") as caught:
        GeneralizeSettings.load(config, input=example / "other.csv")
    assert caught.value.parameter == "input"
    code, text = _run(
        [
            "generalize",
            "--config",
            str(config),
            str(example / "other.csv"),
            "--output",
            str(example / "o.csv"),
            "--report",
            str(example / "o.json"),
            "--k",
            "2",
            "--quiet",
        ]
    )
    assert code == 0, text
    assert json.loads((example / "o.json").read_text())["records"] == 199
    assert not (example / "out").exists()


# ------------------------------------------------------------- reports from anywhere


def test_apply_works_from_another_folder(
    tiny: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tiny)  # relative paths, as a user in the data's folder types them
    code, text = _run(
        [
            "generalize",
            "t.csv",
            "--qi",
            "age=age.csv",
            "--qi",
            "zip=zip.csv",
            "--identifying",
            "name",
            "--k",
            "2",
            "--output",
            "out/r.csv",
            "--report",
            "out/r.json",
            "--quiet",
        ]
    )
    assert code == 0, text
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)
    report = tiny / "out" / "r.json"
    code, text = _run(
        [
            "apply",
            str(report),
            str(tiny / "t.csv"),
            "--output",
            "applied.csv",
            "--report",
            "applied.json",
            "--html",
            "applied.html",
        ]
    )
    assert code == 0, text
    assert (elsewhere / "applied.csv").read_bytes() == (tiny / "out" / "r.csv").read_bytes()
    applied = json.loads((elsewhere / "applied.json").read_text())
    assert applied["verified"] is True and applied["paths"] == PATHS_RELATIVE
    assert (elsewhere / applied["parameters"]["qi"]["age"]).resolve() == tiny / "age.csv"
    page = (elsewhere / "applied.html").read_text()
    assert "30-34" in page and "hierarchy file not found" not in page
    # and from Python, with the apply report itself as the source of the transformation
    again = run_apply(
        ApplySettings(report_in=str(elsewhere / "applied.json"), input=str(tiny / "t.csv"))
    )
    assert again.written == [] and again.report["suppressed_records"] == 0


def test_apply_names_a_moved_hierarchy(tiny: Path) -> None:
    run_generalize(_tiny_settings(tiny, report=tiny / "r.json"))
    (tiny / "age.csv").rename(tiny / "age_moved.csv")
    with pytest.raises(AnonlabError, match=r"hierarchy '.*age.csv' of 'age', named in report"):
        run_apply(
            ApplySettings(
                report_in=str(tiny / "r.json"),
                input=str(tiny / "t.csv"),
                output=str(tiny / "o.csv"),
            )
        )
    assert not (tiny / "o.csv").exists()


def test_apply_reads_a_report_of_an_earlier_version(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reports without "paths" kept paths as typed, relative to where they ran."""
    old = run_generalize(_tiny_settings(tiny, report=tiny / "r.json")).report
    del old["paths"]
    old["parameters"]["qi"] = {"age": "age.csv", "zip": "zip.csv"}
    (tiny / "old.json").write_text(json.dumps(old))
    monkeypatch.chdir(tiny.parent)
    done = run_apply(ApplySettings(report_in=str(tiny / "old.json"), input=str(tiny / "t.csv")))
    assert done.report["transformation"] == old["transformation"]


def test_apply_refuses_a_changed_hierarchy(tiny: Path) -> None:
    run_generalize(_tiny_settings(tiny, report=tiny / "r.json"))
    with (tiny / "age.csv").open("a") as fh:
        fh.write("35;35-39;*\n")
    with pytest.raises(AnonlabError, match="changed since the report was made"):
        run_apply(ApplySettings(report_in=str(tiny / "r.json"), input=str(tiny / "t.csv")))


# ---------------------------------------------------------------------- settings


def test_settings_errors_name_parameters(tiny: Path) -> None:
    with pytest.raises(AnonlabError) as caught:
        GeneralizeSettings.load(None, input="t.csv", qi={}, k=2)
    assert caught.value.parameter == "qi"
    with pytest.raises(AnonlabError, match=r"^k must be at least 1") as caught:
        run_generalize(_tiny_settings(tiny, k=0))
    assert caught.value.parameter == "k"
    with pytest.raises(
        AnonlabError,
        match=r"^suppression must be a fraction from 0 to 1 .*got "
        r"2.0\): write 0.01 or 1%",
    ) as caught:
        run_generalize(_tiny_settings(tiny, suppression=2.0))
    assert caught.value.for_flags().startswith("--suppression must be")
    with pytest.raises(AnonlabError, match=r"^qi names column 'age' twice"):
        from anonlab.runs.generalize_settings import parse_qi_flags

        parse_qi_flags(["age=a.csv", "age=b.csv"])


def test_toml_quiet_is_not_a_library_setting(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text('input = "t.csv"\nquiet = true\n[qi]\na = "h.csv"\n')
    with pytest.raises(AnonlabError, match="quiet is not a known setting"):
        GeneralizeSettings.load(tmp_path / "c.toml")


def test_passwords_stay_out_of_reports() -> None:
    from anonlab.database import masked as public_source  # the one masking reports use

    assert (
        public_source("postgresql://ann:s3cret@db.example/x") == "postgresql://ann:***@db.example/x"
    )
    assert public_source("sqlite:///data/x.db") == "sqlite:///data/x.db"
    assert public_source("data/x.csv") == "data/x.csv"


def test_input_from_sqlite_equals_csv(tiny: Path) -> None:
    frame = pd.read_csv(tiny / "t.csv", dtype=str)
    with sqlite3.connect(tiny / "t.db") as con:
        frame.to_sql("people", con, index=False)
    url = f"sqlite:///{tiny / 't.db'}"
    from_db = run_generalize(
        GeneralizeSettings.load(
            None,
            input=url,
            table="people",
            qi={"age": tiny / "age.csv", "zip": tiny / "zip.csv"},
            identifying=["name"],
            k=2,
            output=tiny / "db.csv",
        )
    )
    from_csv = run_generalize(_tiny_settings(tiny, output=tiny / "csv.csv"))
    assert (tiny / "db.csv").read_bytes() == (tiny / "csv.csv").read_bytes()
    assert from_db.report["inputs"]["data"] is None
    assert from_db.report["parameters"]["input"] == url
    assert from_csv.report["transformation"] == from_db.report["transformation"]


# ------------------------------------------------------------------ hierarchy builders


def test_builders_say_what_they_wrote(tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("age,grade\n31,B\n47,A\n52,C\n")
    out = tmp_path / "age.csv"
    code, text = _run(
        [
            "hierarchy",
            "interval",
            str(table),
            "--column",
            "age",
            "--widths",
            "5,10",
            "--output",
            str(out),
        ]
    )
    assert code == 0, text
    assert text.startswith(
        f"wrote {out}: interval hierarchy of 'age', 3 values, 4 levels "
        "(0 = the values, 3 = the top)\n"
    )
    code, text = _run(
        [
            "hierarchy",
            "redaction",
            str(table),
            "--column",
            "age",
            "--output",
            str(tmp_path / "r.csv"),
            "--quiet",
        ]
    )
    # --quiet keeps only the warnings: on three ages, no level merges two of them
    assert code == 0 and text.startswith("Warning: level 1 repeats level 0"), text
    result = run_hierarchy(
        GroupingHierarchySettings.load(
            None, input=table, column="grade", sizes="2", order="A,B,C", output=tmp_path / "g.csv"
        )
    )
    assert result.report["values"] == 3 and result.report["levels"] == 3
    assert (tmp_path / "g.csv").read_text().splitlines() == ["A;A..B;*", "B;A..B;*", "C;C;*"]


@pytest.mark.parametrize("builder", ["interval", "redaction", "grouping"])
def test_builders_refuse_a_folder_as_output(tmp_path: Path, builder: str) -> None:
    table = tmp_path / "t.csv"
    table.write_text("age\n31\n47\n")
    (tmp_path / "folder").mkdir()
    extra = {"interval": ["--widths", "10"], "redaction": [], "grouping": ["--sizes", "2"]}
    before = _files(tmp_path)
    code, text = _run(
        [
            "hierarchy",
            builder,
            str(table),
            "--column",
            "age",
            *extra[builder],
            "--output",
            str(tmp_path / "folder"),
        ]
    )
    assert code == 2, text
    assert text.strip() == (
        f"Error: --output '{tmp_path / 'folder'}' is a folder: give a file name inside it"
    )
    assert _files(tmp_path) == before


def test_builder_settings_name_their_parameters(tmp_path: Path) -> None:
    with pytest.raises(AnonlabError, match=r"^widths: is not a comma-separated list"):
        IntervalHierarchySettings.load(
            None, input="t.csv", column="a", widths="5,x", output=tmp_path / "h.csv"
        )
    table = tmp_path / "t.csv"
    table.write_text("grade\nA\nB\n")
    settings = GroupingHierarchySettings.load(
        None, input=table, column="grade", sizes="2", order="A", output=tmp_path / "h.csv"
    )
    with pytest.raises(AnonlabError, match=r"^order does not list value 'B'") as caught:
        run_hierarchy(settings)
    assert caught.value.parameter == "order"
    assert not (tmp_path / "h.csv").exists()
