"""The hierarchy builders a custodian uses on a census table: taxonomy, date, the view, show.

Runs on a generated Wage-like table (:mod:`wage_like`): nominal ``race``,
``maritl`` and ``education``, an ``interviewed`` date. Every builder's
output must load as a hierarchy and serve ``generalize``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import anonlab
from anonlab.cli.app import app
from anonlab.errors import AnonlabError
from anonlab.hierarchy import Hierarchy
from anonlab.hierarchy_date import date_hierarchy, date_label
from anonlab.hierarchy_taxonomy import parse_group_flags, read_taxonomy, taxonomy_hierarchy
from anonlab.hierarchy_view import view_hierarchy
from anonlab.runs.hierarchy import (
    DateHierarchySettings,
    GroupingHierarchySettings,
    HierarchyWarning,
    RedactionHierarchySettings,
    ShowHierarchySettings,
    TaxonomyHierarchySettings,
    run_hierarchy,
    run_show,
)
from wage_like import EDUCATION, MARITL, RACE, wage_like, write_wage_like

REPO = Path(__file__).resolve().parents[1]
CENSUS = REPO / "examples" / "census"
runner = CliRunner()

RACE_GROUPS = [
    "1:White=1. White",
    "1:Black=2. Black",
    "1:Other=3. Asian,4. Other",
    "2:White=White",
    "2:Non-white=Black,Other",
]
RACE_ROWS = [
    ["1. White", "White", "White", "*"],
    ["2. Black", "Black", "Non-white", "*"],
    ["3. Asian", "Other", "Non-white", "*"],
    ["4. Other", "Other", "Non-white", "*"],
]


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


@pytest.fixture()
def wage(tmp_path: Path) -> Path:
    """The Wage-like table as a CSV file in a fresh folder."""
    return write_wage_like(tmp_path / "wage.csv")


def _rows(path: Path) -> list[list[str]]:
    return [list(r) for r in Hierarchy.from_csv(path).rows]


def _refused(args: list[str], folder: Path, message: str) -> None:
    """One ``Error:`` line holding ``message``, exit code 2, nothing written."""
    before = sorted(folder.iterdir())
    code, text = _run(args)
    assert code == 2, text
    assert text.startswith("Error: ") and len(text.strip().splitlines()) == 1, text
    assert message in text, text
    assert sorted(folder.iterdir()) == before


def test_shipped_wage_table_is_the_generated_one(tmp_path: Path) -> None:
    assert write_wage_like(tmp_path / "w.csv").read_bytes() == (CENSUS / "wage.csv").read_bytes()


# ----------------------------------------------------------------------------- taxonomy


def test_taxonomy_from_groups_writes_a_tree_and_shows_it(wage: Path) -> None:
    out = wage.parent / "race.csv"
    code, text = _run(
        [
            "hierarchy",
            "taxonomy",
            str(wage),
            "--column",
            "race",
            *[x for g in RACE_GROUPS for x in ("--group", g)],
            "--output",
            str(out),
        ]
    )
    assert code == 0, text
    assert _rows(out) == RACE_ROWS
    counts = wage_like()["race"].value_counts()
    assert text.startswith(f"wrote {out}: taxonomy hierarchy of 'race', 4 values, 4 levels")
    assert f"Non-white: {len(wage_like()) - counts['1. White']}" in text
    assert f"1. White: {counts['1. White']}" in text
    assert "Warning" not in text


def test_taxonomy_file_formats_agree(wage: Path) -> None:
    """The shipped race mapping as CSV, and the same as TOML and JSON, give one hierarchy."""
    levels = read_taxonomy(CENSUS / "race.csv")
    assert levels == parse_group_flags(RACE_GROUPS)
    toml = wage.parent / "race.toml"
    toml.write_text(
        '[[levels]]\nWhite = ["1. White"]\nBlack = ["2. Black"]\n'
        'Other = ["3. Asian", "4. Other"]\n[[levels]]\nWhite = ["White"]\n'
        '"Non-white" = ["Black", "Other"]\n'
    )
    as_json = wage.parent / "race.json"
    as_json.write_text(json.dumps(levels))  # the bare list of levels
    for mapping in (CENSUS / "race.csv", toml, as_json):
        out = wage.parent / f"h_{mapping.suffix[1:]}.csv"
        code, text = _run(
            [
                "hierarchy",
                "taxonomy",
                str(wage),
                "--column",
                "race",
                "--mapping",
                str(mapping),
                "--output",
                str(out),
                "--quiet",
            ]
        )
        assert code == 0 and text == "", text
        assert _rows(out) == RACE_ROWS


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        (
            ["1:White=1. White", "1:Other=2. Black,3. Asian"],
            "level 1 of the taxonomy puts 1 of the column's values in no group: '4. Other'",
        ),
        (
            ["1:White=1. White,2. Black", "1:Other=2. Black,3. Asian,4. Other"],
            "'2. Black' is in group 'White' and in group 'Other' of level 1",
        ),
        (
            ["1:White=1. White", "1:Other=2. Black,3. Asian,4. Other", "2:Any=White"],
            "level 2 of the taxonomy puts 1 of the groups of level 1 in no group: 'Other'",
        ),
        (
            ["1:White=1. White", "1:Other=2. Black,3. Asian,4. Other", "2:Any=White,Others"],
            "group 'Any' of level 2 lists 'Others', which is no group of level 1",
        ),
        (["1:White=1. White", "3:Other=2. Black"], "--group: no group of level 2"),
        (["White=1. White"], "--group: each is LEVEL:LABEL=V1,V2,..."),
        (["1:A=1. White", "1:A=2. Black"], "--group: group 'A' of level 1 is given twice"),
        (["1:*=1. White,2. Black,3. Asian,4. Other", "2:All=*"], "group '*' at level 1"),
    ],
)
def test_taxonomy_refusals(wage: Path, groups: list[str], message: str) -> None:
    _refused(
        [
            "hierarchy",
            "taxonomy",
            str(wage),
            "--column",
            "race",
            *[x for g in groups for x in ("--group", g)],
            "--output",
            str(wage.parent / "h.csv"),
        ],
        wage.parent,
        message,
    )


def test_taxonomy_needs_one_source_and_readable_files(wage: Path) -> None:
    base = [
        "hierarchy",
        "taxonomy",
        str(wage),
        "--column",
        "race",
        "--output",
        str(wage.parent / "h.csv"),
    ]
    _refused(base, wage.parent, "give the taxonomy as --mapping FILE or as --group")
    bad = wage.parent / "bad.csv"
    bad.write_text("group,member\nWhite,1. White\n")
    _refused([*base, "--mapping", str(bad)], wage.parent, "needs the header line level,group,")
    other = wage.parent / "m.yaml"
    other.write_text("x")
    _refused([*base, "--mapping", str(other)], wage.parent, "is not .toml, .json or .csv")


def test_taxonomy_keeps_missing_values_and_a_given_top() -> None:
    """A missing value keeps '' up to '*'; a last level '*' is the top, not added twice."""
    frame = pd.DataFrame({"race": ["1. White", None, "2. Black"]})
    levels = [{"W": ["1. White"], "B": ["2. Black"]}, {"*": ["W", "B"]}]
    hierarchy = taxonomy_hierarchy(frame["race"], levels)
    assert [list(r) for r in hierarchy.rows] == [
        ["1. White", "W", "*"],
        ["2. Black", "B", "*"],
        ["", "", "*"],
    ]


# ----------------------------------------------------------------------------- date


def test_date_labels_follow_the_calendar() -> None:
    ts = pd.Timestamp("2009-08-14 10:30")
    assert [date_label(ts, lv) for lv in ("day", "month", "quarter", "year", "decade")] == [
        "2009-08-14",
        "2009-08",
        "2009-Q3",
        "2009",
        "2000-2009",
    ]
    hierarchy = date_hierarchy(["2011-02-03 08:00", "1999-12-31 23:59", None])
    assert [list(r) for r in hierarchy.rows] == [
        ["1999-12-31 23:59", "1999-12-31", "1999-12", "1999-Q4", "1999", "1990-1999", "*"],
        ["2011-02-03 08:00", "2011-02-03", "2011-02", "2011-Q1", "2011", "2010-2019", "*"],
        ["", "", "", "", "", "", "*"],
    ]


def test_date_builder_on_the_census_table(wage: Path) -> None:
    out = wage.parent / "interviewed.csv"
    code, text = _run(
        [
            "hierarchy",
            "date",
            str(wage),
            "--column",
            "interviewed",
            "--levels",
            "month,quarter,year",
            "--output",
            str(out),
        ]
    )
    assert code == 0, text
    rows = _rows(out)
    dates = sorted(set(wage_like()["interviewed"]))
    assert [r[0] for r in rows] == dates
    assert all(r[1] == r[0][:7] and r[3] == r[0][:4] and r[4] == "*" for r in rows)
    assert f"wrote {out}: date hierarchy of 'interviewed', {len(dates)} values, 5 levels" in text
    assert "Warning" not in text


def test_date_builder_with_a_format(tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    table.write_text("born\n31/12/1985\n01/02/1990\n01/02/1985\n01/02/1987\n")
    settings = DateHierarchySettings.load(
        None,
        input=table,
        column="born",
        levels="year,decade",
        date_format="%d/%m/%Y",
        output=tmp_path / "h.csv",
    )
    run_hierarchy(settings)
    assert _rows(tmp_path / "h.csv") == [
        ["01/02/1985", "1985", "1980-1989", "*"],
        ["31/12/1985", "1985", "1980-1989", "*"],
        ["01/02/1987", "1987", "1980-1989", "*"],
        ["01/02/1990", "1990", "1990-1999", "*"],
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "--format not given: 2 of 3 values do not parse as dates: 'soon', 'n/a'"),
        (["--format", "%Y-%m-%d"], "--format '%Y-%m-%d': 2 of 3 values do not parse"),
        (["--levels", "year,month"], "--levels must go from finer to coarser"),
        (["--levels", "week"], "--levels take some of day,month,quarter,year,decade"),
    ],
)
def test_date_refusals(tmp_path: Path, extra: list[str], message: str) -> None:
    table = tmp_path / "t.csv"
    table.write_text("when\n2004-05-06\nsoon\nn/a\n")
    _refused(
        [
            "hierarchy",
            "date",
            str(table),
            "--column",
            "when",
            *extra,
            "--output",
            str(tmp_path / "h.csv"),
        ],
        tmp_path,
        message,
    )


# ----------------------------------------------------------------------------- warnings


def test_repeated_levels_warn(wage: Path) -> None:
    """--sizes 1,5 repeats level 0; the default date levels end in a decade that repeats
    nothing but '*' on 2003-2009. The file is written all the same."""
    order = ",".join(EDUCATION)
    code, text = _run(
        [
            "hierarchy",
            "grouping",
            str(wage),
            "--column",
            "education",
            "--order",
            order,
            "--sizes",
            "1,5",
            "--output",
            str(wage.parent / "e.csv"),
        ]
    )
    assert code == 0, text
    assert "Warning: level 1 repeats level 0 (5 groups each): it generalizes nothing" in text
    code, text = _run(
        [
            "hierarchy",
            "date",
            str(wage),
            "--column",
            "interviewed",
            "--output",
            str(wage.parent / "d.csv"),
            "--quiet",
        ]
    )
    assert code == 0, text
    assert text.strip() == (
        "Warning: level 5 repeats level 4 (1 group each): it generalizes "
        "nothing; leave it out (e.g. a group size of 1, or a width below "
        "the spacing of the values)"
    )


def test_redaction_of_free_text_warns(wage: Path) -> None:
    settings = RedactionHierarchySettings.load(
        None, input=wage, column="region", output=wage.parent / "r.csv"
    )
    with pytest.warns(HierarchyWarning, match="made 19 levels: is it a code column"):
        result = run_hierarchy(settings)
    assert (wage.parent / "r.csv").exists() and result.report["levels"] == 19
    table = wage.parent / "t.csv"
    table.write_text("job\nnurse\nsoftware engineer\n")
    code, text = _run(
        [
            "hierarchy",
            "redaction",
            str(table),
            "--column",
            "job",
            "--output",
            str(wage.parent / "j.csv"),
            "--quiet",
        ]
    )
    assert code == 0, text
    assert text.splitlines() == [
        "Warning: values of 'job' have 5 to 17 characters: redaction pads them to one length, "
        "so a level cuts different parts of different values; for nominal values use "
        "'hierarchy taxonomy'",
        "Warning: redaction of 'job' made 18 levels: is it a code column? for free text or "
        "nominal values use 'hierarchy taxonomy'",
        "Warning: levels 1 to 16 repeat level 0 (2 groups each): it generalizes nothing; leave "
        "it out (e.g. a group size of 1, or a width below the spacing of the values)",
    ]


def test_redaction_of_codes_does_not_warn(wage: Path) -> None:
    code, text = _run(
        [
            "hierarchy",
            "redaction",
            str(wage),
            "--column",
            "zip",
            "--output",
            str(wage.parent / "z.csv"),
        ]
    )
    assert code == 0 and "Warning" not in text, text


def test_grouping_refuses_nominal_text_and_points_to_taxonomy(wage: Path) -> None:
    _refused(
        [
            "hierarchy",
            "grouping",
            str(wage),
            "--column",
            "race",
            "--sizes",
            "2",
            "--output",
            str(wage.parent / "g.csv"),
        ],
        wage.parent,
        "--order is needed: column 'race' holds text ('1. White', '2. Black', '3. Asian')",
    )
    with pytest.raises(AnonlabError, match="build 'hierarchy taxonomy'") as caught:
        run_hierarchy(
            GroupingHierarchySettings.load(
                None, input=wage, column="maritl", sizes="2", output=wage.parent / "g.csv"
            )
        )
    assert caught.value.parameter == "order"


# ----------------------------------------------------------------------------- show


def test_show_counts_records_and_names_uncovered_values(wage: Path) -> None:
    hierarchy = wage.parent / "partial.csv"
    hierarchy.write_text("1. White;*\n2. Black;*\n")
    code, text = _run(
        ["hierarchy", "show", str(hierarchy), "--data", str(wage), "--column", "race"]
    )
    assert code == 0, text
    counts = wage_like()["race"].value_counts()
    assert f"1. White: {counts['1. White']}" in text
    absent = [v for v in wage_like()["race"].unique() if v not in ("1. White", "2. Black")]
    assert (
        "2 values of 'race' are not in the hierarchy (generalize would refuse them): "
        + ", ".join(f"'{v}'" for v in absent)
    ) in text
    code, text = _run(["hierarchy", "show", str(hierarchy)])
    assert code == 0 and "largest groups (values)" in text and "*: 2" in text, text


def test_show_refuses_a_column_without_data(wage: Path) -> None:
    _refused(
        ["hierarchy", "show", str(CENSUS / "race.csv"), "--column", "race"],
        wage.parent,
        "--column and data go together",
    )


def test_show_from_python(data_dir: Path) -> None:
    result = anonlab.run(
        ShowHierarchySettings(
            hierarchy=str(data_dir / "adult" / "hierarchy_race.csv"),
            data=str(data_dir / "adult" / "adult.csv"),
            column="race",
            delimiter=";",
        )
    )
    view = result.report["view"]
    assert view["counted"] == "records" and view["uncovered"] == []
    assert [lv["groups"] for lv in view["levels"]] == [5, 1]
    assert view["levels"][1]["largest"] == [{"group": "*", "count": 30162}]
    alone = run_show(
        ShowHierarchySettings.load(None, hierarchy=data_dir / "adult" / "hierarchy_race.csv")
    )
    assert alone.report["view"]["counted"] == "values" and alone.written == []


# ----------------------------------------------------------------------------- API, generalize


def test_taxonomy_from_python_with_run(wage: Path) -> None:
    levels = [{"Never": [MARITL[0]], "Married": [MARITL[1]], "Before": MARITL[2:]}]
    result = anonlab.run(
        TaxonomyHierarchySettings(
            input=str(wage), column="maritl", groups=levels, output=str(wage.parent / "m.csv")
        )
    )
    assert result.report["levels"] == 3 and result.report["values"] == 5
    assert result.report["view"]["levels"][1]["groups"] == 3
    with pytest.raises(AnonlabError, match="give exactly one of them"):
        TaxonomyHierarchySettings(input=str(wage), column="maritl", output="x.csv")


def test_view_counts_by_formula() -> None:
    """A group's count is the sum of its values' records: c(W) = 3, c(O) = 1 + 2."""
    hierarchy = taxonomy_hierarchy(["a", "b", "c"], [{"W": ["a"], "O": ["b", "c"]}])
    view = view_hierarchy(hierarchy, {"a": 3, "b": 1, "c": 2, "z": 9})
    assert view.levels[1].largest == (("W", 3), ("O", 3)) and view.uncovered == ("z",)


def test_every_builder_serves_generalize(wage: Path) -> None:
    """interval, redaction, grouping, taxonomy and date hierarchies of one table, used together."""
    folder = wage.parent
    builds = {
        "age": ["interval", "--widths", "5,10,20"],
        "zip": ["redaction"],
        "education": ["grouping", "--order", ",".join(EDUCATION), "--sizes", "2,4"],
        "race": ["taxonomy", "--mapping", str(CENSUS / "race.csv")],
        "maritl": ["taxonomy", "--mapping", str(CENSUS / "maritl.toml")],
        "interviewed": ["date", "--levels", "month,quarter,year"],
    }
    for column, (kind, *extra) in builds.items():
        code, text = _run(
            [
                "hierarchy",
                kind,
                str(wage),
                "--column",
                column,
                *extra,
                "--output",
                str(folder / f"h_{column}.csv"),
                "--quiet",
            ]
        )
        assert code == 0, text
    code, text = _run(
        [
            "generalize",
            str(wage),
            *[x for c in builds for x in ("--qi", f"{c}={folder / f'h_{c}.csv'}")],
            "--insensitive",
            "jobclass,region,wage",
            "--k",
            "5",
            "--suppression",
            "5%",
            "--output",
            str(folder / "release.csv"),
            "--quiet",
        ]
    )
    assert code == 0, text
    release = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    assert len(release) >= 0.95 * len(wage_like())
    assert set(release["race"]) <= {
        "1. White",
        "2. Black",
        "3. Asian",
        "4. Other",
        "White",
        "Black",
        "Other",
        "Non-white",
        "*",
    } | set(RACE)


def test_custodian_caps_age_with_built_hierarchies(wage: Path) -> None:
    """The census flow of issue 20: nominal and date hierarchies from the builders, age capped
    at level 2 (10-year ranges): the release keeps age in ranges, every record not suppressed."""
    folder = wage.parent
    for column, (kind, *extra) in {
        "age": ["interval", "--widths", "5,10,20"],
        "race": ["taxonomy", *[x for g in RACE_GROUPS for x in ("--group", g)]],
        "maritl": ["taxonomy", "--mapping", str(CENSUS / "maritl.toml")],
        "interviewed": ["date", "--levels", "month,quarter,year"],
    }.items():
        code, text = _run(
            [
                "hierarchy",
                kind,
                str(wage),
                "--column",
                column,
                *extra,
                "--output",
                str(folder / f"h_{column}.csv"),
                "--quiet",
            ]
        )
        assert code == 0, text
    qis = ["age", "race", "maritl", "interviewed"]
    code, text = _run(
        [
            "generalize",
            str(wage),
            *[x for c in qis for x in ("--qi", f"{c}={folder / f'h_{c}.csv'}")],
            "--insensitive",
            "education,jobclass,region,zip,wage",
            "--k",
            "5",
            "--suppression",
            "5%",
            "--max-level",
            "age=2",
            "--output",
            str(folder / "release.csv"),
            "--report",
            str(folder / "r.json"),
            "--quiet",
        ]
    )
    assert code == 0, text
    report = json.loads((folder / "r.json").read_text())
    assert report["transformation"]["age"] <= 2
    release = pd.read_csv(folder / "release.csv", dtype=str, keep_default_na=False)
    suppressed = release["age"] == "*"
    assert suppressed.sum() == report["suppressed_records"] <= 0.05 * len(wage_like())
    assert release.loc[~suppressed, "age"].str.fullmatch(r"\d+-\d+").all()
