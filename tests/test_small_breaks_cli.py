"""Issue 20's small breaks of risk, summaries, verify and the command line's face.

- ``--qi`` is the attacker's knowledge (sdcMicro's ``keyVars``, ARX's
  quasi-identifiers) and a column given no role is refused;
- one definition of classes, suppressed records and l = 1 records for the
  command line, the JSON report and the HTML page (a Wage-like table);
- ``verify --report`` and ``--quiet``;
- every ``--help`` fits 80 columns without a cut word;
- paths print normalized.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import _split_example, app, first_sentence, fit_help
from anonlab.errors import AnonlabError
from anonlab.risk import measure_risk
from anonlab.runs import run
from anonlab.runs.risk import KNOWLEDGE_DEFAULT, UnroledColumnsError, run_risk
from anonlab.runs.verify import VerifySettings
from small_breaks_wage import QI, write_wage

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO / "data" / "adult" / "adult.csv"
TESTDATA = REPO / "data" / "sdc" / "testdata.csv"
TESTDATA_KEYS = "urbrur,water,sex,age"
runner = CliRunner()


def _run(args: list[str], columns: int = 100) -> tuple[int, str]:
    result = runner.invoke(app, args, env={"COLUMNS": str(columns)})
    return result.exit_code, result.output


def _json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def wage(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The generated Wage-like table and its hierarchies."""
    return write_wage(tmp_path_factory.mktemp("wage"))


# ------------------------------------------------------------ --qi is the attacker


def test_risk_qi_is_the_attacker_and_nothing_else(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    code, out = _run(
        [
            "risk",
            str(ADULT),
            "--delimiter",
            ";",
            "--qi",
            "age,sex,race",
            "--other",
            "insensitive",
            "--report",
            str(report),
            "--quiet",
        ]
    )
    assert code == 0, out
    data = _json(report)
    assert data["risk"]["attacker_columns"] == ["age", "sex", "race"]
    assert "salary-class" in data["roles"]["other"]
    assert data["attacker_knowledge"] == KNOWLEDGE_DEFAULT
    frame = pd.read_csv(ADULT, sep=";", dtype=str)
    assert json.loads(json.dumps(measure_risk(frame, ["age", "sex", "race"]))) == data["risk"]


def test_a_column_without_a_role_is_refused_in_one_line(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    code, out = _run(
        [
            "risk",
            str(ADULT),
            "--delimiter",
            ";",
            "--qi",
            "age,sex,race",
            "--sensitive",
            "salary-class",
            "--insensitive",
            "education",
            "--report",
            str(report),
        ],
        columns=300,
    )
    assert code == 2
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    assert lines[0] == (
        "Error: columns marital-status, native-country, workclass, occupation are given no "
        "role: name each in --qi, --sensitive, --insensitive, --weights or "
        "--attacker-columns, or pass --other insensitive (known to no attacker, not "
        "measured)"
    )
    assert not report.exists()


def test_the_python_api_refuses_and_takes_the_same_roles() -> None:
    with pytest.raises(UnroledColumnsError, match="columns race, marital-status") as info:
        run_risk(
            ADULT,
            ["age", "sex"],
            delimiter=";",
            insensitive=["education"],
            sensitive=["salary-class"],
        )
    assert "education" not in info.value.columns
    rest = ["race", "marital-status", "native-country", "workclass", "occupation"]
    with pytest.warns(Warning):
        result = run_risk(
            ADULT,
            ["age", "sex"],
            delimiter=";",
            sensitive=["salary-class"],
            insensitive=["education", *rest],
        )
    assert result.report["risk"]["attacker_columns"] == ["age", "sex"]
    assert result.report["roles"]["insensitive"] == ["education", *rest]
    assert result.report["roles"]["other"] == []
    with pytest.raises(AnonlabError, match="insensitive names sex, given another role") as both:
        run_risk(ADULT, ["age", "sex"], delimiter=";", insensitive=["sex"], other="insensitive")
    assert both.value.parameter == "insensitive"
    with pytest.raises(AnonlabError, match="other must be 'insensitive'"):
        run_risk(ADULT, ["age", "sex"], delimiter=";", other="sensitive")


def test_sdcmicro_keys_give_the_same_figures_with_or_without_attacker_columns(
    tmp_path: Path,
) -> None:
    """testdata's keyVars as --qi: the figures --attacker-columns gave before, unchanged."""
    common = [
        "risk",
        str(TESTDATA),
        "--qi",
        TESTDATA_KEYS,
        "--weights",
        "sampling_weight",
        "--sensitive",
        "roof,walls",
        "--other",
        "insensitive",
        "--quiet",
    ]
    assert _run([*common, "--report", str(tmp_path / "qi.json")])[0] == 0
    assert (
        _run(
            [*common, "--attacker-columns", TESTDATA_KEYS, "--report", str(tmp_path / "given.json")]
        )[0]
        == 0
    )
    by_qi, given = _json(tmp_path / "qi.json"), _json(tmp_path / "given.json")
    assert by_qi["risk"] == given["risk"]
    assert by_qi["risk"]["attacker_columns"] == TESTDATA_KEYS.split(",")


def test_generalize_measures_the_release_on_its_qi(wage: dict[str, Path], tmp_path: Path) -> None:
    report = _generalize(wage, tmp_path, [])[1]
    assert report["risk"]["attacker_columns"] == list(QI)
    assert report["attacker_knowledge"] == "the quasi-identifiers"
    given = _generalize(
        wage, tmp_path / "given", ["--attacker-columns", "age,maritl,race,education,jobclass"]
    )[1]
    assert given["risk"]["attacker_columns"] == [*QI, "jobclass"]


# ------------------------------------------------ one definition of every figure


def _generalize(
    wage: dict[str, Path], folder: Path, extra: list[str]
) -> tuple[str, dict[str, Any], str]:
    """Generalize the Wage-like table with an insensitive column: CLI text, JSON, HTML."""
    folder.mkdir(parents=True, exist_ok=True)
    qi = [arg for name in QI for arg in ("--qi", f"{name}={wage[name]}")]
    code, out = _run(
        [
            "generalize",
            str(wage["table"]),
            *qi,
            "--sensitive",
            "health",
            "--insensitive",
            "jobclass,wage",
            "--k",
            "5",
            "--suppression",
            "0.02",
            "--output",
            str(folder / "o.csv"),
            "--report",
            str(folder / "o.json"),
            "--html",
            str(folder / "o.html"),
            *extra,
        ]
    )
    assert code == 0, out
    return out, _json(folder / "o.json"), (folder / "o.html").read_text(encoding="utf-8")


def _row(text: str, label: str) -> int:
    found = re.search(rf"{label}\s*│\s*([\d,]+)", text)
    assert found is not None, text
    return int(found.group(1).replace(",", ""))


def _html_number(page: str, key: str) -> int:
    found = re.search(rf'data-key="{re.escape(key)}" data-value="(\d+)"', page)
    assert found is not None, key
    return int(found.group(1))


def test_generalize_summary_risk_section_and_html_agree(
    wage: dict[str, Path], tmp_path: Path
) -> None:
    out, report, page = _generalize(wage, tmp_path, [])
    suppressed, classes = report["suppressed_records"], report["equivalence_classes"]
    assert suppressed > 0  # the case that broke: suppressed rows, an insensitive column
    assert _row(out, "suppressed records") == suppressed
    assert _row(out, "equivalence classes") == classes
    assert report["risk"]["suppressed"] == suppressed
    assert report["risk"]["classes"]["count"] == classes
    assert _html_number(page, "risk.suppressed") == suppressed
    assert _html_number(page, "risk.classes.count") == classes
    assert f"{suppressed:,} records (" in page and "were suppressed" in page
    assert f"falls into {classes:,} groups" in page


def test_perturb_warning_and_html_count_the_same_l1_records(
    wage: dict[str, Path], tmp_path: Path
) -> None:
    folder = tmp_path / "p"
    code, out = _run(
        [
            "perturb",
            str(wage["table"]),
            "--columns",
            "age,wage",
            "--insensitive",
            "maritl,race,education,jobclass",
            "--sensitive",
            "health",
            "--method",
            "rotation",
            "--seed",
            "3",
            "--output",
            str(folder / "p.csv"),
            "--key",
            str(folder / "k.json"),
            "--report",
            str(folder / "p.json"),
            "--html",
            str(folder / "p.html"),
        ],
        columns=400,
    )
    assert code == 0, out
    warned = re.search(r"'health': in [\d,]+ class\(es\), ([\d,]+) records", out)
    assert warned is not None, out
    records = int(warned.group(1).replace(",", ""))
    report = _json(folder / "p.json")
    judged = report["risk_of_unchanged"]["sensitive"]["health"]["single_value_records"]
    assert records == judged
    assert report["risk"]["sensitive"]["health"]["single_value_records"] > judged  # not it
    page = (folder / "p.html").read_text(encoding="utf-8")
    assert re.findall(r"([\d,]+) records lie in classes that all share", page) == [f"{records:,}"]
    key = "risk_of_unchanged.sensitive.health.single_value_records"
    assert _html_number(page, key) == records


# --------------------------------------------------------- verify --report --quiet


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tarragona microaggregated (k = 3): its report, beside its release."""
    folder = tmp_path_factory.mktemp("verify")
    code, out = _run(
        [
            "microaggregate",
            str(REPO / "data" / "sdc" / "Tarragona.csv"),
            "--k",
            "3",
            "--output",
            str(folder / "t.csv"),
            "--report",
            str(folder / "t.json"),
            "--max-risk",
            "0.5",
            "--quiet",
        ]
    )
    assert code == 0, out
    return folder / "t.json"


def test_verify_writes_its_findings_and_is_quiet(release: Path, tmp_path: Path) -> None:
    findings = tmp_path / "v.json"
    code, out = _run(["verify", str(release), "--report", str(findings), "--quiet"])
    assert code == 0 and out == ""
    data = _json(findings)
    assert data["command"] == "verify" and data["ok"] is True and data["findings"] == []
    assert data["checked_command"] == "microaggregate"
    assert data["inputs"]["release"]["name"] == "t.csv"
    assert data["line"].startswith("microaggregate release ") and " holds: " in data["line"]
    code, out = _run(["verify", str(release)])
    assert code == 0 and out.strip() == data["line"]


def test_verify_report_of_a_failing_release(release: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    frame = pd.read_csv(release.with_suffix(".csv"), dtype=str)
    frame.iloc[0, 0] = "1"
    frame.to_csv(bad, index=False)
    findings = tmp_path / "v.json"
    code, out = _run(
        ["verify", str(release), "--release", str(bad), "--report", str(findings), "--quiet"]
    )
    assert code == 1 and out == ""
    data = _json(findings)
    assert data["ok"] is False and data["findings"]
    assert data["line"].endswith(tuple(data["findings"])) or "does not hold" in data["line"]


def test_verify_that_cannot_run_writes_nothing(tmp_path: Path) -> None:
    findings = tmp_path / "v.json"
    code, out = _run(["verify", str(tmp_path / "none.json"), "--report", str(findings)])
    assert code == 2 and out.startswith("Error: ") and len(out.strip().splitlines()) == 1
    assert not findings.exists()


def test_verify_from_python(release: Path, tmp_path: Path) -> None:
    result = run(VerifySettings(report_in=str(release), report=str(tmp_path / "v.json")))
    assert result.report["ok"] is True and result.written == [tmp_path / "v.json"]
    assert _json(tmp_path / "v.json")["findings"] == []


# --------------------------------------------------------------- --help at 80 columns


def _commands() -> list[list[str]]:
    import typer.main

    group = typer.main.get_command(app)
    out: list[list[str]] = []
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        out.append([name])
        out += [[name, sub] for sub in getattr(command, "commands", {})]
    return out


@pytest.mark.parametrize("words", [[], *_commands()], ids=lambda w: " ".join(w) or "anonlab")
def test_help_fits_80_columns_and_cuts_no_word(words: list[str]) -> None:
    code, text = _run([*words, "--help"], columns=80)
    assert code == 0, text
    assert "…" not in text
    too_wide = [line for line in text.splitlines() if len(line) > 80]
    assert too_wide == []
    listed = text.partition("Commands:")[2]  # a group's commands, each with its first line
    assert not re.search(r"\w\.\.\.$", listed, re.MULTILINE)


def test_the_criterion_grammar_is_whole_in_generalize_help() -> None:
    text = " ".join(_run(["generalize", "--help"], columns=80)[1].split())
    assert "MODEL[:ATTRIBUTE][:KEY=VALUE,...]" in text
    assert "precision_with_suppression" in text and "discernibility_with_suppression" in text


def test_examples_break_between_words_with_a_continuation() -> None:
    line = "  anonlab risk testdata.csv --qi urbrur,water,sex,age --weights sampling_weight --x y"
    parts = _split_example(line)
    assert all(len(p) <= 78 for p in parts) and parts[1].startswith("      --weights")
    assert " ".join(p.rstrip(" \\").strip() for p in parts) == line.strip()
    assert all(p.endswith(" \\") for p in parts[:-1])
    assert fit_help("Text.\n\n  anonlab x --a 1") == "Text.\n\n\b\n  anonlab x --a 1"
    assert first_sentence("Measure a table, e.g. a release.\n\nMore.") == "Measure a table."


# ------------------------------------------------------------------ normalized paths


def test_config_paths_print_normalized() -> None:
    from anonlab.runs.generalize_settings import GeneralizeSettings

    settings = GeneralizeSettings.load(REPO / "examples" / "adult.toml")
    assert settings.output == str(REPO / "out" / "adult_k5.csv")
    assert ".." not in str(settings.input) and ".." not in str(settings.qi["age"])


def test_verify_prints_the_release_path_normalized(
    release: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(release.parent.parent)
    odd = Path(release.parent.name) / ".." / release.parent.name / release.name
    code, out = _run(["verify", str(odd)])
    assert code == 0, out
    assert f"release '{release.parent.name}/t.csv' holds" in out
