"""The web app's Export page: every output, the release as Parquet, Excel and a database
table (written by the library's writer), the value mappings and the settings file."""

from __future__ import annotations

import html
import io
import json
import re
import shlex
import sqlite3
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from anonlab.io import read_table
from ui_flow import app_client, finish, generalize, load_adult


@pytest.fixture(scope="module")
def done(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, str]]:
    """A client whose app ran the proof's generalization of Adult, and the run's id."""
    with app_client(tmp_path_factory.mktemp("export") / "workspace") as client:
        yield client, generalize(client, load_adult(client))


def one_line_error(reply: Any) -> str:
    assert reply.status_code == 400
    found = re.findall(r'<p class="error" role="alert">Error: (.*?)</p>', reply.text)
    assert len(found) == 1
    return html.unescape(found[0])


def release_of(client: TestClient, run_id: str) -> pd.DataFrame:
    reply = client.get(f"/runs/{run_id}/files/release.csv")
    assert reply.status_code == 200 and "attachment" in reply.headers["content-disposition"]
    return pd.read_csv(io.BytesIO(reply.content), dtype=str, keep_default_na=False)


def test_the_page_offers_every_output(done: tuple[TestClient, str]) -> None:
    client, run_id = done
    page = client.get(f"/runs/{run_id}/export").text
    for name in ("release.csv", "report.json", "report.html", "mappings.csv", "settings.toml"):
        assert f"/runs/{run_id}/files/{name}" in page
    report = client.get(f"/runs/{run_id}/files/report.json").json()
    assert report["command"] == "generalize" and len(report["alternatives"]) == 5
    shown = client.get(f"/runs/{run_id}/files/report.html")
    assert shown.headers["content-type"].startswith("text/html")
    assert "inline" in shown.headers["content-disposition"]
    assert "not a file a run writes" in one_line_error(
        client.get(f"/runs/{run_id}/files/settings.py")
    )
    assert client.get(f"/runs/{run_id}/files/..%2Freport.json").status_code in (400, 404)


def test_settings_name_their_outputs_beside_the_file(done: tuple[TestClient, str]) -> None:
    client, run_id = done
    text = client.get(f"/runs/{run_id}/files/settings.toml").text
    assert text.startswith("# anonlab generalize --config settings.toml")
    assert "uploaded" not in text or "point it at your file" in text
    values = tomllib.loads(text)
    assert values["output"] == "release.csv" and values["report"] == "report.json"
    assert values["delimiter"] == ";" and values["sensitive"] == ["salary-class"]
    assert set(values["qi"]) == {"sex", "age", "race", "education"}
    assert values["suppression"] == 0.01 and values["alternatives"] == 5


def test_the_value_mappings_pair_original_and_released_values(
    done: tuple[TestClient, str],
) -> None:
    client, run_id = done
    reply = client.get(f"/runs/{run_id}/files/mappings.csv")
    assert reply.status_code == 200
    mappings = pd.read_csv(io.BytesIO(reply.content), dtype=str, keep_default_na=False)
    assert list(mappings.columns) == ["attribute", "original", "released", "records"]
    mappings["records"] = mappings["records"].astype(int)
    assert set(mappings["attribute"]) == {"sex", "age", "race", "education"}
    for _, part in mappings.groupby("attribute"):
        assert part["records"].sum() == 30162
    age = mappings[mappings["attribute"] == "age"]
    assert set(age["released"]) == {"*"} and len(age) == 72  # level 4: every age is '*'
    sex = mappings[mappings["attribute"] == "sex"]
    kept = sex[sex["released"] != "*"]
    assert (kept["original"] == kept["released"]).all()  # level 0
    assert sex[sex["released"] == "*"]["records"].sum() == 172  # the suppressed records


@pytest.mark.parametrize(("fmt", "suffix"), [("parquet", ".parquet"), ("xlsx", ".xlsx")])
def test_the_release_as_parquet_or_excel(
    done: tuple[TestClient, str], tmp_path: Path, fmt: str, suffix: str
) -> None:
    client, run_id = done
    reply = client.post(f"/runs/{run_id}/export", data={"format": fmt})
    assert reply.status_code == 200
    assert f'filename="release{suffix}"' in reply.headers["content-disposition"]
    file = tmp_path / f"release{suffix}"
    file.write_bytes(reply.content)
    pd.testing.assert_frame_equal(read_table(file), release_of(client, run_id))


def test_the_release_as_a_database_table(done: tuple[TestClient, str], tmp_path: Path) -> None:
    client, run_id = done
    db = tmp_path / "release.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE adult_k5 (old TEXT)")
    url = f"sqlite:///{db}"
    reply = client.post(
        f"/runs/{run_id}/export", data={"format": "database", "url": url, "table": "adult_k5"}
    )
    assert reply.status_code == 200 and "written to table" in reply.text
    back = read_table(url, table="adult_k5")
    pd.testing.assert_frame_equal(back, release_of(client, run_id))


def test_bad_export_parameters_are_one_line(done: tuple[TestClient, str]) -> None:
    client, run_id = done
    assert "format 'csv2' is unknown" in one_line_error(
        client.post(f"/runs/{run_id}/export", data={"format": "csv2"})
    )
    assert "not a SQLAlchemy URL" in one_line_error(
        client.post(f"/runs/{run_id}/export", data={"format": "database", "url": "x.db"})
    )
    assert "name the database table" in one_line_error(
        client.post(f"/runs/{run_id}/export", data={"format": "database", "url": "sqlite:///x.db"})
    )
    assert "no run 'r99'" in one_line_error(client.get("/runs/r99/export"))


def test_an_exported_database_url_has_no_password() -> None:
    from anonlab.ui.pages.export import _without_password

    notes: list[str] = []
    assert _without_password("postgresql://u:secret@h/db", notes) == "postgresql://u:***@h/db"
    assert notes and "password" in notes[0]
    assert _without_password("sqlite:///x.db", []) == "sqlite:///x.db"
    assert _without_password("/data/a.csv", []) == "/data/a.csv"


FUSION = Path(__file__).resolve().parents[1] / "examples" / "fusion" / "fusion.toml"


def run_line(text: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the ``anonlab ...`` line of a downloaded command.sh in ``folder`` (the CLI's app)."""
    from typer.testing import CliRunner

    from anonlab.cli.app import app as cli_app

    (line,) = [t for t in text.splitlines() if t.startswith("anonlab ")]
    words = shlex.split(line)
    monkeypatch.chdir(folder)
    result = CliRunner().invoke(cli_app, [*words[1:], "--quiet"])
    assert result.exit_code == 0, result.output


@pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")
def test_a_risk_run_offers_its_command_line_which_the_cli_repeats(
    done: tuple[TestClient, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, generalized = done
    workspace = client.app.state.workspace  # type: ignore[attr-defined]
    (table_id,) = workspace.tables
    form = {"table": table_id, "qi": ["sex", "age", "race", "education"], "risk_threshold": "0.09"}
    reply = client.post("/method/risk", data=form, follow_redirects=False)
    assert reply.status_code == 303, reply.text
    run_id = finish(client, reply.headers["location"])
    page = client.get(f"/runs/{run_id}/export").text
    assert f"/runs/{run_id}/files/command.sh" in page
    assert f"/runs/{run_id}/files/settings.toml" not in page
    assert "a risk run has no settings.toml: download command.sh" in one_line_error(
        client.get(f"/runs/{run_id}/files/settings.toml")
    )
    assert "a generalize run has no command.sh: download settings.toml" in one_line_error(
        client.get(f"/runs/{generalized}/files/command.sh")
    )
    download = client.get(f"/runs/{run_id}/files/command.sh")
    assert download.status_code == 200
    assert 'filename="command.sh"' in download.headers["content-disposition"]
    assert download.headers["content-type"].startswith("text/x-shellscript")
    assert "risk reads no settings file" in download.text
    assert "point it at your file" in download.text  # the upload's copy
    words = shlex.split(download.text.splitlines()[-1])
    assert words[:2] == ["anonlab", "risk"] and words[words.index("--report") + 1] == "report.json"
    run_line(download.text, tmp_path, monkeypatch)
    again = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    report = client.get(f"/runs/{run_id}/files/report.json").json()
    assert again["risk"] == report["risk"] and again["roles"] == report["roles"]
    assert report["risk"]["prosecutor"]["records_at_risk"].keys() >= {"0.09"}


@pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")
def test_a_fusion_run_offers_its_command_line_which_writes_the_same_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with app_client(tmp_path / "workspace") as client:
        form = {"config": str(FUSION), "score": "tds", "max_risk": "0.5"}
        reply = client.post("/method/fuse", data=form, follow_redirects=False)
        assert reply.status_code == 303, reply.text
        run_id = finish(client, reply.headers["location"])
        page = client.get(f"/runs/{run_id}/export").text
        assert f"/runs/{run_id}/files/command.sh" in page
        assert f"/runs/{run_id}/files/settings.toml" not in page
        text = client.get(f"/runs/{run_id}/files/command.sh").text
        words = shlex.split(text.splitlines()[-1])
        assert words[:3] == ["anonlab", "fuse", str(FUSION)]
        for flag, name in (
            ("--output", "release.csv"),
            ("--report", "report.json"),
            ("--html", "report.html"),
        ):
            assert words[words.index(flag) + 1] == name
        cli = tmp_path / "cli"
        cli.mkdir()
        run_line(text, cli, monkeypatch)
        release = client.get(f"/runs/{run_id}/files/release.csv").content
        assert (cli / "release.csv").read_bytes() == release


def test_the_risk_utility_map_downloads_as_a_png(done: tuple[TestClient, str]) -> None:
    client, generalized = done
    workspace = client.app.state.workspace  # type: ignore[attr-defined]
    (table_id,) = workspace.tables
    attacker = ["sex", "age", "race", "education"]
    form = {"table": table_id, "attacker": attacker, "runs": [generalized]}
    reply = client.post("/compare", data=form, follow_redirects=False)
    assert reply.status_code == 303, reply.text
    run_id = finish(client, reply.headers["location"])
    page = client.get(f"/runs/{run_id}/export").text
    assert f"/runs/{run_id}/files/plot.png" in page and "the risk-utility map" in page
    image = client.get(f"/runs/{run_id}/files/plot.png")
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    assert 'filename="plot.png"' in image.headers["content-disposition"]
    assert image.content.startswith(b"\x89PNG\r\n\x1a\n")
    assert image.content == client.get(f"/compare/{run_id}/map.png").content
