"""The web app's Hierarchies step: build, load, preview, edit and save, through the HTTP client.

On Adult (data/adult/adult.csv) and the Wage-like census table: every builder's
preview carries the SHA-256 of the very text that is saved, and the saved file
is byte for byte what ``anonlab hierarchy BUILDER`` writes for the same
settings; the values a hierarchy misses are listed with their records; group
edits keep the hierarchy valid (the library's validation refuses the others).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient
from typer.testing import CliRunner

from anonlab.cli.app import app as cli_app
from anonlab.hierarchy import Hierarchy
from anonlab.ui.app import create_app
from anonlab.ui.security import allowed_hosts
from anonlab.ui.workspace import LoadedTable, Workspace

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO / "data" / "adult" / "adult.csv"
WAGE = REPO / "examples" / "census" / "wage.csv"
TOKEN = "t0ken-for-tests"
runner = CliRunner()

MARITAL_GROUPS = [
    "1:Married=Married-civ-spouse,Married-AF-spouse,Married-spouse-absent",
    "1:Apart=Separated,Divorced,Widowed",
    "1:Never=Never-married",
    "2:Has married=Married,Apart",
    "2:Never married=Never",
]


def _table(workspace: Workspace, table_id: str, path: Path, delimiter: str) -> LoadedTable:
    columns = pd.read_csv(path, sep=delimiter, nrows=0).columns
    read = {"input": str(path), "delimiter": delimiter}
    table = LoadedTable(
        id=table_id, name=path.name, read=read, columns=[{"name": c} for c in columns]
    )
    return workspace.add_table(table)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    (tmp_path / "ws").mkdir()
    ws = Workspace(tmp_path / "ws")
    adult = _table(ws, "t1", ADULT, ";")
    adult.roles = {c["name"]: "insensitive" for c in adult.columns}
    adult.roles.update({"age": "qi", "marital-status": "qi", "education": "qi", "race": "qi"})
    _table(ws, "t2", WAGE, ",")
    return ws


@pytest.fixture
def client(workspace: Workspace) -> Iterator[TestClient]:
    app = create_app(workspace, token=TOKEN, hosts=allowed_hosts("127.0.0.1", 8765))
    with TestClient(app, base_url="http://127.0.0.1:8765") as c:
        c.headers["X-Anonlab-Token"] = TOKEN
        yield c


def _sha(html: str) -> str:
    found = re.search(r'data-sha256="([0-9a-f]{64})"', html)
    assert found, html[:2000]
    return found.group(1)


def _cli(kind: str, path: Path, delimiter: str, column: str, out: Path, *flags: str) -> bytes:
    args = ["hierarchy", kind, str(path), "--delimiter", delimiter, "--column", column]
    result = runner.invoke(cli_app, [*args, *flags, "--output", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    return out.read_bytes()


def _build_and_save(client: TestClient, table: str, form: Mapping[str, object]) -> str:
    """Preview the form, use it, save it; the preview's digest."""
    reply = client.post(f"/hierarchies/{table}/preview", data=form)
    assert reply.status_code == 200
    digest = _sha(reply.text)
    assert client.post(f"/hierarchies/{table}/build", data=form).status_code == 200
    column = str(form["column"])
    assert client.post(f"/hierarchies/{table}/save", data={"column": column}).status_code == 200
    return digest


def test_a_request_without_the_token_gets_403(workspace: Workspace) -> None:
    app = create_app(workspace, token=TOKEN, hosts=allowed_hosts("127.0.0.1", 8765))
    with TestClient(app, base_url="http://127.0.0.1:8765") as c:
        for reply in (
            c.get("/hierarchies"),
            c.get("/hierarchies/t1?column=age"),
            c.post("/hierarchies/t1/preview", data={"column": "age", "builder": "redaction"}),
            c.get("/hierarchies/t1/download?column=age"),
        ):
            assert reply.status_code == 403
            assert "20-24" not in reply.text and "Married" not in reply.text
        assert c.get("/static/hierarchies.js").status_code == 403


def test_the_overview_lists_the_quasi_identifiers(client: TestClient) -> None:
    page = client.get("/hierarchies").text
    assert "/hierarchies/t1?column=marital-status" in page
    assert "/hierarchies/t1?column=sex" not in page  # not a quasi-identifier
    assert "/hierarchies/t2?column=zip" in page  # no roles yet: every column
    only = client.get("/hierarchies?table=t2").text
    assert "/hierarchies/t1?" not in only and "/hierarchies/t2?column=zip" in only
    assert client.get("/static/hierarchies.js").status_code == 200


def test_interval_preview_levels_save_and_cli(
    client: TestClient, workspace: Workspace, tmp_path: Path
) -> None:
    form = {"column": "age", "builder": "interval", "widths": "5,10,20"}
    html = client.post("/hierarchies/t1/preview", data=form).text
    ages = pd.read_csv(ADULT, sep=";", dtype=str)["age"]
    count = int((ages == "39").sum())
    # every level's label of a value, with its records
    assert (
        f'<td>39</td><td class="num">{count:,}</td><td>35-39</td><td>30-39</td>'
        "<td>20-39</td><td>*</td>"
    ) in html
    expected = Hierarchy.from_csv(_write(tmp_path / "cli_age.csv", "interval", "5,10,20"))
    groups = [len({r[lv] for r in expected.rows}) for lv in range(1, 5)]
    for level, n in enumerate(groups, start=1):
        assert re.search(rf'<td class="num">{level}</td>\s*<td class="num">{n}</td>', html), level
    assert "Every value of 'age' is in the hierarchy" in html
    # the live preview stores nothing
    assert 'id="draft"' not in client.get("/hierarchies/t1?column=age").text

    digest = _build_and_save(client, "t1", form)
    saved = Path(workspace.tables["t1"].hierarchies["age"])
    assert saved.parent.parent == workspace.folder("hierarchies")
    cli = (tmp_path / "cli_age.csv").read_bytes()
    assert saved.read_bytes() == cli
    assert hashlib.sha256(cli).hexdigest() == digest
    page = client.get("/hierarchies/t1?column=age").text
    assert "Saved" in page and _sha(page) == digest
    assert "anonlab hierarchy interval" in page and "--widths 5,10,20" in page
    download = client.get("/hierarchies/t1/download?column=age")
    assert download.content == cli
    assert "attachment" in download.headers["content-disposition"]
    assert "saved" in client.get("/hierarchies").text


def _write(out: Path, kind: str, widths: str) -> Path:
    _cli(kind, ADULT, ";", "age", out, "--widths", widths)
    return out


@pytest.mark.parametrize(
    ("table", "path", "delimiter", "form", "flags"),
    [
        (
            "t1",
            ADULT,
            ";",
            {"column": "age", "builder": "grouping", "sizes": "2,4"},
            ["--sizes", "2,4"],
        ),
        ("t1", ADULT, ";", {"column": "age", "builder": "redaction"}, []),
        ("t2", WAGE, ",", {"column": "zip", "builder": "redaction"}, []),
        (
            "t2",
            WAGE,
            ",",
            {"column": "interviewed", "builder": "date", "levels": ["month", "year"]},
            ["--levels", "month,year"],
        ),
        ("t2", WAGE, ",", {"column": "interviewed", "builder": "date"}, []),
        (
            "t2",
            WAGE,
            ",",
            {
                "column": "education",
                "builder": "grouping",
                "sizes": "1,5",
                "order": "1. < HS Grad\n2. HS Grad\n3. Some College\n"
                "4. College Grad\n5. Advanced Degree\n",
            },
            [
                "--sizes",
                "1,5",
                "--order",
                "1. < HS Grad,2. HS Grad,3. Some College,4. College Grad,5. Advanced Degree",
            ],
        ),
        (
            "t2",
            WAGE,
            ",",
            {
                "column": "maritl",
                "builder": "taxonomy",
                "mapping": str(REPO / "examples" / "census" / "maritl.toml"),
            },
            ["--mapping", str(REPO / "examples" / "census" / "maritl.toml")],
        ),
    ],
)
def test_every_builder_saves_what_the_cli_writes(
    client: TestClient,
    workspace: Workspace,
    tmp_path: Path,
    table: str,
    path: Path,
    delimiter: str,
    form: dict[str, object],
    flags: list[str],
) -> None:
    column = str(form["column"])
    cli = _cli(str(form["builder"]), path, delimiter, column, tmp_path / "cli.csv", *flags)
    digest = _build_and_save(client, table, form)
    saved = Path(workspace.tables[table].hierarchies[column]).read_bytes()
    assert saved == cli
    assert hashlib.sha256(saved).hexdigest() == digest


def test_taxonomy_preview_edit_undo_and_save(
    client: TestClient, workspace: Workspace, tmp_path: Path
) -> None:
    form = {"column": "marital-status", "builder": "taxonomy", "groups": "\n".join(MARITAL_GROUPS)}
    flags = [x for g in MARITAL_GROUPS for x in ("--group", g)]
    cli = _cli("taxonomy", ADULT, ";", "marital-status", tmp_path / "cli.csv", *flags)
    html = client.post("/hierarchies/t1/preview", data=form).text
    assert "<td>Separated</td>" in html and "<td>Apart</td><td>Has married</td>" in html
    digest = _build_and_save(client, "t1", form)
    saved = Path(workspace.tables["t1"].hierarchies["marital-status"])
    assert saved.read_bytes() == cli and hashlib.sha256(cli).hexdigest() == digest
    page = client.get("/hierarchies/t1?column=marital-status").text
    assert "Edit the groups" in page and "--group" in page

    base = {"column": "marital-status"}
    # move a value to another group of level 1: it takes that group's parents
    client.post(
        "/hierarchies/t1/move",
        data={**base, "level": "1", "member": "Separated", "target": "Married"},
    )
    # rename a group of level 2
    client.post(
        "/hierarchies/t1/rename",
        data={**base, "level": "2", "group": "Never married", "label": "Single"},
    )
    page = client.get("/hierarchies/t1?column=marital-status").text
    assert "Unsaved changes" in page and "2 edits" in page
    assert "<td>Separated</td>" in page
    assert re.search(r"<td>Separated</td><td[^>]*>[\d,]+</td><td>Married</td><td>Has married", page)
    edited_digest = _sha(page)
    client.post("/hierarchies/t1/save", data=base)
    edited = Hierarchy.from_csv(saved)
    assert edited.label("Separated", 1) == "Married"
    assert edited.label("Separated", 2) == "Has married"
    assert edited.label("Never-married", 2) == "Single"
    assert hashlib.sha256(saved.read_bytes()).hexdigest() == edited_digest
    # undo drops the last edit only
    client.post("/hierarchies/t1/undo", data=base)
    page = client.get("/hierarchies/t1?column=marital-status").text
    assert "1 edit" in page and "Single" not in page
    assert "anonlab hierarchy taxonomy" not in page  # an edited draft has no command line


def test_a_loaded_file_is_edited_and_an_edit_that_breaks_the_nesting_is_refused(
    client: TestClient, workspace: Workspace
) -> None:
    source = REPO / "data" / "adult" / "hierarchy_education.csv"
    base = {"column": "education"}
    reply = client.post("/hierarchies/t1/load", data={**base, "path": str(source)})
    assert reply.status_code == 200
    assert "Every value of 'education' is in the hierarchy" in reply.text
    assert "Edit the groups" in reply.text
    # 'High School' goes to 'Secondary education', 'Graduate' to 'Higher education':
    # merging them breaks the nesting, which the library refuses in one line
    refused = client.post(
        "/hierarchies/t1/rename",
        data={**base, "level": "1", "group": "High School", "label": "Graduate"},
    )
    assert refused.status_code == 400
    assert "is not nested" in refused.text
    # moving a group of level 1 into another group of level 2 keeps the nesting
    moved = client.post(
        "/hierarchies/t1/move",
        data={
            **base,
            "level": "2",
            "member": "Professional Education",
            "target": "Secondary education",
        },
    )
    assert moved.status_code == 200 and "1 edit" in moved.text
    client.post("/hierarchies/t1/save", data=base)
    saved = Hierarchy.from_csv(workspace.tables["t1"].hierarchies["education"])
    original = Hierarchy.from_csv(source)
    assert saved.label("Assoc-voc", 2) == "Secondary education"
    assert saved.label("Assoc-voc", 1) == "Professional Education"
    changed = [
        v
        for v in original.values
        if saved.rows[saved.values.index(v)] != original.rows[original.values.index(v)]
    ]
    assert sorted(changed) == ["Assoc-acdm", "Assoc-voc", "Prof-school"]


def test_missing_values_of_an_uploaded_file_are_listed(
    client: TestClient, workspace: Workspace
) -> None:
    text = "White;*\nBlack;*\nAsian-Pac-Islander;*\n"
    reply = client.post(
        "/hierarchies/t1/load",
        data={"column": "race", "hierarchy_delimiter": ";"},
        files={"file": ("race.csv", text.encode(), "text/csv")},
    )
    assert reply.status_code == 200
    races = pd.read_csv(ADULT, sep=";", dtype=str)["race"].value_counts()
    missing = races[["Amer-Indian-Eskimo", "Other"]]
    assert f"2 values of 'race' ({missing.sum():,} of {races.sum():,} records)" in reply.text
    assert f"<li>Other ({races['Other']:,})</li>" in reply.text
    assert 'class="uncovered"><td>Other</td>' in reply.text
    client.post("/hierarchies/t1/save", data={"column": "race"})
    saved = Path(workspace.tables["t1"].hierarchies["race"])
    assert saved.read_text() == text
    # an interval hierarchy cannot be edited: its labels are computed
    client.post(
        "/hierarchies/t1/build", data={"column": "age", "builder": "interval", "widths": "10"}
    )
    refused = client.post(
        "/hierarchies/t1/rename",
        data={"column": "age", "level": "1", "group": "30-39", "label": "x"},
    )
    assert refused.status_code == 400 and "computed from the values" in refused.text


def test_errors_are_one_line(client: TestClient) -> None:
    form = {"column": "race", "builder": "interval", "widths": "5"}
    html = client.post("/hierarchies/t1/preview", data=form).text
    assert "Error: value &#39;" in html and "is not a number" in html
    assert "<td>Amer-Indian-Eskimo</td>" in html  # the values to build from are listed
    half = "1:Married=Married-civ-spouse"
    html = client.post(
        "/hierarchies/t1/preview",
        data={"column": "marital-status", "builder": "taxonomy", "groups": half},
    ).text
    assert "puts 6 of the column&#39;s values in no group" in html
    reply = client.post("/hierarchies/t1/build", data=form)
    assert reply.status_code == 400 and "is not a number" in reply.text
    reply = client.get("/hierarchies/t1?column=nosuch")
    assert reply.status_code == 400 and "column &#39;nosuch&#39; is not in the table" in reply.text
    reply = client.get("/hierarchies/t1/download?column=age")
    assert reply.status_code == 400 and "save it first" in reply.text
    reply = client.post("/hierarchies/t1/load", data={"column": "race", "path": "/no/such.csv"})
    assert reply.status_code == 400 and "does not exist" in reply.text


def test_detach_forgets_the_hierarchy(client: TestClient, workspace: Workspace) -> None:
    _build_and_save(client, "t1", {"column": "age", "builder": "interval", "widths": "10"})
    assert "age" in workspace.tables["t1"].hierarchies
    client.post("/hierarchies/t1/detach", data={"column": "age"})
    assert "age" not in workspace.tables["t1"].hierarchies
    assert 'id="draft"' not in client.get("/hierarchies/t1?column=age").text


def test_the_edits_keep_levels_nested() -> None:
    from anonlab.errors import AnonlabError
    from anonlab.ui.hierarchy_preview import move_member, rename_group

    rows = [
        ["a", "A", "X", "*"],
        ["b", "A", "X", "*"],
        ["c", "B", "X", "*"],
        ["d", "C", "Y", "*"],
        ["e", "C", "Y", "*"],
    ]
    h = Hierarchy.from_rows(rows)
    # into an existing group: the value takes that group's labels above it
    moved = move_member(h, "col", 1, "c", "C")
    assert moved.rows[2] == ("c", "C", "Y", "*")
    # into a new group: a new group under the value's old parent
    new = move_member(h, "col", 1, "b", "N")
    assert new.rows[1] == ("b", "N", "X", "*") and new.rows[0] == ("a", "A", "X", "*")
    # a group of level 1 into another group of level 2: all its values go
    up = move_member(h, "col", 2, "A", "Y")
    assert [r[2] for r in up.rows] == ["Y", "Y", "X", "Y", "Y"]
    # renaming to a label of the same level merges two groups with the same parent
    merged = rename_group(h, "col", 1, "B", "A")
    assert {r[1] for r in merged.rows} == {"A", "C"}
    with pytest.raises(AnonlabError, match="is not nested"):
        rename_group(h, "col", 1, "B", "C")  # B is under X, C under Y
    with pytest.raises(AnonlabError, match="already in group"):
        move_member(h, "col", 1, "a", "A")
    with pytest.raises(AnonlabError, match="levels 1 to 3"):
        rename_group(h, "col", 0, "a", "z")
    with pytest.raises(AnonlabError, match="no group 'Q'"):
        rename_group(h, "col", 1, "Q", "z")
    with pytest.raises(AnonlabError, match="'q' is no value"):
        move_member(h, "col", 1, "q", "A")


def test_a_run_from_the_app_uses_the_saved_files(
    client: TestClient, workspace: Workspace, tmp_path: Path
) -> None:
    from anonlab.runs import run
    from anonlab.runs.generalize_settings import GeneralizeSettings
    from anonlab.settings import validate_settings
    from anonlab.ui.current import table_values

    table = workspace.tables["t1"]
    table.roles = {c["name"]: "insensitive" for c in table.columns}
    table.roles.update({"age": "qi", "marital-status": "qi"})
    _build_and_save(client, "t1", {"column": "age", "builder": "interval", "widths": "5,10,20"})
    groups = "\n".join(MARITAL_GROUPS)
    form = {"column": "marital-status", "builder": "taxonomy", "groups": groups}
    _build_and_save(client, "t1", form)
    values = table_values(table)
    assert values["qi"] == {c: table.hierarchies[c] for c in ("age", "marital-status")}
    out = tmp_path / "release.csv"
    settings = validate_settings(GeneralizeSettings, {**values, "k": 5, "output": str(out)})
    run(settings)
    release = pd.read_csv(out, sep=None, engine="python", dtype=str)
    saved = Hierarchy.from_csv(table.hierarchies["marital-status"])
    labels = {label for row in saved.rows for label in row}
    assert set(release["marital-status"]) <= labels


def test_the_preview_is_the_hierarchy_a_run_reads_from_the_file(
    client: TestClient, workspace: Workspace, tmp_path: Path
) -> None:
    data = tmp_path / "codes.csv"
    data.write_text('code;n\n"ab ";1\ncd;2\nce;3\ncd;4\n', encoding="utf-8")
    _table(workspace, "t3", data, ";")
    form = {"column": "code", "builder": "redaction"}
    html = client.post("/hierarchies/t3/preview", data=form).text
    # the file holds 'ab' (cells are read stripped): the column's 'ab ' is not in it
    assert "without the spaces around them" in html
    assert "1 value of 'code' (1 of 4 records) is not in the hierarchy" in html
    cli = _cli("redaction", data, ";", "code", tmp_path / "cli.csv")
    _build_and_save(client, "t3", form)
    saved = Path(workspace.tables["t3"].hierarchies["code"])
    assert saved.read_bytes() == cli
    assert Hierarchy.from_csv(saved).missing(["ab ", "cd", "ce"]) == ["ab "]


def test_missing_values_join_a_group_of_level_1(client: TestClient, workspace: Workspace) -> None:
    text = "White;Majority;*\nBlack;Minority;*\nAsian-Pac-Islander;Minority;*\n"
    base = {"column": "race"}
    client.post(
        "/hierarchies/t1/load", data=base, files={"file": ("race.csv", text.encode(), "text/csv")}
    )
    page = client.get("/hierarchies/t1?column=race").text
    assert "move value" in page and '<option value="Other">' in page
    client.post(
        "/hierarchies/t1/move", data={**base, "level": "1", "member": "Other", "target": "Minority"}
    )
    page = client.get("/hierarchies/t1?column=race").text
    assert "1 value of 'race'" in page and "added to group &#39;Minority&#39;" in page
    refused = client.post(
        "/hierarchies/t1/move",
        data={**base, "level": "1", "member": "Amer-Indian-Eskimo", "target": "Nowhere"},
    )
    assert refused.status_code == 400 and "level 1 has no group" in refused.text
    page = client.post(
        "/hierarchies/t1/move",
        data={**base, "level": "1", "member": "Amer-Indian-Eskimo", "target": "Minority"},
    ).text
    assert "Every value of 'race' is in the hierarchy" in page
    client.post("/hierarchies/t1/save", data=base)
    saved = Hierarchy.from_csv(workspace.tables["t1"].hierarchies["race"])
    assert saved.rows[3:] == (("Other", "Minority", "*"), ("Amer-Indian-Eskimo", "Minority", "*"))


def test_a_broken_attached_file_is_reported_and_can_be_replaced(
    client: TestClient, workspace: Workspace, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.csv"
    broken.write_text("17;15-19;*\n18;*\n", encoding="utf-8")
    workspace.tables["t1"].hierarchies["age"] = str(broken)
    page = client.get("/hierarchies/t1?column=age")
    assert page.status_code == 200
    assert "cannot be used" in page.text and "every row needs one label per level" in page.text
    _build_and_save(client, "t1", {"column": "age", "builder": "interval", "widths": "10"})
    assert workspace.tables["t1"].hierarchies["age"] != str(broken)
    assert "cannot be used" not in client.get("/hierarchies/t1?column=age").text


def test_a_file_named_on_the_roles_step_is_shown_as_saved(
    client: TestClient, workspace: Workspace
) -> None:
    source = REPO / "data" / "adult" / "hierarchy_age.csv"
    workspace.tables["t1"].hierarchies["age"] = str(source)
    page = client.get("/hierarchies/t1?column=age").text
    assert "Saved" in page and "Unsaved" not in page
    assert "From the file hierarchy_age.csv" in page
    client.post(
        "/hierarchies/t1/build", data={"column": "age", "builder": "interval", "widths": "10"}
    )
    page = client.get("/hierarchies/t1?column=age").text
    assert "Unsaved changes" in page
    assert workspace.tables["t1"].hierarchies["age"] == str(source)


def test_a_columns_values_and_counts_read_as_codes_are_those_of_the_column_as_text(
    tmp_path: Path,
) -> None:
    """The Hierarchies step reads the table as dictionary codes (a gigabyte in a few hundred
    MiB); its values, order and counts are those of the run's text reading."""
    from anonlab.hierarchy_view import value_counts
    from anonlab.runs.generalize_steps import read_input
    from anonlab.runs.hierarchy import column_values
    from anonlab.ui.hierarchy_preview import read_columns, table_settings

    data = tmp_path / "edge.csv"
    data.write_text("a,b,c\n1, x ,\n2.0,y,z\n,x,\n1,,q\n", encoding="utf-8")
    table = LoadedTable(id="t1", name="edge", read={"input": str(data), "delimiter": ","})
    frame = read_input(table_settings(table))
    read = read_columns(table, ["a", "b", "c"])
    for column in ("a", "b", "c"):
        assert read[column].values == column_values(frame, column)
        assert read[column].counts == value_counts(frame, column)
