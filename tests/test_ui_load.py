"""The web app's Load and Roles pages: uploads written in pieces, paths and databases read
with the CLI's reader, the preview, every column's role, and the token on every route."""

from __future__ import annotations

import html
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest

pytest.importorskip("starlette")
from starlette.routing import Route
from starlette.testclient import TestClient

from anonlab.ui.pages import explore, export, load, method, roles, runs
from ui_flow import ADULT, app_client, load_adult


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with app_client(tmp_path / "workspace") as c:
        yield c


def one_line_error(reply: Any) -> str:
    """The error page's message; the page must say it in one ``Error:`` line, status 400."""
    assert reply.status_code == 400
    found = re.findall(r'<p class="error" role="alert">Error: (.*?)</p>', reply.text)
    assert len(found) == 1 and "\n" not in found[0]
    return html.unescape(found[0])


def test_an_upload_is_written_to_disk_in_pieces(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(load, "CHUNK", 64 * 1024)
    rows = "".join(f"{i % 97};{i % 13};x{i % 7}\n" for i in range(40_000))
    body = ("a;b;c\n" + rows).encode()
    assert len(body) > 3 * load.CHUNK
    writes: list[int] = []
    real = load.write_piece

    def counted(fh: BinaryIO, data: bytes) -> None:
        writes.append(len(data))
        real(fh, data)

    monkeypatch.setattr(load, "write_piece", counted)
    reply = client.put("/upload?name=../../big%20table.csv", content=body)
    assert reply.status_code == 200, reply.text
    assert reply.json()["bytes"] == len(body)
    assert len(writes) >= 3 and sum(writes) == len(body)
    assert all(n == load.CHUNK for n in writes[:-1]) and 0 < writes[-1] <= load.CHUNK
    stored = list((tmp_path / "workspace" / "uploads").rglob("*.csv"))
    assert [p.name for p in stored] == ["big_table.csv"]  # no folder part, a safe name
    assert stored[0].read_bytes() == body
    assert stored[0].stat().st_mode & 0o077 == 0
    page = client.get(reply.json()["location"]).text
    assert "40000 rows, 3 columns" in page


def test_an_empty_or_unreadable_upload_is_one_line_and_leaves_no_file(
    client: TestClient, tmp_path: Path
) -> None:
    reply = client.put("/upload?name=empty.csv", content=b"")
    assert reply.status_code == 400 and "is empty" in reply.json()["error"]
    reply = client.put("/upload?name=bad.csv", content=b"a,b\n\xff\xfe,1\n")
    assert reply.status_code == 400 and "UTF-8" in reply.json()["error"]
    assert not [p for p in (tmp_path / "workspace" / "uploads").rglob("*") if p.is_file()]


def test_the_preview_gives_types_distinct_and_missing_counts(client: TestClient) -> None:
    reply = client.post(
        "/load/path",
        data={"path": str(ADULT / "adult.csv"), "delimiter": ";"},
        follow_redirects=False,
    )
    assert reply.status_code == 303
    page = client.get(reply.headers["location"]).text
    assert "30162 rows, 9 columns" in page
    cells = re.findall(
        r'<tr><th scope="row">([^<]+)</th><td>(\w+)</td><td class="num">(\d+)</td>', page
    )
    found = {name: (kind, int(n)) for name, kind, n in cells}
    assert found["age"] == ("integer", 72)
    assert found["sex"] == ("text", 2)
    assert found["native-country"] == ("text", 41)
    assert "Male" in page and '<h2 id="h-preview">' in page


def test_a_sniffed_delimiter_is_kept_in_the_settings(client: TestClient) -> None:
    client.post("/load/path", data={"path": str(ADULT / "adult.csv")})
    app = client.app
    workspace = app.state.workspace  # type: ignore[attr-defined]
    (table,) = workspace.tables.values()
    assert table.read == {"input": str(ADULT / "adult.csv"), "delimiter": ";"}


def test_a_bad_path_is_one_line(client: TestClient, tmp_path: Path) -> None:
    message = one_line_error(client.post("/load/path", data={"path": str(tmp_path / "no.csv")}))
    assert "does not exist" in message
    message = one_line_error(client.post("/load/path", data={"path": str(tmp_path)}))
    assert message
    assert "give the path" in one_line_error(client.post("/load/path", data={"path": " "}))


def test_a_database_table_or_query(client: TestClient, tmp_path: Path) -> None:
    db = tmp_path / "people.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE people (zip TEXT, age INTEGER, disease TEXT)")
        conn.executemany(
            "INSERT INTO people VALUES (?, ?, ?)",
            [("01234", 30, "flu"), ("01234", 31, None), ("05678", 45, "cold")],
        )
    url = f"sqlite:///{db}"
    reply = client.post("/load/database", data={"url": url, "table": "people"})
    assert reply.status_code == 200
    assert "3 rows, 3 columns" in reply.text and "01234" in reply.text
    reply = client.post(
        "/load/database", data={"url": url, "query": "SELECT zip FROM people WHERE age > 30"}
    )
    assert "2 rows, 1 columns" in reply.text
    assert "not a SQLAlchemy URL" in one_line_error(
        client.post("/load/database", data={"url": "people.db", "table": "people"})
    )
    assert "either a table name or an SQL query" in one_line_error(
        client.post("/load/database", data={"url": url, "table": "people", "query": "SELECT 1"})
    )
    assert "nobody" in one_line_error(
        client.post("/load/database", data={"url": url, "table": "nobody"})
    )


def test_every_column_needs_a_role(client: TestClient) -> None:
    table = load_adult(client)
    page = client.get(f"/roles?table={table}").text
    assert page.count("<select") == 9 and "identifying: names a person" in page
    form = {"table": table, **{f"role_{i}": "insensitive" for i in range(8)}}
    assert "'salary-class' has no role" in one_line_error(client.post("/roles", data=form))
    form["role_8"] = "secret"
    assert "role 'secret' is unknown" in one_line_error(client.post("/roles", data=form))
    form["role_8"] = "qi"
    form["hierarchy_8"] = "/nowhere/h.csv"
    assert "does not exist" in one_line_error(client.post("/roles", data=form))


def test_the_method_page_needs_roles_first(client: TestClient) -> None:
    reply = client.post("/load/path", data={"path": str(ADULT / "adult.csv")})
    assert reply.status_code == 200
    assert "has no role" in one_line_error(client.get("/method/generalize"))


def test_pages_without_a_table_are_one_line(client: TestClient) -> None:
    assert "no table is loaded" in one_line_error(client.get("/roles"))
    assert "no loaded table 't9'" in one_line_error(client.get("/roles?table=t9"))
    assert client.get("/").status_code == 200
    assert client.get("/method").status_code == 200
    assert "no run 'r1'" in one_line_error(client.get("/runs/r1"))


MY_PAGES = (load, roles, method, runs, explore, export)


def test_every_route_of_the_workflow_needs_the_token(tmp_path: Path) -> None:
    with app_client(tmp_path / "workspace", token=False) as client:
        seen = 0
        for module in MY_PAGES:
            for route in module.ROUTES:
                assert isinstance(route, Route)
                path = route.path.replace("{id}", "r1").replace("{name}", "release.csv")
                for verb in sorted(route.methods or ()):
                    if verb == "HEAD":
                        continue
                    reply = client.request(verb, path)
                    assert reply.status_code == 403, (verb, path)
                    assert b"<html" not in reply.content
                    seen += 1
        assert seen >= 15


def test_parquet_and_excel_uploads_are_read_by_their_format(
    client: TestClient, tmp_path: Path
) -> None:
    import pandas as pd

    from anonlab.io import write_table

    frame = pd.DataFrame({"zip": ["01234", "01234", "05678"], "age": ["30", "31", "45"]})
    for name, sheet in (("t.parquet", None), ("t.xlsx", "people")):
        write_table(frame, tmp_path / name, sheet=sheet)
        query = f"name={name}" + (f"&sheet={sheet}" if sheet else "")
        reply = client.put(f"/upload?{query}", content=(tmp_path / name).read_bytes())
        assert reply.status_code == 200, reply.text
        page = client.get(reply.json()["location"]).text
        assert "3 rows, 2 columns" in page and "01234" in page, name
    workbook = (tmp_path / "t.xlsx").read_bytes()
    reply = client.put("/upload?name=t.xlsx&sheet=nobody", content=workbook)
    assert reply.status_code == 400 and "nobody" in reply.json()["error"]
