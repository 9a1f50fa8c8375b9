"""The web app end to end in a real browser: ``anonlab ui`` driven by headless Chromium.

The app is started as a user starts it (``python -m anonlab ui --port 0`` in a
subprocess; the URL with the token is read from what it prints), and Debian's
Chromium is driven over the DevTools protocol (tests/chromium_cdp.py): pages
opened with ``Page.navigate``, forms filled and buttons clicked with
``Runtime.evaluate``, files given to the upload field with
``DOM.setFileInputFiles``, downloads saved by the browser. Every request the
browser makes is recorded (``Network.requestWillBeSent``) and the tests fail
on any that leaves the app's address, and on any console error or uncaught
exception in a page; what the app prints is read too, and must hold no value
of the tables.

The scenarios are issue 26's proof: Adult uploaded, its roles given, an
interval hierarchy and a taxonomy built with their live preview (one group
renamed), k = 5 with distinct 2-diversity, the second-best node released, and
the release the browser downloads equal, byte for byte, to the one
``anonlab generalize --config settings.toml`` writes for the settings.toml the
browser downloads; the same for a microaggregation and a masking run; and a
cancelled run that writes nothing.

Set ANONLAB_UI_SCREENSHOTS=docs/ui to keep a screenshot of each step
(docs/ui.md shows them).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from chromium_cdp import DevTools, chromium_path, launch

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO / "data" / "adult"


@dataclass
class AppServer:
    """A running ``anonlab ui``: its process, the printed URL, and its temporary folder."""

    proc: subprocess.Popen[str]
    url: str
    tmp: Path
    #: every line the app printed (standard output and error), read as it comes
    log: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    def follow(self) -> None:
        """Read what the app prints in a thread (a full pipe would stop the app)."""

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.log.append(line)

        self.reader = threading.Thread(target=read, name="anonlab-ui-log", daemon=True)
        self.reader.start()

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        return self.url.split("/?", 1)[0]

    @property
    def token(self) -> str:
        return self.url.split("token=", 1)[1]

    def stop(self) -> int:
        """Stop the app as a user does (Ctrl+C: SIGINT); its exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        if self.reader is not None:
            self.reader.join(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode


def start_app(tmp: Path) -> AppServer:
    """``python -m anonlab ui --port 0`` with ``TMPDIR=tmp``; waits for the URL it prints."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "anonlab", "ui", "--port", "0", "--no-open"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    seen = []
    end = time.monotonic() + 60
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if line.startswith("anonlab web app: "):
            url = line.split(": ", 1)[1].strip()
            assert url.startswith("http://127.0.0.1:") and "/?token=" in url, url
            app = AppServer(proc, url, tmp, log=seen)
            app.follow()
            return app
    proc.kill()
    proc.wait(timeout=30)
    proc.stdout.close()
    pytest.fail(f"anonlab ui printed no URL: {''.join(seen)}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    app = start_app(tmp_path_factory.mktemp("ui-tmp"))
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevTools]:
    with launch(chromium_path(), tmp_path_factory.mktemp("chromium-profile")) as tools:
        yield tools


#: the screenshots the tests make, in the order docs/ui.md shows them (docs/ui/NAME.png)
SCREENSHOTS = (
    "01-load",
    "02-preview",
    "03-roles",
    "04-hierarchies",
    "05-hierarchy-interval",
    "06-hierarchy-taxonomy",
    "07-method",
    "08-generalize-form",
    "09-run-progress",
    "09-run-cancelled",
    "09-run-result",
    "10-explore",
    "11-apply-result",
    "12-report",
    "12-compare",
    "13-export",
    "14-microaggregate-form",
    "15-microaggregate-result",
    "16-mask-form",
    "17-mask-result",
)


def screenshot(browser: DevTools, name: str, max_height: float = 2400.0) -> None:
    """Keep a screenshot of the page (its top ``max_height`` pixels) as
    ``$ANONLAB_UI_SCREENSHOTS/name.png`` when asked."""
    assert name in SCREENSHOTS, name
    png = browser.screenshot(max_height=max_height)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    folder = os.environ.get("ANONLAB_UI_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.png").write_bytes(png)


def values_logged(server: AppServer, table: Path, columns: list[str]) -> list[str]:
    """The values of ``columns`` of ``table`` (a CSV file) that the app's log holds."""
    import pandas as pd

    frame = pd.read_csv(table, sep=None, engine="python", dtype=str)
    log = "".join(line for line in server.log if server.token not in line)
    values = {str(v) for c in columns for v in frame[c].dropna().unique() if len(str(v)) >= 4}
    return sorted(v for v in values if v in log)


def foreign_requests(browser: DevTools, server: AppServer) -> list[str]:
    """Every request the browser made that did not go to the app's address."""
    mine = (server.origin + "/", "data:", f"blob:{server.origin}/")
    return [url for url in browser.requests if not url.startswith(mine)]


def page_problems(browser: DevTools, server: AppServer) -> list[str]:
    """Console errors, exceptions, failed loads, foreign requests since the last clear."""
    return browser.problems(allowed=(server.origin + "/", "data:", f"blob:{server.origin}/"))


def test_without_the_token_the_browser_gets_403_and_no_data(
    server: AppServer, browser: DevTools
) -> None:
    browser.events.clear()
    browser.navigate(server.origin + "/static/app.css")
    body = browser.evaluate("document.body.innerText")
    assert body.startswith("403 Forbidden")
    assert "--accent" not in body
    answers = [
        (e["params"]["type"], e["params"]["response"]["status"])
        for e in browser.events
        if e["method"] == "Network.responseReceived"
    ]
    # the page, and the icon the browser asks for beside it: both refused
    assert ("Document", 403) in answers
    assert {status for _, status in answers} == {403}
    assert foreign_requests(browser, server) == []


def test_the_printed_url_sets_a_cookie_that_scripts_cannot_read(
    server: AppServer, browser: DevTools
) -> None:
    browser.navigate(server.origin + "/static/app.css?token=" + server.token)
    assert "--accent" in browser.evaluate("document.body.innerText")
    # the cookie carries the token to later requests but is HttpOnly: no script sees it
    assert browser.evaluate("document.cookie") == ""
    browser.navigate(server.origin + "/static/app.js")
    assert "followJob" in browser.evaluate("document.body.innerText")
    assert foreign_requests(browser, server) == []


def test_a_page_of_another_origin_cannot_read_the_app(server: AppServer, browser: DevTools) -> None:
    """A page elsewhere (here a data: URL) that fetches the app gets nothing back."""
    browser.navigate("data:text/html,<title>elsewhere</title>")
    outcome = browser.evaluate(
        f"fetch({server.origin + '/static/app.js'!r}, {{credentials: 'include'}})"
        ".then(r => 'read ' + r.status, e => 'blocked: ' + e.name)"
    )
    # SameSite=Strict keeps the cookie off the cross-site request, and without CORS
    # headers the browser refuses the page the answer either way
    assert outcome.startswith("blocked"), outcome


def test_the_recorder_catches_a_request_that_leaves_the_app(
    server: AppServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The harness itself: an app page that asks another address is caught (a browser of
    its own, so the module's record stays clean)."""
    with launch(chromium_path(), tmp_path_factory.mktemp("chromium-check")) as browser:
        browser.navigate(server.url)
        assert foreign_requests(browser, server) == []
        browser.evaluate(
            "new Promise(done => { const i = new Image(); i.onload = i.onerror = done;"
            " i.src = 'http://127.0.0.2:9/x.png'; })"
        )
        browser.drain(0.3)
        assert foreign_requests(browser, server) == ["http://127.0.0.2:9/x.png"]
        assert any("127.0.0.2:9" in p for p in page_problems(browser, server))


def test_the_log_check_sees_a_value_in_the_log(server: AppServer) -> None:
    """The harness itself: a record value in the app's log is found."""
    line = "a line with Married-spouse-absent in it\n"
    server.log.append(line)
    try:
        assert values_logged(server, ADULT / "adult.csv", ["marital-status"]) == [
            "Married-spouse-absent"
        ]
    finally:
        server.log.remove(line)


def test_the_documentation_shows_every_screenshot_the_tests_make() -> None:
    text = (REPO / "docs" / "ui.md").read_text(encoding="utf-8")
    assert re.findall(r"\]\(ui/([\w-]+)\.png\)", text) == list(SCREENSHOTS)
    missing = [n for n in SCREENSHOTS if not (REPO / "docs" / "ui" / f"{n}.png").is_file()]
    assert missing == []


def test_stopping_the_app_removes_its_private_folder(tmp_path: Path) -> None:
    app = start_app(tmp_path)
    try:
        folders = list(tmp_path.glob("anonlab-ui-*"))
        assert len(folders) == 1
        assert folders[0].stat().st_mode & 0o077 == 0
        reply = urllib.request.urlopen(app.origin + "/static/app.css?token=" + app.token)
        assert reply.status == 200
        reply.close()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(app.origin + "/static/app.css")
        assert refused.value.code == 403
        refused.value.close()
    finally:
        code = app.stop()
    assert code == 0
    assert list(tmp_path.glob("anonlab-ui-*")) == []


# ---------------------------------------------------------------------------
# driving the pages
# ---------------------------------------------------------------------------


def js(value: object) -> str:
    """A Python value as a JavaScript literal."""
    return json.dumps(value)


def fill(browser: DevTools, selector: str, value: str) -> None:
    """Type ``value`` into a field (text, textarea, select) and tell the page it changed."""
    browser.evaluate(
        f"""(() => {{
        const el = document.querySelector({js(selector)});
        if (!el) throw new Error("no field " + {js(selector)});
        el.value = {js(value)};
        if (el.value !== {js(value)}) throw new Error({js(selector)} + " refused " + {js(value)});
        el.dispatchEvent(new Event("input", {{bubbles: true}}));
        el.dispatchEvent(new Event("change", {{bubbles: true}}));
        return true;
        }})()"""
    )


def tick(browser: DevTools, selector: str, on: bool = True) -> None:
    """Tick (or untick) a checkbox or choose a radio button."""
    browser.evaluate(
        f"""(() => {{
        const el = document.querySelector({js(selector)});
        if (!el) throw new Error("no box " + {js(selector)});
        el.checked = {js(on)};
        el.dispatchEvent(new Event("change", {{bubbles: true}}));
        return true;
        }})()"""
    )


def choose(browser: DevTools, selector: str, values: list[str]) -> None:
    """Choose exactly ``values`` in a multiple select."""
    browser.evaluate(
        f"""(() => {{
        const el = document.querySelector({js(selector)});
        if (!el) throw new Error("no list " + {js(selector)});
        const wanted = {js(values)};
        const found = [...el.options].filter(o => wanted.includes(o.value)).length;
        if (found !== wanted.length) throw new Error({js(selector)} + " lacks one of " + wanted);
        for (const option of el.options) option.selected = wanted.includes(option.value);
        el.dispatchEvent(new Event("change", {{bubbles: true}}));
        return true;
        }})()"""
    )


def click(browser: DevTools, selector: str, timeout: float = 120.0) -> None:
    """Click what ``selector`` names and wait for the page it leads to."""
    since = browser.mark()
    browser.evaluate(
        f"""(() => {{
        const el = document.querySelector({js(selector)});
        if (!el) throw new Error("nothing to click at " + {js(selector)});
        el.click();
        return true;
        }})()"""
    )
    browser.wait_for("Page.loadEventFired", timeout=timeout, since=since)


def text_of(browser: DevTools, selector: str = "main") -> str:
    value = browser.evaluate(f"(document.querySelector({js(selector)}) || document.body).innerText")
    return str(value)


def on_page(browser: DevTools, path: str) -> str:
    """Check the browser shows the app's page ``path`` (answered 200); its main text."""
    document = [
        e["params"]["response"]
        for e in browser.events
        if e["method"] == "Network.responseReceived" and e["params"].get("type") == "Document"
    ]
    here = browser.evaluate("location.pathname")
    status = document[-1]["status"] if document else None
    if here != path or status != 200:
        pytest.fail(f"expected page {path}, got {here} ({status}): {text_of(browser)[:800]}")
    return text_of(browser)


def load_path(browser: DevTools, server: AppServer, table: Path) -> str:
    """Load ``table`` on the Load page by typing its path on this machine; the table's id."""
    browser.navigate(server.url)
    on_page(browser, "/")
    fill(browser, "#path", str(table))
    click(browser, "form[action='/load/path'] button[type=submit]")
    assert f"Preview of {table.name}" in on_page(browser, "/")
    return str(browser.evaluate("new URLSearchParams(location.search).get('table')"))


def upload(browser: DevTools, server: AppServer, table: Path, shot: str | None = None) -> str:
    """Load ``table`` on the Load page by the upload form; the loaded table's id."""
    browser.navigate(server.url)
    on_page(browser, "/")
    if shot is not None:
        screenshot(browser, shot)
    browser.set_files("#upload-file", [table])
    click(browser, "#upload-form button[type=submit]")
    text = on_page(browser, "/")
    assert f"Preview of {table.name}" in text
    return str(browser.evaluate("new URLSearchParams(location.search).get('table')"))


def set_roles(browser: DevTools, roles: dict[str, str], files: dict[str, Path]) -> None:
    """On the Roles page: each column's role, the hierarchy files typed in for some QIs."""
    for column, role in roles.items():
        field = browser.evaluate(
            f"""(() => {{
            const label = [...document.querySelectorAll("label[for^=role_]")]
              .find(l => l.textContent.trim() === {js(column)});
            if (!label) throw new Error("no role field for " + {js(column)});
            return label.htmlFor;
            }})()"""
        )
        fill(browser, f"#{field}", role)
        if column in files:
            number = field.removeprefix("role_")
            fill(browser, f"input[name=hierarchy_{number}]", str(files[column]))


def build_hierarchy(
    browser: DevTools,
    table: str,
    column: str,
    builder: str,
    fields: dict[str, str],
    shot: str,
    rename: tuple[str, str] | None = None,
) -> str:
    """On the Hierarchies page: choose ``builder``, fill its fields, wait for the live
    preview, use the hierarchy, rename one group of level 1 (``rename``: old, new) if
    asked, and save it; the SHA-256 of the ARX CSV text the page showed last."""
    click(browser, f"a[href='/hierarchies/{table}?column={column}']")
    on_page(browser, f"/hierarchies/{table}")
    browser.wait_until("!document.getElementById('live-preview').hasAttribute('aria-busy')")
    browser.evaluate("document.getElementById('live-preview').innerHTML = ''")
    tick(browser, f"#builder input[name=builder][value={builder}]")
    for name, value in fields.items():
        fill(browser, f"#builder fieldset[data-kind={builder}] [name={name}]", value)
    # the preview follows the form (debounced): wait for the one of these settings
    sha = browser.wait_until(
        """(() => {
        const box = document.getElementById("live-preview");
        const pv = box.querySelector(".preview");
        return !box.hasAttribute("aria-busy") && pv && pv.dataset.state === "ok"
          && box.querySelector(".covered") ? pv.dataset.sha256 : null;
        })()""",
        what=f"the live preview of {column}'s {builder} hierarchy",
    )
    screenshot(browser, shot)
    click(browser, "#builder button[type=submit]")
    on_page(browser, f"/hierarchies/{table}")
    draft = "document.querySelector('#draft .preview').dataset.sha256"
    assert browser.evaluate(draft) == sha
    if rename is not None:
        old, new = rename
        field = f"input[aria-label={js('new label of ' + old)}]"
        fill(browser, f"#edit {field}", new)
        click(browser, f"#edit form:has({field}) button[type=submit]")
        on_page(browser, f"/hierarchies/{table}")
        assert f"'{old}' renamed '{new}'" in text_of(browser, "#draft .edits")
        assert browser.evaluate(draft) != sha
        sha = browser.evaluate(draft)
    click(browser, "form[action$='/save'] button[type=submit]")
    on_page(browser, f"/hierarchies/{table}")
    assert "Saved" in text_of(browser, "#saved")
    return str(sha)


def _previous_entry(browser: DevTools) -> int:
    history = browser.call("Page.getNavigationHistory")
    return int(history["entries"][history["currentIndex"] - 1]["id"])


def fetch_bytes(browser: DevTools, selector: str) -> bytes:
    """The body of the link ``selector`` as the page's own script gets it (base64 over CDP)."""
    encoded = browser.evaluate(
        f"""(async () => {{
        const link = document.querySelector({js(selector)});
        if (!link) throw new Error("no link " + {js(selector)});
        const reply = await fetch(link.href);
        if (!reply.ok) throw new Error(link.href + ": " + reply.status);
        const bytes = new Uint8Array(await reply.arrayBuffer());
        let text = "";
        for (let i = 0; i < bytes.length; i += 32768) {{
          text += String.fromCharCode(...bytes.subarray(i, i + 32768));
        }}
        return btoa(text);
        }})()"""
    )
    return base64.b64decode(encoded)


def finish_run(browser: DevTools, shot: str | None = None, timeout: float = 300.0) -> str:
    """On a run's page: wait until the run ended (the page reloads itself), check it is
    done; the run's id."""
    here = str(browser.evaluate("location.pathname"))
    assert here.startswith("/runs/"), f"{here}: {text_of(browser)[:600]}"
    if shot is not None and browser.evaluate("document.querySelector('[data-job]') !== null"):
        screenshot(browser, shot)
    try:
        browser.wait_until(
            """document.readyState === "complete" && document.querySelector("[data-job]") === null
            && document.querySelector("main h2") !== null""",
            timeout=timeout,
            what=f"the end of run {here}",
        )
    except TimeoutError:
        state = browser.evaluate(f"fetch({js(here + '/state')}).then(r => r.text())")
        pytest.fail(f"run {here} did not end: {state}; the page: {text_of(browser)[:500]}")
    result = text_of(browser)
    if browser.evaluate("document.getElementById('h-result') === null"):
        pytest.fail(f"run {here} did not end done: {result[:800]}")
    return here.removeprefix("/runs/")


def cli_release(settings: Path, command: str = "generalize") -> bytes:
    """``anonlab COMMAND --config settings.toml`` run in the file's folder; the release."""
    done = subprocess.run(
        [sys.executable, "-m", "anonlab", command, "--config", settings.name, "--quiet"],
        cwd=settings.parent,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return (settings.parent / "release.csv").read_bytes()


def export_and_compare(
    browser: DevTools, run: str, folder: Path, command: str, shot: str | None = None
) -> None:
    """On run ``run``'s Export page: download the release and settings.toml as a user
    does, run the CLI on that TOML, and check both releases are the same bytes."""
    click(browser, f"a[href='/runs/{run}/export']")
    on_page(browser, f"/runs/{run}/export")
    if shot is not None:
        screenshot(browser, shot)
    downloads = folder / "downloads"
    release = browser.download(f"a[href='/runs/{run}/files/release.csv']", downloads)
    settings = browser.download(f"a[href='/runs/{run}/files/settings.toml']", downloads)
    assert release.name == "release.csv" and settings.name == "settings.toml"
    cli = folder / "cli"
    cli.mkdir()
    (cli / "settings.toml").write_bytes(settings.read_bytes())
    assert f"anonlab {command} --config settings.toml" in settings.read_text()
    assert cli_release(cli / "settings.toml", command) == release.read_bytes()


# ---------------------------------------------------------------------------
# the workflow
# ---------------------------------------------------------------------------

#: the generalization scenario's roles on Adult: two hierarchies built in the app
ADULT_ROLES = {
    "sex": "qi",
    "age": "qi",
    "race": "qi",
    "marital-status": "qi",
    "education": "qi",
    "native-country": "insensitive",
    "workclass": "insensitive",
    "occupation": "insensitive",
    "salary-class": "sensitive",
}
ADULT_FILES = {c: ADULT / f"hierarchy_{c}.csv" for c in ("sex", "race", "education")}
#: the taxonomy of marital status built in the app (as data/adult's file groups it)
MARITAL_GROUPS = (
    "1:spouse present=Married-civ-spouse,Married-AF-spouse\n"
    "1:spouse not present=Divorced,Never-married,Separated,Widowed,Married-spouse-absent"
)


def adult_with_hierarchies(browser: DevTools, server: AppServer, tmp_path: Path) -> str:
    """Adult uploaded, its roles given, age's intervals and marital status's taxonomy built
    with their live preview and saved (the intervals also by the ``anonlab hierarchy`` line
    the page gives, to the same bytes); the table's id."""
    table = upload(browser, server, ADULT / "adult.csv", "01-load")
    assert "30162 rows, 9 columns" in text_of(browser)
    screenshot(browser, "02-preview")

    click(browser, f"a[href='/roles?table={table}']")
    on_page(browser, "/roles")
    set_roles(browser, ADULT_ROLES, ADULT_FILES)
    screenshot(browser, "03-roles")
    click(browser, "form[action='/roles'] button[type=submit]")
    on_page(browser, "/hierarchies")
    screenshot(browser, "04-hierarchies")

    # each saved file is the one the preview showed
    age = build_hierarchy(
        browser, table, "age", "interval", {"widths": "5,10,20"}, "05-hierarchy-interval"
    )
    saved = fetch_bytes(browser, "#saved a[href*='/download']")
    assert hashlib.sha256(saved).hexdigest() == age
    assert saved.startswith(b"17;15-19;10-19;0-19;*")
    # the command line the page gives for it writes the same file
    line = str(browser.evaluate("document.querySelector('#draft pre').innerText"))
    words = shlex.split(line)
    assert words[:3] == ["anonlab", "hierarchy", "interval"], line
    done = subprocess.run(
        [sys.executable, "-m", "anonlab", *words[1:]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / words[words.index("--output") + 1]).read_bytes() == saved
    click(browser, "a[href='/hierarchies']")
    marital = build_hierarchy(
        browser,
        table,
        "marital-status",
        "taxonomy",
        {"groups": MARITAL_GROUPS},
        "06-hierarchy-taxonomy",
        rename=("spouse not present", "no spouse present"),
    )
    saved = fetch_bytes(browser, "#saved a[href*='/download']")
    assert hashlib.sha256(saved).hexdigest() == marital
    assert b"Married-AF-spouse;spouse present;*" in saved
    assert b"Widowed;no spouse present;*" in saved
    click(browser, "a[href='/hierarchies']")
    on_page(browser, "/hierarchies")
    return table


def generalize_k5_l2(browser: DevTools, table: str) -> str:
    """k = 5 with distinct 2-diversity of salary-class, 1 % suppression, five alternatives,
    from the Method page; the run's id once done."""
    click(browser, f"main a.button[href='/method?table={table}']")  # "Next: the method"
    on_page(browser, "/method")
    screenshot(browser, "07-method")
    click(browser, f"a[href='/method/generalize?table={table}']")
    on_page(browser, "/method/generalize")
    tick(browser, "input[name=recoding][value=full-domain]")
    fill(browser, "#k", "5")
    fill(browser, "select[name=model_0]", "distinct-l-diversity")
    fill(browser, "select[name=attribute_0]", "salary-class")
    fill(browser, "input[name=parameters_0]", "l=2")
    fill(browser, "#suppression", "1%")
    fill(browser, "#alternatives", "5")
    screenshot(browser, "08-generalize-form")
    click(browser, "form[action='/method/generalize'] button[type=submit]")
    first = finish_run(browser, "09-run-progress")
    screenshot(browser, "09-run-result")
    return first


def test_generalization_from_upload_to_release(
    server: AppServer, browser: DevTools, tmp_path: Path
) -> None:
    """Adult: upload, roles, two hierarchies built with preview, k = 5 with l-diversity,
    the second-best node released, and the download equal to the CLI's release."""
    browser.events.clear()
    table = adult_with_hierarchies(browser, server, tmp_path)
    first = generalize_k5_l2(browser, table)

    # the solution space: release the second-best node
    click(browser, f"a[href='/runs/{first}/explore']")
    on_page(browser, f"/runs/{first}/explore")
    screenshot(browser, "10-explore")
    click(browser, "button[aria-label='release node 2']")
    second = finish_run(browser)
    assert "apply" in text_of(browser, "h1")
    screenshot(browser, "11-apply-result")

    # the HTML report as the app serves it
    click(browser, f"a[href='/runs/{second}/files/report.html']")
    on_page(browser, f"/runs/{second}/files/report.html")
    screenshot(browser, "12-report", max_height=1600.0)
    browser.call("Page.navigateToHistoryEntry", entryId=_previous_entry(browser))
    browser.wait_until("location.pathname === " + js(f"/runs/{second}"))

    export_and_compare(browser, second, tmp_path, "generalize", "13-export")
    # the value mappings: each original value and the values released for it
    mappings = browser.download(f"a[href='/runs/{second}/files/mappings.csv']", tmp_path / "m")
    rows = mappings.read_text(encoding="utf-8").splitlines()
    assert rows[0] == "attribute,original,released,records"
    assert any(r.startswith("marital-status,Widowed,no spouse present,") for r in rows)
    assert any(r.startswith("age,39,*,") for r in rows)

    # the risk-utility map: the optimum beside a k = 10 release
    browser.navigate(f"{server.origin}/compare?table={table}")
    on_page(browser, "/compare")
    assert browser.evaluate(f"document.getElementById('run-{first}').checked") is True
    # a method typed as a compare TOML file's [[method]] table, with the hierarchies the
    # exported settings name
    import tomli_w

    qi = tomllib.loads((tmp_path / "cli" / "settings.toml").read_text(encoding="utf-8"))["qi"]
    more = {"method": [{"name": "k10", "command": "generalize", "k": 10, "qi": qi}]}
    fill(browser, "#more", tomli_w.dumps(more))
    click(browser, "form.family button[name=action][value=run]")
    finish_run(browser)
    browser.wait_until(
        "[...document.images].some(i => i.src.endsWith('/map.png') && i.naturalWidth > 0)",
        what="the R-U map",
    )
    screenshot(browser, "12-compare")
    texts = ["marital-status", "education", "native-country", "workclass", "occupation"]
    assert values_logged(server, ADULT / "adult.csv", texts) == []

    assert page_problems(browser, server) == []
    assert foreign_requests(browser, server) == []


SDC = REPO / "data" / "sdc"


def method_page(browser: DevTools, server: AppServer, table: str, command: str) -> None:
    """From the Method page to the family's form for ``table``."""
    browser.navigate(f"{server.origin}/method?table={table}")
    click(browser, f"a[href='/method/{command}?table={table}']")
    on_page(browser, f"/method/{command}")
    assert browser.evaluate("document.querySelector('#table').value") == table


def test_microaggregation_from_a_path_to_release(
    server: AppServer, browser: DevTools, tmp_path: Path
) -> None:
    """Tarragona read from its path, every column a quasi-identifier, MDAV with k = 5; the
    release the browser downloads is the CLI's for the exported settings.toml."""
    browser.events.clear()
    tarragona = SDC / "Tarragona.csv"
    table = load_path(browser, server, tarragona)
    click(browser, f"a[href='/roles?table={table}']")
    columns = tarragona.read_text(encoding="utf-8").splitlines()[0].split(",")
    set_roles(browser, dict.fromkeys(columns, "qi"), {})
    click(browser, "form[action='/roles'] button[type=submit]")

    method_page(browser, server, table, "microaggregate")
    fill(browser, "#f-method", "mdav")
    fill(browser, "#f-k", "5")
    screenshot(browser, "14-microaggregate-form")
    click(browser, "form.family button[name=action][value=run]")
    run = finish_run(browser)
    assert "microaggregate" in text_of(browser, "h1")
    screenshot(browser, "15-microaggregate-result")
    export_and_compare(browser, run, tmp_path, "microaggregate")
    assert values_logged(server, tarragona, columns) == []

    assert page_problems(browser, server) == []
    assert foreign_requests(browser, server) == []


def export_formats(browser: DevTools, run: str, folder: Path) -> None:
    """On run ``run``'s Export page: the release as Parquet (a download) and into a SQLite
    table, each holding the released CSV's values."""
    import sqlite3

    import pandas as pd

    from anonlab.io import read_table

    release = read_table(folder / "downloads" / "release.csv")
    form = f"form[action='/runs/{run}/export']"
    tick(browser, f"{form} input[name=format][value=parquet]")
    parquet = browser.download(f"{form} button[type=submit]", folder / "formats")
    assert parquet.name == "release.parquet"
    pd.testing.assert_frame_equal(pd.read_parquet(parquet), release)
    tick(browser, f"{form} input[name=format][value=database]")
    database = folder / "formats" / "release.db"
    fill(browser, f"{form} input[name=url]", f"sqlite:///{database}")
    fill(browser, f"{form} input[name=table]", "masked")
    click(browser, f"{form} button[type=submit]")
    assert "The release was written to table 'masked'" in text_of(browser)
    with sqlite3.connect(database) as connection:
        written = pd.read_sql("SELECT * FROM masked", connection)
    assert written.shape == release.shape
    assert written.astype(str).equals(release.astype(str))


def test_masking_from_upload_to_release(
    server: AppServer, browser: DevTools, tmp_path: Path
) -> None:
    """sdcMicro's testdata uploaded, expend and income masked with additive noise (seed
    11); the release the browser downloads is the CLI's for the exported settings.toml."""
    browser.events.clear()
    testdata = SDC / "testdata.csv"
    table = upload(browser, server, testdata)
    click(browser, f"a[href='/roles?table={table}']")
    columns = testdata.read_text(encoding="utf-8").splitlines()[0].split(",")
    roles = {c: "qi" if c in ("expend", "income") else "insensitive" for c in columns}
    set_roles(browser, roles, {})
    click(browser, "form[action='/roles'] button[type=submit]")

    method_page(browser, server, table, "mask")
    fill(browser, "#f-method", "noise")
    # the page's script offers the chosen method's parameters only
    assert browser.evaluate("document.getElementById('f-parameters.noise.noise').disabled") is False
    assert browser.evaluate("document.getElementById('f-parameters.pram.pd').disabled") is True
    choose(browser, "#f-columns", ["expend", "income"])
    fill(browser, "#f-seed", "11")
    fill(browser, "[id='f-parameters.noise.noise']", "30")
    fill(browser, "[id='f-parameters.noise.noise_method']", "additive")
    screenshot(browser, "16-mask-form")
    click(browser, "form.family button[name=action][value=run]")
    run = finish_run(browser)
    assert "mask" in text_of(browser, "h1")
    screenshot(browser, "17-mask-result")
    export_and_compare(browser, run, tmp_path, "mask")
    export_formats(browser, run, tmp_path)
    assert values_logged(server, testdata, ["expend", "income", "savings"]) == []

    assert page_problems(browser, server) == []
    assert foreign_requests(browser, server) == []


def test_a_database_table_loads_with_its_preview(
    server: AppServer, browser: DevTools, tmp_path: Path
) -> None:
    """The Load page's third way: a SQLAlchemy URL and a table name (SQLite here)."""
    import sqlite3

    import pandas as pd

    browser.events.clear()
    database = tmp_path / "survey.db"
    frame = pd.read_csv(SDC / "testdata.csv")
    with sqlite3.connect(database) as connection:
        frame.to_sql("households", connection, index=False)
    browser.navigate(server.url)
    fill(browser, "#db-url", f"sqlite:///{database}")
    fill(browser, "#db-table", "households")
    click(browser, "form[action='/load/database'] button[type=submit]")
    text = on_page(browser, "/")
    assert "Preview of households" in text
    assert f"{len(frame)} rows, {len(frame.columns)} columns" in text
    assert page_problems(browser, server) == []
    assert foreign_requests(browser, server) == []


def test_a_cancelled_run_writes_nothing(
    server: AppServer, browser: DevTools, tmp_path: Path
) -> None:
    """Adult ten times over (301,620 records, every column's hierarchy), an exhaustive
    search: "Cancel the run" stops it and its folder holds no output."""
    browser.events.clear()
    lines = (ADULT / "adult.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    big = tmp_path / "adult_x10.csv"
    big.write_text(lines[0] + "".join(lines[1:]) * 10, encoding="utf-8")
    table = load_path(browser, server, big)
    click(browser, f"a[href='/roles?table={table}']")
    roles = {c: ("sensitive" if c == "salary-class" else "qi") for c in ADULT_ROLES}
    files = {c: ADULT / f"hierarchy_{c}.csv" for c, r in roles.items() if r == "qi"}
    set_roles(browser, roles, files)
    click(browser, "form[action='/roles'] button[type=submit]")
    browser.navigate(f"{server.origin}/method/generalize?table={table}")
    fill(browser, "#k", "5")
    fill(browser, "#search", "exhaustive")
    click(browser, "form[action='/method/generalize'] button[type=submit]")
    run = str(browser.evaluate("location.pathname")).removeprefix("/runs/")
    assert browser.evaluate("document.querySelector('[data-job]') !== null"), text_of(browser)
    click(browser, f"form[action='/runs/{run}/cancel'] button[type=submit]")
    browser.wait_until(
        "document.readyState === 'complete' && document.querySelector('[data-job]') === null",
        timeout=120,
        what=f"the end of run {run}",
    )
    assert "Cancelled" in text_of(browser, "main h2"), text_of(browser)
    screenshot(browser, "09-run-cancelled")
    folders = list(server.tmp.glob(f"anonlab-ui-*/runs/{run}"))
    assert len(folders) == 1
    assert sorted(p.name for p in folders[0].iterdir()) == ["settings.toml"]
    assert page_problems(browser, server) == []
    assert foreign_requests(browser, server) == []
