"""The HTML report in a real browser: headless Chromium over the DevTools protocol.

Chromium opens the rendered page from a file, and the test fails on any
console message of level error, any uncaught exception, any request that
leaves the file (network, even a blocked one), or a page that does not load;
it also takes a full-page screenshot and prints the page to PDF. A tiny
WebSocket client (RFC 6455, enough for the DevTools protocol) keeps the test
free of extra dependencies. Set ANONLAB_SCREENSHOT=path to keep the
screenshot (docs/img/report.png is made that way) and ANONLAB_SCREENSHOT_DIR=folder
to keep one per family (docs/img/report-tradeoff.png, ...).

Chromium comes from Debian's package: tests/setup_chromium.sh installs it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-default-apps",
    "--disable-extensions",
    "--mute-audio",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
]


class WebSocket:
    """A minimal blocking WebSocket client (text frames, client masking, no extensions)."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        assert url.startswith("ws://")
        hostport, _, path = url[5:].partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"websocket handshake refused: {head[:200]!r}")

    def _recv_exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("websocket closed")
            buf += chunk
        return buf

    def send(self, text: str) -> None:
        payload = text.encode()
        header = bytes([0x81])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def recv(self) -> str:
        message = b""
        while True:
            b0, b1 = self._recv_exact(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._recv_exact(8))[0]
            data = self._recv_exact(n)
            if opcode == 0x8:
                raise ConnectionError("websocket closed by the browser")
            if opcode in (0x9, 0xA):  # ping/pong: ignore
                continue
            message += data
            if b0 & 0x80:
                return message.decode()

    def close(self) -> None:
        self.sock.close()


class DevTools:
    """One page target driven over the DevTools protocol; records problems as they come."""

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return dict(msg.get("result", {}))
            if "method" in msg:
                self.events.append(msg)

    def wait_for(self, event: str, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        if any(e["method"] == event for e in self.events):
            return
        while time.monotonic() < end:
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == event:
                    return
        raise TimeoutError(f"no {event} within {timeout} s")

    def drain(self, seconds: float) -> None:
        """Collect the events that arrive in the next ``seconds``."""
        self.ws.sock.settimeout(seconds)
        try:
            while True:
                msg = json.loads(self.ws.recv())
                if "method" in msg:
                    self.events.append(msg)
        except TimeoutError:
            pass
        finally:
            self.ws.sock.settimeout(30.0)

    def problems(self) -> list[str]:
        """Console errors, exceptions and requests that left the file."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(f"console.{p['type']}: {p.get('args')}")
            elif e["method"] == "Runtime.exceptionThrown":
                out.append(f"exception: {p.get('exceptionDetails', {}).get('text')}")
            elif e["method"] == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(f"log error: {p['entry'].get('text')} {p['entry'].get('url', '')}")
            elif e["method"] == "Network.requestWillBeSent":
                url = p["request"]["url"]
                if not url.startswith(("file:", "data:")):
                    out.append(f"network request: {url}")
            elif e["method"] == "Network.loadingFailed":
                out.append(f"loading failed: {p.get('errorText')}")
        return out


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail(
            "chromium is not installed: run tests/setup_chromium.sh (Debian's "
            "'chromium' package) before the tests"
        )
    return path


@pytest.fixture(scope="module")
def browser(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevTools]:
    """One Chromium for the module; each page is judged on its own events."""
    profile = tmp_path_factory.mktemp("chromium-profile")
    proc = subprocess.Popen(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    ws = None
    try:
        port_file = profile / "DevToolsActivePort"
        end = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            if proc.poll() is not None:
                pytest.fail(f"chromium exited with code {proc.returncode} before listening")
            if time.monotonic() > end:
                pytest.fail("chromium did not open its DevTools port within 60 s")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as resp:
            targets = json.load(resp)
        page = next(t for t in targets if t.get("type") == "page")
        ws = WebSocket(page["webSocketDebuggerUrl"])
        tools = DevTools(ws)
        for domain in ("Runtime", "Log", "Network", "Page"):
            tools.call(f"{domain}.enable")
        yield tools
    finally:
        if ws is not None:
            ws.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)


def open_page(tools: DevTools, page: Path) -> None:
    tools.drain(0.2)
    tools.events.clear()  # problems are counted from this page on
    tools.call(
        "Emulation.setDeviceMetricsOverride",
        width=1100,
        height=900,
        deviceScaleFactor=1,
        mobile=False,
    )
    tools.call("Page.navigate", url=page.resolve().as_uri())
    tools.wait_for("Page.loadEventFired")
    tools.drain(0.5)


def screenshot(tools: DevTools) -> bytes:
    metrics = tools.call("Page.getLayoutMetrics")
    size = metrics.get("cssContentSize") or metrics["contentSize"]
    shot = tools.call(
        "Page.captureScreenshot",
        format="png",
        captureBeyondViewport=True,
        clip={
            "x": 0,
            "y": 0,
            "width": 1100,
            "height": min(float(size["height"]), 6000.0),
            "scale": 1,
        },
    )
    return base64.b64decode(shot["data"])


@pytest.fixture(scope="module")
def adult_html(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generalize run on Adult with --html, as a user makes it."""
    out = tmp_path_factory.mktemp("chromium")
    repo = data_dir.parent
    result = CliRunner().invoke(
        app,
        [
            "generalize",
            "--config",
            str(repo / "examples" / "adult.toml"),
            "--output",
            str(out / "adult_k5.csv"),
            "--report",
            str(out / "adult_k5.json"),
            "--html",
            str(out / "adult_k5.html"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    return out / "adult_k5.html"


def test_report_page_loads_without_console_errors(
    browser: DevTools, adult_html: Path, tmp_path: Path
) -> None:
    open_page(browser, adult_html)
    assert browser.problems() == []
    title = browser.call("Runtime.evaluate", expression="document.title")["result"]["value"]
    assert "Generalization" in title
    # every inlined figure decoded and has a size
    broken = browser.call(
        "Runtime.evaluate",
        expression=(
            "Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).length"
        ),
    )["result"]["value"]
    images = browser.call("Runtime.evaluate", expression="document.images.length")["result"][
        "value"
    ]
    assert images >= 2 and broken == 0
    png = screenshot(browser)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 20_000
    keep = os.environ.get("ANONLAB_SCREENSHOT")
    if keep:
        Path(keep).write_bytes(png)
    pdf = base64.b64decode(browser.call("Page.printToPDF", printBackground=True)["data"])
    assert pdf.startswith(b"%PDF") and len(pdf) > 10_000
    assert browser.problems() == []


@pytest.fixture(scope="module")
def family_pages(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One page per method family from a quick real run (internal and external)."""
    out = tmp_path_factory.mktemp("families")
    repo = data_dir.parent
    tarragona = str(data_dir / "sdc" / "Tarragona.csv")
    runs = {
        "tradeoff": ["tradeoff", tarragona, "--k", "3-10"],
        "perturb": [
            "perturb",
            tarragona,
            "--method",
            "obt",
            "--seed",
            "1",
            "--library",
            str(out / "lib.json"),
            "--output",
            str(out / "rel.csv"),
            "--key",
            str(out / "key.json"),
            "--known",
            "2",
            "--attack-records",
            "200",
        ],
        "fuse": [
            "fuse",
            str(repo / "examples" / "fusion" / "fusion.toml"),
            "--output",
            str(out / "fused.csv"),
        ],
    }
    pages = {}
    for name, args in runs.items():
        result = CliRunner().invoke(
            app,
            [
                *args,
                "--report",
                str(out / f"{name}.json"),
                "--html",
                str(out / f"{name}.html"),
                "--quiet",
            ],
        )
        assert result.exit_code == 0, (name, result.output)
        pages[name] = out / f"{name}.html"
        result = CliRunner().invoke(
            app,
            [
                "report",
                str(out / f"{name}.json"),
                "--internal",
                "--html",
                str(out / f"{name}_internal.html"),
            ],
        )
        assert result.exit_code == 0, (name, result.output)
        pages[f"{name}_internal"] = out / f"{name}_internal.html"
    return pages


@pytest.mark.parametrize(
    "name",
    ["tradeoff", "perturb", "fuse", "tradeoff_internal", "perturb_internal", "fuse_internal"],
)
def test_every_family_page_loads_cleanly(
    browser: DevTools, family_pages: dict[str, Path], name: str
) -> None:
    open_page(browser, family_pages[name])
    assert browser.problems() == []
    broken = browser.call(
        "Runtime.evaluate",
        expression=(
            "Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).length"
        ),
    )["result"]["value"]
    images = browser.call("Runtime.evaluate", expression="document.images.length")["result"][
        "value"
    ]
    assert images >= 1 and broken == 0
    banner = browser.call(
        "Runtime.evaluate", expression=("document.getElementById('internal-banner') !== null")
    )["result"]["value"]
    assert banner is name.endswith("_internal")
    png = screenshot(browser)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 20_000
    keep = os.environ.get("ANONLAB_SCREENSHOT_DIR")
    if keep and not name.endswith("_internal"):
        (Path(keep) / f"report-{name}.png").write_bytes(png)
    assert browser.problems() == []


def test_checker_sees_console_errors_and_network(browser: DevTools, tmp_path: Path) -> None:
    """The harness itself: a page with a console error and a remote image is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><html><body><script>console.error('boom')</script>"
        "<img src='http://127.0.0.1:9/x.png'></body></html>",
        encoding="utf-8",
    )
    open_page(browser, bad)
    found = "\n".join(browser.problems())
    assert "boom" in found
    assert "network request: http://127.0.0.1:9/x.png" in found
