"""Every column has a role: a column given none is refused, unless other="insensitive".

The rule lives in one function, :func:`anonlab.dataset.assign_roles`; these
tests run it through every command of the generalization and
microaggregation families (``generalize``, ``apply``, ``microaggregate``,
``tradeoff``), on the command line and from Python.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.dataset import Role, RoleError, assign_roles
from anonlab.errors import AnonlabError
from anonlab.generalize import Generalizer, apply_transformation
from anonlab.hierarchy import Hierarchy
from anonlab.runs.apply import run_apply
from anonlab.runs.generalize import run_generalize
from anonlab.runs.generalize_settings import ApplySettings, GeneralizeSettings
from anonlab.runs.microaggregate import (
    MicroaggregateSettings,
    TradeoffSettings,
    run_microaggregate,
    run_tradeoff,
)

# the tables made here are small and their releases risky: the warnings are tested elsewhere
pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")
runner = CliRunner()

GENERALIZE_NO_ROLE = (
    "Error: column extra is given no role: name it in --qi, --identifying, "
    "--sensitive or --insensitive, or pass --other insensitive to release it "
    "unchanged"
)
MICRO_NO_ROLE = (
    "Error: column note is given no role: name it in --columns, --nominal, "
    "--ordinal, --identifying, --sensitive or --insensitive, or pass --other "
    "insensitive to release it unchanged"
)


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden temporary files too) with its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _assert_refused(folder: Path, args: list[str], message: str) -> None:
    """One line ``message``, exit code 2, and not one file written or changed."""
    before = _files(folder)
    code, text = _run(args)
    assert code == 2, text
    assert text.strip() == message
    assert _files(folder) == before


@pytest.fixture()
def people(tmp_path: Path) -> Path:
    """A table with an identifier, two QIs and one more column, and the QIs' hierarchies."""
    (tmp_path / "t.csv").write_text(
        "name,age,zip,extra\nann,31,47677,u\nbob,32,47602,v\ncy,33,47678,w\ndee,34,47605,x\n"
    )
    (tmp_path / "age.csv").write_text("31;30-34;*\n32;30-34;*\n33;30-34;*\n34;30-34;*\n")
    (tmp_path / "zip.csv").write_text(
        "47677;4767*;*\n47602;4760*;*\n47678;4767*;*\n47605;4760*;*\n"
    )
    return tmp_path


def _generalize_args(t: Path, *extra: str) -> list[str]:
    return [
        "generalize",
        str(t / "t.csv"),
        "--qi",
        f"age={t / 'age.csv'}",
        "--qi",
        f"zip={t / 'zip.csv'}",
        "--identifying",
        "name",
        "--k",
        "2",
        "--output",
        str(t / "out.csv"),
        "--report",
        str(t / "out.json"),
        "--html",
        str(t / "out.html"),
        "--quiet",
        *extra,
    ]


@pytest.fixture()
def numbers(tmp_path: Path) -> Path:
    """Numeric columns a, b, a numeric identifier id and a text column note."""
    rows = [f"{i},{(7 * i) % 11},{(5 * i) % 13},n{i % 3}" for i in range(12)]
    (tmp_path / "n.csv").write_text("id,a,b,note\n" + "\n".join(rows) + "\n")
    return tmp_path


# ----------------------------------------------------------- a column without a role


def test_generalize_refuses_a_column_without_a_role(people: Path) -> None:
    _assert_refused(people, _generalize_args(people), GENERALIZE_NO_ROLE)


def test_apply_refuses_a_column_its_report_does_not_know(people: Path) -> None:
    known = pd.read_csv(people / "t.csv", dtype=str).drop(columns="extra")
    known.to_csv(people / "known.csv", index=False)
    code, text = _run(
        [
            "generalize",
            str(people / "known.csv"),
            "--qi",
            f"age={people / 'age.csv'}",
            "--qi",
            f"zip={people / 'zip.csv'}",
            "--identifying",
            "name",
            "--k",
            "2",
            "--report",
            str(people / "r.json"),
            "--quiet",
        ]
    )
    assert code == 0, text
    _assert_refused(
        people,
        [
            "apply",
            str(people / "r.json"),
            str(people / "t.csv"),
            "--output",
            str(people / "a.csv"),
            "--report",
            str(people / "a.json"),
            "--quiet",
        ],
        f"Error: column extra of the table is given no role by report "
        f"'{people / 'r.json'}': give a table with the columns it names, or pass "
        "--other insensitive to release it unchanged",
    )


def test_microaggregate_refuses_a_column_without_a_role(numbers: Path) -> None:
    _assert_refused(
        numbers,
        [
            "microaggregate",
            str(numbers / "n.csv"),
            "--k",
            "3",
            "--identifying",
            "id",
            "--output",
            str(numbers / "o.csv"),
            "--report",
            str(numbers / "o.json"),
            "--quiet",
        ],
        MICRO_NO_ROLE,
    )


def test_tradeoff_refuses_a_column_without_a_role(numbers: Path) -> None:
    _assert_refused(
        numbers,
        [
            "tradeoff",
            str(numbers / "n.csv"),
            "--k",
            "2-3",
            "--identifying",
            "id",
            "--report",
            str(numbers / "r.json"),
            "--plot",
            str(numbers / "r.png"),
            "--quiet",
        ],
        MICRO_NO_ROLE,
    )


def test_the_library_names_parameters_not_flags(people: Path, numbers: Path) -> None:
    settings = GeneralizeSettings.load(
        None,
        input=people / "t.csv",
        qi={"age": people / "age.csv", "zip": people / "zip.csv"},
        identifying="name",
        k=2,
    )
    with pytest.raises(RoleError) as caught:
        run_generalize(settings)
    assert str(caught.value) == (
        "column extra is given no role: name it in qi, identifying, sensitive or insensitive, "
        "or pass other='insensitive' to release it unchanged"
    )
    assert caught.value.columns == ["extra"]
    with pytest.raises(
        RoleError,
        match=r"^column note is given no role: name it in columns, "
        r"nominal, ordinal, identifying",
    ):
        run_microaggregate(
            MicroaggregateSettings(input=str(numbers / "n.csv"), k=3, identifying=["id"])
        )


def test_every_column_without_a_role_is_named_in_one_line(people: Path) -> None:
    frame = pd.read_csv(people / "t.csv", dtype=str)
    with pytest.raises(RoleError) as caught:
        assign_roles(frame.columns, qi=["age"])
    assert str(caught.value).startswith(
        "columns name, zip, extra are given no role: name each in qi"
    )
    assert "\n" not in caught.value.for_flags()


def test_the_python_generalizer_and_apply_need_roles_too(people: Path) -> None:
    frame = pd.read_csv(people / "t.csv", dtype=str)
    hierarchies = {
        "age": Hierarchy.from_csv(people / "age.csv"),
        "zip": Hierarchy.from_csv(people / "zip.csv"),
    }
    with pytest.raises(RoleError, match="column extra is given no role"):
        Generalizer(k=2).fit(frame, hierarchies, identifying=["name"])
    with pytest.raises(RoleError, match="column extra is given no role"):
        apply_transformation(frame, hierarchies, {"age": 1, "zip": 1}, 2, 0.0, identifying=["name"])
    release = Generalizer(k=2).fit_transform(
        frame, hierarchies, identifying=["name"], other="insensitive"
    )
    assert release["extra"].tolist() == frame["extra"].tolist()


# ------------------------------------------------------------------ roles, one each


def test_one_role_per_column_and_names_must_exist() -> None:
    columns = ["a", "b", "c"]
    with pytest.raises(
        AnonlabError,
        match=r"column 'b' is given two roles \(quasi-identifier and "
        r"sensitive\)",
    ):
        assign_roles(columns, qi=["a", "b"], sensitive=["b", "c"])
    with pytest.raises(
        AnonlabError,
        match=r"unknown column 'd' \(given as insensitive\): the "
        r"table has a, b, c",
    ):
        assign_roles(columns, qi=["a"], insensitive=["d"])
    with pytest.raises(AnonlabError) as caught:
        assign_roles(columns, qi=["a"], other="sensitive")
    assert caught.value.parameter == "other"
    assert assign_roles(columns, qi=["a"], identifying=["b"], other="insensitive") == {
        "a": Role.QUASI,
        "b": Role.IDENTIFYING,
        "c": Role.INSENSITIVE,
    }


def test_other_is_insensitive_or_nothing_on_the_command_line(people: Path) -> None:
    _assert_refused(
        people,
        _generalize_args(people, "--other", "sensitive"),
        "Error: --other: Input should be 'insensitive' (got 'sensitive')",
    )


# ------------------------------------------------------- other = "insensitive" works


def test_generalize_other_insensitive_releases_and_lists_the_column(people: Path) -> None:
    code, text = _run(_generalize_args(people, "--other", "insensitive"))
    assert code == 0, text
    release = pd.read_csv(people / "out.csv", dtype=str)
    assert list(release.columns) == ["age", "zip", "extra"]
    assert release["extra"].tolist() == ["u", "v", "w", "x"]
    report = json.loads((people / "out.json").read_text())
    assert report["other"] == "insensitive"
    assert report["insensitive_by_other"] == ["extra"]
    assert report["released_unchanged"] == ["extra"]
    assert report["roles"] == {
        "name": "identifying",
        "age": "quasi",
        "zip": "quasi",
        "extra": "insensitive",
    }
    page = (people / "out.html").read_text()
    assert "Released unchanged because other = &#39;insensitive&#39; was given" in page


def test_toml_other_and_an_explicit_role(people: Path) -> None:
    config = people / "g.toml"
    config.write_text(
        'input = "t.csv"\nidentifying = ["name"]\nother = "insensitive"\n'
        'k = 2\noutput = "o.csv"\nreport = "o.json"\n'
        '[qi]\nage = "age.csv"\nzip = "zip.csv"\n'
    )
    code, text = _run(["generalize", "--config", str(config), "--quiet"])
    assert code == 0, text
    assert json.loads((people / "o.json").read_text())["insensitive_by_other"] == ["extra"]
    # naming the column's role explicitly: nothing is insensitive "by other"
    code, text = _run(
        [
            "generalize",
            "--config",
            str(config),
            "--insensitive",
            "extra",
            "--report",
            str(people / "o2.json"),
            "--output",
            str(people / "o2.csv"),
            "--quiet",
        ]
    )
    assert code == 0, text
    report = json.loads((people / "o2.json").read_text())
    assert report["insensitive_by_other"] == [] and report["released_unchanged"] == ["extra"]


def test_apply_keeps_the_reports_roles_and_other_lets_a_new_column_through(
    people: Path,
) -> None:
    code, text = _run(_generalize_args(people, "--insensitive", "extra"))
    assert code == 0, text
    widened = pd.read_csv(people / "t.csv", dtype=str).assign(note=list("pqrs"))
    widened.to_csv(people / "w.csv", index=False)
    result = run_apply(
        ApplySettings(
            report_in=str(people / "out.json"), input=str(people / "w.csv"), other="insensitive"
        )
    )
    assert result.release is not None
    assert list(result.release.columns) == ["age", "zip", "extra", "note"]
    assert result.report["roles"]["extra"] == "insensitive"  # from the report
    assert result.report["insensitive_by_other"] == ["note"]  # from other
    assert result.report["released_unchanged"] == ["extra", "note"]
    # a column the report gives a role must be in the table
    pd.read_csv(people / "t.csv", dtype=str).drop(columns="extra").to_csv(
        people / "n.csv", index=False
    )
    with pytest.raises(AnonlabError, match=r"^input lacks column extra, which report") as caught:
        run_apply(ApplySettings(report_in=str(people / "out.json"), input=str(people / "n.csv")))
    assert caught.value.parameter == "input"


def test_apply_on_a_report_without_roles_knows_the_columns_its_parameters_name(
    people: Path,
) -> None:
    code, text = _run(_generalize_args(people, "--sensitive", "extra"))
    assert code == 0, text
    old = json.loads((people / "out.json").read_text())
    for key in ("roles", "released_unchanged", "insensitive_by_other", "other"):
        del old[key]  # a report of an earlier version
    (people / "old.json").write_text(json.dumps(old))
    done = run_apply(ApplySettings(report_in=str(people / "old.json"), input=str(people / "t.csv")))
    assert done.report["roles"] == {
        "name": "identifying",
        "age": "quasi",
        "zip": "quasi",
        "extra": "sensitive",
    }
    pd.read_csv(people / "t.csv", dtype=str).assign(more="m").to_csv(people / "m.csv", index=False)
    with pytest.raises(RoleError, match="column more of the table is given no role by report"):
        run_apply(ApplySettings(report_in=str(people / "old.json"), input=str(people / "m.csv")))


def test_microaggregate_roles_drop_identifiers_and_keep_the_rest(numbers: Path) -> None:
    result = run_microaggregate(
        MicroaggregateSettings(
            input=str(numbers / "n.csv"),
            k=3,
            identifying=["id"],
            sensitive=["b"],
            other="insensitive",
            output=str(numbers / "o.csv"),
        )
    )
    original = pd.read_csv(numbers / "n.csv", dtype=str)
    release = pd.read_csv(numbers / "o.csv", dtype=str)
    # all-numeric takes the numeric columns no role names: a only (id is dropped, b sensitive)
    assert result.report["columns"] == ["a"]
    assert list(release.columns) == ["a", "b", "note"]
    assert release["b"].tolist() == original["b"].tolist()
    assert release["note"].tolist() == original["note"].tolist()
    assert release["a"].tolist() != original["a"].tolist()
    assert result.report["roles"] == {
        "id": "identifying",
        "a": "quasi",
        "b": "sensitive",
        "note": "insensitive",
    }
    assert result.report["insensitive_by_other"] == ["note"]
    assert result.report["released_unchanged"] == ["b", "note"]
    assert result.report["verified"] is True


def test_microaggregate_cli_other_insensitive(numbers: Path) -> None:
    code, text = _run(
        [
            "microaggregate",
            str(numbers / "n.csv"),
            "--k",
            "3",
            "--identifying",
            "id",
            "--other",
            "insensitive",
            "--output",
            str(numbers / "o.csv"),
        ]
    )
    assert code == 0, text
    assert "released unchanged (--other insensitive): note" in text
    assert list(pd.read_csv(numbers / "o.csv").columns) == ["a", "b", "note"]


def test_tradeoff_roles_and_other(numbers: Path) -> None:
    result = run_tradeoff(
        TradeoffSettings(
            input=str(numbers / "n.csv"), k="2-3", identifying=["id"], other="insensitive"
        )
    )
    assert result.report["insensitive_by_other"] == ["note"]
    assert result.report["roles"]["id"] == "identifying"
    # the masked columns are a and b; the identifier is neither masked nor known to the attacker
    for section in result.report["risk_by_k"].values():
        assert section["attacker_columns"] == ["a", "b", "note"]
    with pytest.raises(AnonlabError, match="no column to microaggregate") as caught:
        run_tradeoff(
            TradeoffSettings(
                input=str(numbers / "n.csv"),
                k="2-3",
                identifying=["id"],
                sensitive=["a", "b"],
                insensitive=["note"],
            )
        )
    assert caught.value.parameter == "columns"
