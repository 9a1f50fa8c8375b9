"""anonlab compare: the documented example, the command's outputs, failures and errors."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.runs.compare import CompareSettings, compare

ROOT = Path(__file__).resolve().parents[1]
TARRAGONA = ROOT / "examples" / "compare_tarragona.toml"
DOCS = ROOT / "docs" / "compare.md"
runner = CliRunner()


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


def _documented_rows(config: str = "compare_tarragona.toml") -> dict[str, list[str]]:
    """The rows of the table docs/compare.md shows for an example config."""
    text = DOCS.read_text(encoding="utf-8")
    block = text.split(f"<!-- compare-table: examples/{config} -->", 1)[1]
    rows: dict[str, list[str]] = {}
    for line in block.strip().splitlines():
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] not in ("method", "---"):
            rows[cells[0]] = cells[1:]
    return rows


@pytest.fixture(scope="module")
def tarragona_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, int]:
    """The documented command, run once: its folder, output and exit code."""
    out = tmp_path_factory.mktemp("compare")
    code, text = _run(
        [
            "compare",
            "--config",
            str(TARRAGONA),
            "--report",
            str(out / "cmp.json"),
            "--html",
            str(out / "cmp.html"),
            "--plot",
            str(out / "cmp.png"),
            "--releases",
            str(out / "releases") + "/",
        ]
    )
    return out, text, code


def test_the_documented_table_is_what_the_example_gives(
    tarragona_run: tuple[Path, str, int],
) -> None:
    out, text, code = tarragona_run
    assert code == 0, text
    report = json.loads((out / "cmp.json").read_text())
    shown = _documented_rows()
    assert [m["name"] for m in report["methods"]] == list(shown)
    for m in report["methods"]:
        assert m["status"] == "ok", m
        command, loss, risk, at_risk, highest = shown[m["name"]]
        assert command == m["command"] + (f" ({m['recoding']})" if m.get("recoding") else "")
        assert f"{m['utility_loss']['overall']:.4f}" == loss
        assert f"{m['linkage']['mean']:.4f}" == risk
        assert f"{m['linkage']['at_risk']:.4f}" == at_risk
        assert f"{m['linkage']['highest']:.4f}" == highest
        assert m["verified"] is True
        assert m["linkage"]["records_measured"] == 834 and not m["linkage"]["sampled"]
    assert len(report["methods"]) >= 7
    assert report["cpu_seconds"] < 60
    for name in shown:  # the command line prints the table
        assert re.search(rf"^{re.escape(name)}\s", text, re.MULTILINE), name


def test_every_output_is_written_and_the_releases_are_the_families(
    tarragona_run: tuple[Path, str, int],
) -> None:
    from anonlab.io import read_table
    from anonlab.runs.microaggregate import MicroaggregateSettings, run_microaggregate

    out, _, code = tarragona_run
    assert code == 0
    page = (out / "cmp.html").read_text(encoding="utf-8")
    assert "Methods compared" in page and "R-U map" in page and "mdav-k10" in page
    assert (out / "cmp.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads((out / "cmp.json").read_text())
    files = sorted(p.name for p in (out / "releases").iterdir())
    assert files == sorted(f"{m['name']}.csv" for m in report["methods"])
    own = out / "mdav_k3.csv"
    settings = MicroaggregateSettings(
        input=str(ROOT / "data" / "sdc" / "Tarragona.csv"),
        k=3,
        output=str(own),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_microaggregate(settings)
    assert (out / "releases" / "mdav-k3.csv").read_bytes() == own.read_bytes()
    released = read_table(out / "releases" / "mondrian-k5.csv")
    assert len(released) == 834 and str(released.iloc[0, 0]).startswith("[")


def _config(tmp_path: Path, methods: str, extra: str = "") -> Path:
    data = ROOT / "data" / "sdc" / "Tarragona.csv"
    path = tmp_path / "c.toml"
    path.write_text(
        f'input = "{data}"\nattacker = ["SALES", "LABOR.COSTS"]\nother = "insensitive"\n'
        f"{extra}\n{methods}",
        encoding="utf-8",
    )
    return path


MDAV = '[[method]]\nname = "mdav"\ncommand = "microaggregate"\ncolumns = "SALES,LABOR.COSTS"\n'


def test_a_failing_method_is_reported_and_the_others_run(tmp_path: Path) -> None:
    impossible = (
        '[[method]]\nname = "mondrian-k900"\ncommand = "generalize"\nrecoding = "mondrian"\n'
        'k = 900\nqi = {"SALES" = "", "LABOR.COSTS" = ""}\n'
    )
    config = _config(tmp_path, impossible + MDAV)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = compare(config)
    first, second = result.report["methods"]
    assert first["status"] == "failed" and first["error"] and "\n" not in first["error"]
    assert second["status"] == "ok" and second["utility_loss"]["overall"] > 0
    assert result.report["failed"] == ["mondrian-k900"]
    assert result.report["comparison"][0]["utility_loss"] is None


def test_a_dict_and_the_toml_give_the_same_figures(tmp_path: Path) -> None:
    config = _config(tmp_path, MDAV)
    settings = CompareSettings.load(config)
    values = settings.model_dump()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = compare(config).report["methods"][0]
        b = compare(values).report["methods"][0]
    assert a["utility_loss"] == b["utility_loss"] and a["linkage"] == b["linkage"]


@pytest.mark.parametrize(
    ("methods", "message"),
    [
        ('[[method]]\nname = "x"\ncommand = "shred"\n', "command 'shred' is not one"),
        (MDAV + "colour = 3\n", "method 'mdav': colour is not a known setting"),
        (MDAV + 'report = "r.json"\n', "method 'mdav': report is written by compare"),
        (MDAV + "verify = false\n", "method 'mdav': verify is always on"),
        (MDAV + MDAV, "method name 'mdav' is given twice"),
        ('[[method]]\nname = "a/b"\ncommand = "perturb"\n', "method name 'a/b' must be"),
        ("", "give at least one [[method]]"),
    ],
)
def test_bad_settings_are_one_line_errors_writing_nothing(
    tmp_path: Path, methods: str, message: str
) -> None:
    config = _config(tmp_path, methods)
    report = tmp_path / "r.json"
    code, text = _run(["compare", "--config", str(config), "--report", str(report), "--quiet"])
    assert code == 2, text
    assert text.startswith("Error: ") and message in text, text
    assert len(text.strip().splitlines()) == 1
    assert not report.exists()


def test_an_unknown_attacker_column_and_a_bad_output_write_nothing(tmp_path: Path) -> None:
    config = _config(tmp_path, MDAV)
    report, page = tmp_path / "r.json", tmp_path / "r.html"
    code, text = _run(
        ["compare", "--config", str(config), "--attacker", "NOPE", "--report", str(report)]
    )
    assert code == 2 and "attacker names columns the table does not have: NOPE" in text
    (tmp_path / "folder").mkdir()
    code, text = _run(
        [
            "compare",
            "--config",
            str(config),
            "--report",
            str(report),
            "--html",
            str(tmp_path / "folder"),
        ]
    )
    assert code == 2 and "is a folder" in text
    assert not report.exists() and not page.exists()


def test_the_adult_example_validates_with_its_hierarchies() -> None:
    settings = CompareSettings.load(ROOT / "examples" / "compare_adult.toml")
    commands = [m["command"] for m in settings.methods]
    assert len(settings.methods) >= 7 and {"generalize", "suppress", "microaggregate"} <= set(
        commands
    )
    recodings = {m.get("recoding", "full-domain") for m in settings.methods}
    assert recodings >= {"full-domain", "mondrian", "local"}
    for entry in settings.methods:
        for path in (entry.get("qi") or {}).values() if isinstance(entry.get("qi"), dict) else ():
            assert path == "" or Path(path).is_file(), path
    frame = pd.read_csv(ROOT / "data" / "adult" / "adult.csv", sep=";", nrows=1)
    assert set(settings.attacker) <= set(frame.columns)


def test_the_page_renders_an_edited_report_or_refuses_it_in_one_line(
    tarragona_run: tuple[Path, str, int],
) -> None:
    from anonlab.errors import AnonlabError
    from anonlab.htmlreport import render_html

    out, _, _ = tarragona_run
    report = json.loads((out / "cmp.json").read_text())
    for odd in (3, "x", None, [1], {"overall": "?"}):
        edited = json.loads(json.dumps(report))
        edited["methods"][0].update(utility_loss=odd, linkage=odd, own=odd)
        assert "Methods compared" in render_html(edited)
    edited = json.loads(json.dumps(report))
    edited["methods"] = "x"
    with pytest.raises(AnonlabError, match="key 'methods' must be a list"):
        render_html(edited)


def test_pram_and_suppression_side_by_side_on_categorical_keys(tmp_path: Path) -> None:
    from anonlab.io import read_table

    data = ROOT / "data" / "sdc" / "testdata.csv"
    keys = '["roof", "walls", "water"]'
    config = tmp_path / "c.toml"
    config.write_text(
        f'input = "{data}"\nattacker = {keys}\nother = "insensitive"\nsample = 1000\n'
        f"categorical = {keys}\n"
        f'[[method]]\nname = "pram"\ncommand = "mask"\nmethod = "pram"\ncolumns = {keys}\n'
        "seed = 3\n"
        f'[[method]]\nname = "suppress"\ncommand = "suppress"\nqi = {keys}\nk = 5\n',
        encoding="utf-8",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = compare(config)
    pram, suppress = result.report["methods"]
    assert pram["status"] == "ok" and suppress["status"] == "ok", result.report["failed"]
    original = read_table(data)
    settings = CompareSettings.load(config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from anonlab.runs import run

        released = run(settings.method_settings(settings.methods[0])).release
    assert released is not None
    for key in ("roof", "walls", "water"):  # a PRAMed cell loses 1 when it changed, else 0
        changed = (original[key].astype(str) != released[key].astype(str)).mean()
        assert pram["utility_loss"]["per_column"][key] == pytest.approx(changed)
        assert set(pram["utility_loss"]["cells"][key]) == {"category"}
    assert pram["linkage"]["sampled"] and pram["linkage"]["records_measured"] == 1000
    assert suppress["suppressed_cells"] == suppress["own"]["cells_suppressed"]
    assert pram["own"]["pram_prosecutor_highest"] is not None


@pytest.mark.slow
def test_the_documented_adult_table_is_what_its_example_gives() -> None:
    shown = _documented_rows("compare_adult.toml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = compare(
            CompareSettings.load(ROOT / "examples" / "compare_adult.toml").model_copy(
                update={"report": None}
            )
        ).report
    assert [m["name"] for m in report["methods"]] == list(shown)
    for m in report["methods"]:
        command, loss, risk, at_risk, highest, suppressed, own, _ = shown[m["name"]]
        assert m["status"] == "ok" and m["linkage"]["sampled"]
        assert command == m["command"] + (f" ({m['recoding']})" if m.get("recoding") else "")
        assert f"{m['utility_loss']['overall']:.4f}" == loss
        assert f"{m['linkage']['mean']:.4f}" == risk
        assert f"{m['linkage']['at_risk']:.4f}" == at_risk
        assert f"{m['linkage']['highest']:.4f}" == highest
        assert str(m["suppressed_records"]) == suppressed
        assert f"{m['own']['prosecutor_highest']:.4f}" == own
