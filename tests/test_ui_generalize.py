"""The web app's core workflow on Adult: load, roles, a generalization run, explore, export.

The release downloaded from the app must equal, byte for byte, the release the
CLI writes for the settings the app exports (issue 26).
"""

from __future__ import annotations

import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient
from typer.testing import CliRunner

from anonlab.cli.app import app as cli_app
from anonlab.ui.app import create_app
from anonlab.ui.security import allowed_hosts
from anonlab.ui.workspace import Workspace

TOKEN = "t0ken-for-tests"
ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
QIS = ("sex", "age", "race", "education")
IDENTIFYING = ("marital-status", "native-country", "workclass", "occupation")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    (tmp_path / "workspace").mkdir()
    workspace = Workspace(tmp_path / "workspace")
    app = create_app(workspace, token=TOKEN, hosts=allowed_hosts("127.0.0.1", 8765))
    with TestClient(app, base_url="http://127.0.0.1:8765", headers={"X-Anonlab-Token": TOKEN}) as c:
        yield c


def load_adult(client: TestClient) -> str:
    """Upload Adult and give its columns their roles and hierarchies; the table's id."""
    body = (ADULT / "adult.csv").read_bytes()
    reply = client.put("/upload?name=adult.csv&delimiter=;", content=body)
    assert reply.status_code == 200, reply.text
    table = str(reply.json()["table"])
    page = client.get(f"/roles?table={table}")
    assert page.status_code == 200
    header = (ADULT / "adult.csv").read_text().splitlines()[0].split(";")
    form = {"table": table}
    for i, column in enumerate(header):
        if column in QIS:
            form[f"role_{i}"] = "qi"
            form[f"hierarchy_{i}"] = str(ADULT / f"hierarchy_{column}.csv")
        elif column in IDENTIFYING:
            form[f"role_{i}"] = "identifying"
        else:
            form[f"role_{i}"] = "sensitive"
    reply = client.post("/roles", data=form, follow_redirects=False)
    assert reply.status_code == 303
    return table


def finish(client: TestClient, reply_location: str, timeout: float = 120.0) -> str:
    """Wait for the run at ``reply_location`` (``/runs/ID``) to end; its id."""
    run_id = reply_location.rsplit("/", 1)[-1]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = client.get(f"/runs/{run_id}/state").json()
        if state["status"] not in ("queued", "running"):
            assert state["status"] == "done", state
            return run_id
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not end in {timeout} s")


K5_L2 = {
    "recoding": "full-domain",
    "k": "5",
    "model_0": "distinct-l-diversity",
    "attribute_0": "salary-class",
    "parameters_0": "l=2",
    "suppression": "1%",
    "alternatives": "5",
}


def run_cli(args: list[str], folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(folder)
    result = CliRunner().invoke(cli_app, args)
    assert result.exit_code == 0, result.output


def test_k5_l_diversity_second_node_equals_the_cli_byte_for_byte(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = load_adult(client)
    form = client.get(f"/method/generalize?table={table}")
    assert form.status_code == 200 and "distinct-l-diversity" in form.text
    reply = client.post(
        "/method/generalize", data={"table": table, **K5_L2}, follow_redirects=False
    )
    assert reply.status_code == 303, reply.text
    first = finish(client, reply.headers["location"])
    page = client.get(f"/runs/{first}")
    assert "k-anonymity" in page.text and "holds" in page.text

    explore = client.get(f"/runs/{first}/explore")
    assert explore.status_code == 200
    assert "Solution space" in explore.text and "before and after" in explore.text
    reply = client.post(f"/runs/{first}/explore", data={"node": "2"}, follow_redirects=False)
    assert reply.status_code == 303, reply.text
    second = finish(client, reply.headers["location"])

    release = client.get(f"/runs/{second}/files/release.csv")
    assert release.status_code == 200
    settings = client.get(f"/runs/{second}/files/settings.toml")
    assert settings.status_code == 200
    values = tomllib.loads(settings.text)
    assert values["k"] == 5 and values["criteria"] == [
        {"model": "distinct-l-diversity", "attribute": "salary-class", "l": 2}
    ]
    assert values["min_level"] == values["max_level"]

    # the exported settings, run by the CLI's generalize --config
    cli = tmp_path / "cli"
    cli.mkdir()
    (cli / "settings.toml").write_text(settings.text, encoding="utf-8")
    run_cli(["generalize", "--config", "settings.toml", "--quiet"], cli, monkeypatch)
    assert (cli / "release.csv").read_bytes() == release.content

    # and the apply line the export page gives
    export = client.get(f"/runs/{second}/export")
    assert "anonlab apply" in export.text
    first_values = tomllib.loads(client.get(f"/runs/{first}/files/settings.toml").text)
    applied = tmp_path / "applied"
    applied.mkdir()
    report_in = tmp_path / "workspace" / "runs" / first / "report.json"
    run_cli(
        [
            "apply",
            str(report_in),
            first_values["input"],
            "--delimiter",
            ";",
            "--node",
            "2",
            "--output",
            "release.csv",
            "--quiet",
        ],
        applied,
        monkeypatch,
    )
    assert (applied / "release.csv").read_bytes() == release.content

    # the optimum too: its settings.toml repeats it
    optimum = tmp_path / "optimum"
    optimum.mkdir()
    (optimum / "settings.toml").write_text(
        client.get(f"/runs/{first}/files/settings.toml").text, encoding="utf-8"
    )
    run_cli(["generalize", "--config", "settings.toml", "--quiet"], optimum, monkeypatch)
    assert (optimum / "release.csv").read_bytes() == client.get(
        f"/runs/{first}/files/release.csv"
    ).content
