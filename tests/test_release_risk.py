"""Every release carries its measured re-identification risk, and a risky one is flagged.

``generalize``, ``apply`` and ``microaggregate`` put the ``risk`` section
(docs/risk.md) of the release *as written* into their reports, ``tradeoff``
one per k. The figures are checked here against a plain pandas ``groupby`` of
the released file and against the definitions written out class by class; the warnings
(:class:`ReleaseRiskWarning`), ``fail_on_risk`` (exit code 3, nothing
written) and the safe ``suppression`` spellings are checked end to end.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import reference_models as reference
from anonlab.cli.app import app
from anonlab.errors import AnonlabError, ReleaseRiskError, ReleaseRiskWarning
from anonlab.risk.release import KNOWLEDGE_DEFAULT, KNOWLEDGE_GIVEN, KNOWLEDGE_QI
from anonlab.runs.apply import run_apply
from anonlab.runs.generalize import run_generalize
from anonlab.runs.generalize_settings import ApplySettings, GeneralizeSettings, parse_suppression
from anonlab.runs.microaggregate import (
    MicroaggregateSettings,
    TradeoffSettings,
    run_microaggregate,
    run_tradeoff,
)

REPO = Path(__file__).resolve().parents[1]
ADULT_TOML = REPO / "examples" / "adult.toml"
TARRAGONA_TOML = REPO / "examples" / "tarragona.toml"
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
#: the keys docs/risk.md documents for the risk section
RISK_KEYS = {
    "attacker_columns",
    "records",
    "suppressed",
    "classes",
    "prosecutor",
    "journalist",
    "marketer",
    "sample_uniques",
    "population_uniques",
    "individual_risk",
    "suda2",
    "sensitive",
}
runner = CliRunner()


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _quiet(run: Any, settings: Any) -> Any:
    """Run with the risk warnings recorded (returned beside the result)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ReleaseRiskWarning)
        result = run(settings)
    return result, [str(w.message) for w in caught if w.category is ReleaseRiskWarning]


@pytest.fixture(scope="module")
def adult(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The bundled Adult example, generalized, and its release applied to itself."""
    out = tmp_path_factory.mktemp("adult")
    result, caught = _quiet(
        run_generalize,
        GeneralizeSettings.load(
            ADULT_TOML, output=out / "a.csv", report=out / "a.json", html=out / "a.html"
        ),
    )
    applied, applied_caught = _quiet(
        run_apply,
        ApplySettings(
            report_in=str(out / "a.json"),
            input=str(ADULT / "adult.csv"),
            delimiter=";",
            output=str(out / "b.csv"),
            report=str(out / "b.json"),
        ),
    )
    return {
        "dir": out,
        "report": result.report,
        "warnings": caught,
        "applied": applied.report,
        "applied_warnings": applied_caught,
    }


@pytest.fixture(scope="module")
def tarragona(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The bundled Tarragona example (MDAV, k = 3) and a trade-off over k = 3..5."""
    out = tmp_path_factory.mktemp("tarragona")
    result, caught = _quiet(
        run_microaggregate,
        MicroaggregateSettings.load(
            TARRAGONA_TOML, output=str(out / "t.csv"), report=str(out / "t.json")
        ),
    )
    sweep, _ = _quiet(
        run_tradeoff, TradeoffSettings(input=str(REPO / "data" / "sdc" / "Tarragona.csv"), k="3-5")
    )
    return {"dir": out, "report": result.report, "warnings": caught, "tradeoff": sweep.report}


# ------------------------------------------------------- the section on every report


def _check_section(section: dict[str, Any]) -> None:
    assert set(section) == RISK_KEYS
    assert set(section["classes"]) == {"count", "smallest", "sizes"}
    assert set(section["prosecutor"]) == {"highest", "average", "records_at_risk"}
    assert set(section["prosecutor"]["records_at_risk"]) >= {"0.2", "0.1", "0.05"}
    assert {"highest", "average", "records_at_risk"} <= set(section["journalist"])
    assert set(section["marketer"]) == {"average"}


def test_every_report_has_the_documented_risk_keys(
    adult: dict[str, Any], tarragona: dict[str, Any]
) -> None:
    for report in (adult["report"], adult["applied"], tarragona["report"]):
        _check_section(report["risk"])
        # generalize and apply name their quasi-identifiers: those are the attacker's knowledge
        assert report["attacker_knowledge"] == (
            KNOWLEDGE_DEFAULT if report["command"] == "microaggregate" else KNOWLEDGE_QI
        )
        assert isinstance(report["risk_warnings"], list)
        assert json.loads(json.dumps(report)) == report  # all of it is JSON
    written = json.loads((adult["dir"] / "a.json").read_text())
    assert written["risk"] == adult["report"]["risk"]
    sweep = tarragona["tradeoff"]
    assert sorted(sweep["risk_by_k"]) == ["3", "4", "5"]
    for point in sweep["points"]:
        section = sweep["risk_by_k"][str(point["k"])]
        _check_section(section)
        assert point["prosecutor_highest"] == section["prosecutor"]["highest"]
        assert point["prosecutor_average"] == section["prosecutor"]["average"]


def test_the_release_of_the_example_is_unchanged(
    adult: dict[str, Any], tarragona: dict[str, Any]
) -> None:
    """Roles only add declarations: the examples' releases are the same bytes as before."""
    base = Path("/tmp/base_out")
    if not base.exists():
        pytest.skip("the baseline releases of this round are not on this machine")
    assert (adult["dir"] / "a.csv").read_bytes() == (base / "adult_k5.csv").read_bytes()
    assert (tarragona["dir"] / "t.csv").read_bytes() == (base / "tarragona_k3.csv").read_bytes()


# --------------------------------------------------------- independent recomputation


def _by_pandas(release: pd.DataFrame, attacker: list[str]) -> dict[str, Any]:
    """Prosecutor risk (ARX 3.9) of a table, by a plain groupby: a record's risk is 1 / f_c."""
    suppressed = (release[attacker] == "*").all(axis=1)
    kept = release.loc[~suppressed]
    sizes = kept.groupby(attacker, dropna=False).size().to_numpy()
    per_record = np.repeat(1.0 / sizes, sizes)
    n = int(sizes.sum())
    return {
        "suppressed": int(suppressed.sum()),
        "records": n,
        "count": int(sizes.size),
        "smallest": int(sizes.min()),
        "highest": float(per_record.max()),
        "average": float(sizes.size / n),
        "at_risk": {t: float((per_record > t).mean()) for t in (0.2, 0.1, 0.05)},
        "uniques": float((sizes == 1).sum() / n),
        "sizes": {
            str(s): int(c) for s, c in zip(*np.unique(sizes, return_counts=True), strict=True)
        },
    }


@pytest.mark.parametrize("which", ["adult", "tarragona"])
def test_prosecutor_figures_equal_a_pandas_groupby_of_the_written_release(
    which: str, adult: dict[str, Any], tarragona: dict[str, Any]
) -> None:
    run = adult if which == "adult" else tarragona
    release = pd.read_csv(
        run["dir"] / ("a.csv" if which == "adult" else "t.csv"), dtype=str, keep_default_na=False
    )
    risk = run["report"]["risk"]
    attacker = [c for c in release.columns if c != "salary-class"]
    assert risk["attacker_columns"] == attacker
    expected = _by_pandas(release, attacker)
    assert risk["suppressed"] == expected["suppressed"]
    assert risk["records"] == expected["records"]
    assert risk["classes"]["count"] == expected["count"]
    assert risk["classes"]["smallest"] == expected["smallest"]
    assert risk["classes"]["sizes"] == expected["sizes"]
    assert risk["prosecutor"]["highest"] == pytest.approx(expected["highest"], rel=1e-12)
    assert risk["prosecutor"]["average"] == pytest.approx(expected["average"], rel=1e-12)
    for t, share in expected["at_risk"].items():
        assert risk["prosecutor"]["records_at_risk"][str(t)] == pytest.approx(share, abs=1e-12)
    assert risk["sample_uniques"] == pytest.approx(expected["uniques"], abs=1e-12)


def test_the_written_out_definitions_agree_on_the_adult_release(adult: dict[str, Any]) -> None:
    """k, l and t class by class on the released file (suppressed records left out, as ARX)."""
    release = pd.read_csv(adult["dir"] / "a.csv", dtype=str, keep_default_na=False)
    kept = release.loc[~(release[QIS] == "*").all(axis=1)].reset_index(drop=True)
    risk = adult["report"]["risk"]
    args = (kept, QIS, "salary-class")
    assert reference.smallest_class(*args) == risk["classes"]["smallest"] == 5
    figures = risk["sensitive"]["salary-class"]
    assert reference.distinct_l(*args) == figures["distinct_l"] == 1
    assert reference.equal_t(*args) == pytest.approx(figures["t_equal"], rel=1e-9)
    assert reference.entropy_l(*args) == pytest.approx(figures["entropy_l"], rel=1e-12)
    # the 207 suppressed records, taken as one class of '*', do not lower k
    assert reference.smallest_class(release, QIS, "salary-class") == 5


def test_tradeoff_risk_per_k_equals_a_groupby_of_each_masked_table(
    tarragona: dict[str, Any],
) -> None:
    from anonlab.io import read_table
    from anonlab.microaggregation import microaggregate

    frame = read_table(REPO / "data" / "sdc" / "Tarragona.csv")
    for point in tarragona["tradeoff"]["points"]:
        masked = microaggregate(frame, "all-numeric", point["k"]).masked.astype(str)
        expected = _by_pandas(masked, list(masked.columns))
        assert point["prosecutor_highest"] == pytest.approx(expected["highest"], rel=1e-12)
        assert point["prosecutor_average"] == pytest.approx(expected["average"], rel=1e-12)


# ---------------------------------------------------------------------- warnings


def test_a_sensitive_attribute_of_one_value_in_a_class_warns(adult: dict[str, Any]) -> None:
    assert adult["warnings"] == adult["report"]["risk_warnings"]
    assert adult["warnings"] == [
        "sensitive attribute 'salary-class': in 26 class(es), 393 records, every record has "
        "the same value (distinct l = 1), so the attacker learns it"
    ]
    assert adult["applied_warnings"] == adult["warnings"]  # the same table, the same risk


def test_the_warning_points_at_the_callers_line(tmp_path: Path) -> None:
    settings = GeneralizeSettings.load(
        ADULT_TOML, output=tmp_path / "a.csv", report=tmp_path / "a.json"
    )
    with pytest.warns(ReleaseRiskWarning, match="distinct l = 1") as caught:
        run_generalize(settings)
    assert caught[0].filename == __file__


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    (tmp_path / "t.csv").write_text(
        "name,age,zip,extra\nann,31,47677,u\nbob,32,47602,v\ncy,33,47678,w\ndee,34,47605,x\n"
    )
    (tmp_path / "age.csv").write_text("31;30-34;*\n32;30-34;*\n33;30-34;*\n34;30-34;*\n")
    (tmp_path / "zip.csv").write_text(
        "47677;4767*;*\n47602;4760*;*\n47678;4767*;*\n47605;4760*;*\n"
    )
    return tmp_path


def _tiny(t: Path, **values: Any) -> GeneralizeSettings:
    return GeneralizeSettings.load(
        None,
        input=t / "t.csv",
        qi={"age": t / "age.csv", "zip": t / "zip.csv"},
        identifying="name",
        k=2,
        **values,
    )


def test_each_of_the_three_conditions_warns(tiny: Path) -> None:
    # classes of 2: highest prosecutor risk 0.5 > 0.2
    with pytest.warns(ReleaseRiskWarning) as caught:
        result = run_generalize(_tiny(tiny, insensitive="extra", attacker_columns="age,zip"))
    messages = [str(w.message) for w in caught]
    assert messages == [
        "highest prosecutor re-identification risk is 0.5, above the maximum "
        "0.2, for an attacker who knows age, zip"
    ]
    assert result.report["attacker_knowledge"] == KNOWLEDGE_GIVEN
    assert result.report["risk"]["attacker_columns"] == ["age", "zip"]
    # an attacker who also reads the insensitive column: every record is unique
    with pytest.warns(ReleaseRiskWarning) as caught:
        run_generalize(
            _tiny(tiny, insensitive="extra", max_risk=1.0, attacker_columns="age,zip,extra")
        )
    assert [str(w.message) for w in caught] == [
        "4 record(s) are unique on the attacker's columns (age, zip, extra)"
    ]
    # a sensitive attribute: no class of one value here, so k = 2 with max_risk 0.5 is quiet
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReleaseRiskWarning)
        result = run_generalize(_tiny(tiny, sensitive="extra", max_risk=0.5))
    assert result.report["risk_warnings"] == []
    assert result.report["risk"]["sensitive"]["extra"]["distinct_l"] == 2


def test_microaggregate_warns_at_one_over_k(tarragona: dict[str, Any], tmp_path: Path) -> None:
    assert tarragona["warnings"] == [
        "highest prosecutor re-identification risk is 0.3333, above the maximum 0.2, for an "
        "attacker who knows " + ", ".join(tarragona["report"]["risk"]["attacker_columns"])
    ]
    settings = MicroaggregateSettings.load(
        TARRAGONA_TOML,
        output=str(tmp_path / "t.csv"),
        report=str(tmp_path / "t.json"),
        max_risk=0.34,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReleaseRiskWarning)
        assert run_microaggregate(settings).report["risk_warnings"] == []


def test_fail_on_risk_raises_and_writes_nothing(tiny: Path) -> None:
    before = _files(tiny)
    settings = _tiny(
        tiny,
        insensitive="extra",
        fail_on_risk=True,
        output=tiny / "o.csv",
        report=tiny / "o.json",
        html=tiny / "o.html",
        attacker_columns="age,zip,extra",
    )
    with pytest.warns(ReleaseRiskWarning), pytest.raises(ReleaseRiskError) as caught:
        run_generalize(settings)
    assert caught.value.parameter == "fail_on_risk"
    assert str(caught.value).startswith(
        "fail_on_risk is set and the release drew 2 risk warnings, the first: highest prosecutor"
    )
    assert _files(tiny) == before


@pytest.mark.parametrize("command", ["generalize", "apply", "microaggregate"])
def test_fail_on_risk_on_the_command_line_exits_3_writing_nothing(command: str, tiny: Path) -> None:
    if command == "generalize":
        args = [
            "generalize",
            str(tiny / "t.csv"),
            "--qi",
            f"age={tiny / 'age.csv'}",
            "--qi",
            f"zip={tiny / 'zip.csv'}",
            "--identifying",
            "name",
            "--insensitive",
            "extra",
            "--k",
            "2",
        ]
    elif command == "apply":
        run_generalize(
            _tiny(
                tiny,
                insensitive="extra",
                max_risk=1.0,
                attacker_columns="age,zip",
                report=tiny / "r.json",
            )
        )
        args = ["apply", str(tiny / "r.json"), str(tiny / "t.csv")]
    else:
        shutil.copy(REPO / "data" / "sdc" / "Tarragona.csv", tiny / "tarragona.csv")
        args = ["microaggregate", str(tiny / "tarragona.csv"), "--k", "3"]
    args += [
        "--fail-on-risk",
        "--output",
        str(tiny / "o.csv"),
        "--report",
        str(tiny / "o.json"),
        "--html",
        str(tiny / "o.html"),
    ]
    before = _files(tiny)
    result = runner.invoke(app, args)
    assert result.exit_code == 3, result.output
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("Error: --fail-on-risk is set and the release drew")
    assert lines[:-1] and all(line.startswith("Warning: ") for line in lines[:-1])
    assert "nothing was written" in lines[-1]
    assert _files(tiny) == before


def test_the_cli_shows_each_warning_as_one_line_and_in_the_html(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "generalize",
            "--config",
            str(ADULT_TOML),
            "--output",
            str(tmp_path / "a.csv"),
            "--report",
            str(tmp_path / "a.json"),
            "--html",
            str(tmp_path / "a.html"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "Warning: sensitive attribute 'salary-class': in 26 class(es), 393 records, every "
        "record has the same value (distinct l = 1), so the attacker learns it"
    ]
    page = (tmp_path / "a.html").read_text()
    summary = page.split('id="summary"', 1)[1]
    warning = summary.index("Warning: sensitive attribute &#39;salary-class&#39;")
    assert warning < summary.index("<p>30,162 records of adult.csv")


def test_no_warning_and_fail_on_risk_passes_when_the_release_is_safe(tmp_path: Path) -> None:
    """Adult at k = 5 with salary-class dropped: highest risk 1/5, no unique, nothing sensitive."""
    result = runner.invoke(
        app,
        [
            "generalize",
            "--config",
            str(ADULT_TOML),
            "--sensitive",
            "",
            "--identifying",
            "salary-class",
            "--fail-on-risk",
            "--output",
            str(tmp_path / "a.csv"),
            "--report",
            str(tmp_path / "a.json"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output == "" and (tmp_path / "a.csv").exists()


# ------------------------------------------------------------- risk parameters


def test_risk_parameters_reach_the_measurement(tmp_path: Path) -> None:
    rows = [f"{i},{(7 * i) % 11},{(5 * i) % 13},{10 + i % 4}" for i in range(24)]
    (tmp_path / "n.csv").write_text("id,a,b,w\n" + "\n".join(rows) + "\n")
    result, _ = _quiet(
        run_microaggregate,
        MicroaggregateSettings(
            input=str(tmp_path / "n.csv"),
            k=3,
            identifying=["id"],
            insensitive=["w"],
            weights="w",
            risk_threshold=[0.3, 0.01],
        ),
    )
    risk = result.report["risk"]
    assert risk["attacker_columns"] == ["a", "b"]  # the weights column is not known
    assert risk["individual_risk"]["weighted"] is True
    assert list(risk["prosecutor"]["records_at_risk"]) == ["0.2", "0.1", "0.05", "0.3", "0.01"]
    assert risk["population_uniques"]["population_from"] == "weights"
    result, _ = _quiet(
        run_microaggregate,
        MicroaggregateSettings(
            input=str(tmp_path / "n.csv"),
            k=3,
            identifying=["id"],
            insensitive=["w"],
            population_size=2400,
        ),
    )
    assert result.report["risk"]["population_uniques"]["population_size"] == 2400
    assert result.report["risk"]["journalist"]["population"] == "population_size"


def test_a_sensitive_hierarchy_gives_hierarchical_t(tmp_path: Path) -> None:
    result, _ = _quiet(
        run_generalize,
        GeneralizeSettings.load(
            ADULT_TOML,
            output=tmp_path / "a.csv",
            report=tmp_path / "a.json",
            sensitive_hierarchies={"salary-class": ADULT / "hierarchy_salary-class.csv"},
        ),
    )
    figures = result.report["risk"]["sensitive"]["salary-class"]
    assert figures["t_hierarchical"] is not None
    assert 0 < figures["t_hierarchical"] <= figures["t_equal"] + 1e-12
    assert "hierarchy:salary-class" in result.report["inputs"]


def test_risk_settings_name_released_columns_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(
        AnonlabError, match="attacker_columns names columns the release does not have: salary"
    ) as caught:
        run_generalize(
            GeneralizeSettings.load(
                ADULT_TOML,
                output=tmp_path / "a.csv",
                report=tmp_path / "a.json",
                attacker_columns="age,salary",
            )
        )
    assert caught.value.parameter == "attacker_columns"
    with pytest.raises(AnonlabError) as caught:
        GeneralizeSettings.load(ADULT_TOML, max_risk=0)
    assert caught.value.parameter == "max_risk"
    with pytest.raises(AnonlabError) as caught:
        GeneralizeSettings.load(ADULT_TOML, risk_threshold="0.1,2")
    assert caught.value.parameter == "risk_threshold"
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------- suppression


@pytest.mark.parametrize(
    ("given", "fraction"),
    [("1%", 0.01), (" 2.5 % ", 0.025), (0.01, 0.01), ("0.01", 0.01), (0, 0.0), ("0%", 0.0)],
)
def test_suppression_takes_a_fraction_or_a_percentage(given: Any, fraction: float) -> None:
    assert parse_suppression(given) == fraction
    assert (
        GeneralizeSettings(input="t.csv", qi={"a": "h.csv"}, suppression=given).suppression
        == fraction
    )


@pytest.mark.parametrize("given", [1, "1", 1.5, "100.5%", "150%", -0.01, "-1%", "one", True])
def test_suppression_of_one_or_more_is_refused(given: Any) -> None:
    with pytest.raises(AnonlabError, match=r"write 0\.01 or 1%") as caught:
        GeneralizeSettings(input="t.csv", qi={"a": "h.csv"}, suppression=given)
    assert caught.value.parameter == "suppression"


def test_toml_percentage_and_the_default_metric(tmp_path: Path) -> None:
    config = tmp_path / "g.toml"
    config.write_text('input = "t.csv"\nsuppression = "1%"\n[qi]\na = "h.csv"\n')
    settings = GeneralizeSettings.load(config)
    assert settings.suppression == 0.01
    assert settings.metric == "precision_with_suppression"  # counts suppressed records
    assert GeneralizeSettings.load(config, suppression=0).metric == "precision"
    assert GeneralizeSettings.load(config, metric="entropy").metric == "entropy"


def test_one_percent_on_the_command_line_is_the_fraction(tmp_path: Path) -> None:
    outputs = {}
    for spelled in ("1%", "0.01"):
        out = tmp_path / f"{spelled}.json"
        result = runner.invoke(
            app,
            [
                "generalize",
                "--config",
                str(ADULT_TOML),
                "--suppression",
                spelled,
                "--output",
                str(tmp_path / f"{spelled}.csv"),
                "--report",
                str(out),
                "--quiet",
            ],
        )
        assert result.exit_code == 0, result.output
        outputs[spelled] = json.loads(out.read_text())
    assert outputs["1%"]["suppression_limit"] == outputs["0.01"]["suppression_limit"] == 0.01
    assert (tmp_path / "1%.csv").read_bytes() == (tmp_path / "0.01.csv").read_bytes()
    result = runner.invoke(
        app,
        [
            "generalize",
            "--config",
            str(ADULT_TOML),
            "--suppression",
            "1",
            "--output",
            str(tmp_path / "x.csv"),
            "--report",
            str(tmp_path / "x.json"),
        ],
    )
    assert result.exit_code == 2
    assert result.output.strip() == (
        "Error: --suppression 1 is ambiguous (1% or 100%?): write "
        "0.01 or 1% for one percent, or 100% to let every record "
        "be suppressed"
    )
    assert not (tmp_path / "x.csv").exists()
