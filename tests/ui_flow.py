"""Helpers of the web app's workflow tests: an app on a workspace, Adult loaded with roles,
a run followed to its end (tests/test_ui_load.py, test_ui_generalize.py, test_ui_export.py)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from starlette.testclient import TestClient

from anonlab.ui.app import create_app
from anonlab.ui.security import allowed_hosts
from anonlab.ui.workspace import Workspace

TOKEN = "t0ken-for-tests"
BASE = "http://127.0.0.1:8765"
ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
QIS = ("sex", "age", "race", "education")
IDENTIFYING = ("marital-status", "native-country", "workclass", "occupation")
#: the generalization form of the proof: k = 5, distinct 2-diversity of salary-class, 1 %
K5_L2 = {
    "recoding": "full-domain",
    "k": "5",
    "model_0": "distinct-l-diversity",
    "attribute_0": "salary-class",
    "parameters_0": "l=2",
    "suppression": "1%",
    "alternatives": "5",
}


@contextmanager
def app_client(root: Path, *, token: bool = True) -> Iterator[TestClient]:
    """A test client of an app over a workspace in ``root`` (sending the token unless
    ``token`` is false)."""
    root.mkdir(exist_ok=True)
    app = create_app(Workspace(root), token=TOKEN, hosts=allowed_hosts("127.0.0.1", 8765))
    headers = {"X-Anonlab-Token": TOKEN} if token else {}
    with TestClient(app, base_url=BASE, headers=headers) as client:
        yield client


def load_adult(client: TestClient) -> str:
    """Upload Adult and give its columns their roles and hierarchies; the table's id."""
    body = (ADULT / "adult.csv").read_bytes()
    reply = client.put("/upload?name=adult.csv&delimiter=;", content=body)
    assert reply.status_code == 200, reply.text
    table = str(reply.json()["table"])
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
    assert reply.status_code == 303, reply.text
    return table


def wait(client: TestClient, run_id: str, timeout: float = 120.0) -> str:
    """Wait for run ``run_id`` to end; its status."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = str(client.get(f"/runs/{run_id}/state").json()["status"])
        if status not in ("queued", "running"):
            return status
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not end in {timeout} s")


def finish(client: TestClient, location: str) -> str:
    """Wait for the run at ``location`` (``/runs/ID``) to end, done; its id."""
    run_id = location.rsplit("/", 1)[-1]
    status = wait(client, run_id)
    assert status == "done", client.get(f"/runs/{run_id}/state").json()
    return run_id


def generalize(client: TestClient, table: str, form: dict[str, str] | None = None) -> str:
    """A generalization run of ``table`` with ``form`` (default :data:`K5_L2`), done; its id."""
    data = {"table": table, **(K5_L2 if form is None else form)}
    reply = client.post("/method/generalize", data=data, follow_redirects=False)
    assert reply.status_code == 303, reply.text
    return finish(client, reply.headers["location"])
