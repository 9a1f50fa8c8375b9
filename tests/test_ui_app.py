"""The web app's frame: the token guard, the host check, static files, user errors."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from anonlab.errors import AnonlabError
from anonlab.ui.app import create_app
from anonlab.ui.security import COOKIE, allowed_hosts
from anonlab.ui.server import bind, check_host
from anonlab.ui.workspace import Workspace

TOKEN = "t0ken-for-tests"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    app = create_app(Workspace(tmp_path), token=TOKEN, hosts=allowed_hosts("127.0.0.1", 8765))
    with TestClient(app, base_url="http://127.0.0.1:8765") as c:
        yield c


def test_a_request_without_the_token_gets_403_and_no_data(client: TestClient) -> None:
    reply = client.get("/static/app.css")
    assert reply.status_code == 403
    assert b"--accent" not in reply.content


def test_a_wrong_token_gets_403(client: TestClient) -> None:
    assert client.get("/static/app.css?token=wrong").status_code == 403
    assert client.get("/static/app.css", headers={"X-Anonlab-Token": "x"}).status_code == 403
    client.cookies.set(COOKIE, "wrong")
    assert client.get("/static/app.css").status_code == 403


def test_the_token_in_the_url_sets_a_strict_cookie_that_later_requests_use(
    client: TestClient,
) -> None:
    first = client.get(f"/static/app.css?token={TOKEN}")
    assert first.status_code == 200
    cookie = first.headers["set-cookie"]
    assert f"{COOKIE}={TOKEN}" in cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert client.get("/static/app.js").status_code == 200


def test_the_header_token_is_enough(client: TestClient) -> None:
    assert client.get("/static/app.js", headers={"X-Anonlab-Token": TOKEN}).status_code == 200


def test_a_foreign_host_is_refused_even_with_the_token(client: TestClient) -> None:
    reply = client.get(f"/static/app.css?token={TOKEN}", headers={"Host": "evil.example:8765"})
    assert reply.status_code == 403


def test_wildcard_and_named_hosts_are_refused() -> None:
    for host in ("0.0.0.0", "::", "example.org"):
        with pytest.raises(AnonlabError, match="host"):
            check_host(host)
    check_host("127.0.0.1")
    check_host("localhost")


def test_a_taken_port_is_one_line() -> None:
    sock = bind("127.0.0.1", 0)
    try:
        with pytest.raises(AnonlabError, match="choose another") as caught:
            bind("127.0.0.1", sock.getsockname()[1])
        assert caught.value.parameter == "port"
        assert caught.value.for_flags().startswith("--port ")  # the CLI names its flag
    finally:
        sock.close()


def test_the_workspace_folder_is_private_and_removed_at_close() -> None:
    ws = Workspace()
    assert ws.root.stat().st_mode & 0o077 == 0
    (ws.folder("uploads") / "x.csv").write_text("a\n1\n")
    ws.close()
    assert not ws.root.exists()


def test_a_runs_warnings_go_to_its_page_not_to_the_servers_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import warnings

    from anonlab.errors import ReleaseRiskWarning
    from anonlab.runs.common import RunResult
    from anonlab.ui.jobs import DONE, Job, JobStore
    from anonlab.userwarn import warn_user

    def work(progress: object) -> RunResult:
        warn_user(ReleaseRiskWarning("12 records above   the risk threshold"))
        warnings.warn("not the user's", RuntimeWarning, stacklevel=1)
        return RunResult(report={})

    job = Job(id="r1", command="risk", values={}, work=work, folder=tmp_path)
    others: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, *rest: others.append(str(message))
        JobStore().start(job)
        for _ in range(500):
            if job.finished is not None:
                break
            time.sleep(0.01)
    assert job.status == DONE
    assert job.warned == ["12 records above the risk threshold"]
    assert "risk threshold" not in capsys.readouterr().err
    assert others == ["not the user's"]  # other warnings go where they went before
