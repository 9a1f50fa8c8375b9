"""The Hierarchies page's script in a real browser: the live preview follows the form.

The app runs in this process (uvicorn in a thread, over a workspace holding
Adult), Chromium is driven over the DevTools protocol (tests/chromium_cdp.py).
The preview the browser shows as the user types carries the SHA-256 of the
hierarchy's text, which must be that of the file ``anonlab hierarchy`` writes;
"Use" and "Save" then attach that very file. No request may leave the app.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
import uvicorn
from typer.testing import CliRunner

from anonlab.cli.app import app as cli_app
from anonlab.ui.app import create_app
from anonlab.ui.security import allowed_hosts
from anonlab.ui.workspace import LoadedTable, Workspace
from chromium_cdp import DevTools, chromium_path, launch

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO / "data" / "adult" / "adult.csv"
TOKEN = "t0ken-for-browser"


@dataclass
class Served:
    origin: str
    workspace: Workspace


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    (tmp_path / "ws").mkdir()
    workspace = Workspace(tmp_path / "ws")
    columns = list(pd.read_csv(ADULT, sep=";", nrows=0).columns)
    table = LoadedTable(
        id="t1",
        name="adult.csv",
        read={"input": str(ADULT), "delimiter": ";"},
        columns=[{"name": c} for c in columns],
    )
    table.roles = {c: "insensitive" for c in columns}
    table.roles.update({"age": "qi", "marital-status": "qi"})
    workspace.add_table(table)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    app = create_app(workspace, token=TOKEN, hosts=allowed_hosts("127.0.0.1", port))
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    end = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < end, "the app did not start within 30 s"
        time.sleep(0.05)
    try:
        yield Served(origin=f"http://127.0.0.1:{port}", workspace=workspace)
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[DevTools]:
    with launch(chromium_path(), tmp_path / "profile") as tools:
        yield tools


def _type(tools: DevTools, selector: str, text: str) -> None:
    """Set a field's text and send the ``input`` event a user's typing sends."""
    tools.evaluate(
        f"(() => {{ const f = document.querySelector({json.dumps(selector)}); "
        f"f.value = {json.dumps(text)}; "
        "f.dispatchEvent(new Event('input', { bubbles: true })); })()"
    )


def _preview_sha(tools: DevTools) -> str:
    tools.wait_until(
        "document.querySelector('#live-preview .preview[data-state=ok]') !== null",
        what="a preview of a valid hierarchy",
    )
    sha: str = tools.evaluate("document.querySelector('#live-preview .preview').dataset.sha256")
    return sha


def _cli_sha(tmp: Path, *args: str) -> str:
    out = tmp / "cli.csv"
    result = CliRunner().invoke(
        cli_app, ["hierarchy", *args, "--output", str(out), "--quiet"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return hashlib.sha256(out.read_bytes()).hexdigest()


def _click_and_wait(tools: DevTools, selector: str) -> None:
    since = tools.mark()
    tools.evaluate(f"document.querySelector({json.dumps(selector)}).click()")
    tools.wait_for("Page.loadEventFired", since=since)


def test_the_live_preview_follows_the_form_and_is_what_is_saved(
    served: Served, browser: DevTools, tmp_path: Path
) -> None:
    origin = served.origin
    browser.navigate(f"{origin}/hierarchies/t1?column=marital-status&token={TOKEN}")
    # a text column starts on the taxonomy builder; only its fields are shown
    shown = browser.evaluate(
        "[...document.querySelectorAll('fieldset[data-kind]')].filter(f => !f.hidden)"
        ".map(f => f.dataset.kind).join(',')"
    )
    assert shown == "taxonomy"
    # before any group is typed the preview says what is missing and lists the values
    browser.wait_until(
        "document.querySelector('#live-preview .preview[data-state=error]') !== null",
        what="the first preview",
    )
    listed = browser.evaluate("document.querySelector('#live-preview').textContent")
    assert "Married-AF-spouse" in listed and "mapping or groups" in listed
    groups = [
        "1:Married=Married-civ-spouse,Married-AF-spouse,Married-spouse-absent",
        "1:Apart=Separated,Divorced,Widowed",
        "1:Never=Never-married",
    ]
    _type(browser, "textarea[name=groups]", "\n".join(groups))
    flags = [x for g in groups for x in ("--group", g)]
    expected = _cli_sha(
        tmp_path, "taxonomy", str(ADULT), "--delimiter", ";", "--column", "marital-status", *flags
    )
    assert _preview_sha(browser) == expected
    _click_and_wait(browser, "#builder button[type=submit]")
    _click_and_wait(browser, "form[action$='/save'] button")
    saved = Path(served.workspace.tables["t1"].hierarchies["marital-status"])
    assert hashlib.sha256(saved.read_bytes()).hexdigest() == expected

    # a numeric column: choose the interval builder, type widths
    browser.navigate(f"{origin}/hierarchies/t1?column=age")
    browser.evaluate("document.querySelector('input[name=builder][value=interval]').click()")
    _type(browser, "input[name=widths]", "5,10,20")
    expected = _cli_sha(
        tmp_path, "interval", str(ADULT), "--delimiter", ";", "--column", "age",
        "--widths", "5,10,20",
    )  # fmt: skip
    assert _preview_sha(browser) == expected
    # the preview follows a change of the widths
    _type(browser, "input[name=widths]", "10,20")
    browser.wait_until(
        f"document.querySelector('#live-preview .preview').dataset.sha256 !== '{expected}'",
        what="a new preview",
    )
    assert browser.problems(allowed=(origin, "data:")) == []
