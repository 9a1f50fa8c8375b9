"""Headless Chromium driven over the DevTools protocol (CDP), for the browser tests.

Shared by the HTML report's test (tests/test_htmlreport_chromium.py: a file
page) and the web app's end-to-end tests (tests/test_ui_browser.py: pages served
by ``anonlab ui``). A tiny WebSocket client (RFC 6455: text frames, client
masking, no extensions; enough for the DevTools protocol) keeps the tests free
of extra dependencies. :class:`DevTools` records every event it reads, and
every request the page makes (``Network.requestWillBeSent``) in
:attr:`DevTools.requests`, which is never cleared, so a test can fail on any
request that left the app's address.

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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

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

#: the width of the pages' viewport and screenshots, in CSS pixels
WIDTH = 1100


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
        self._buffer = b""

    def _frame(self) -> tuple[int, int, bytes] | None:
        """The first complete frame in the buffer (fin, opcode, data), taken out; or ``None``."""
        buf = self._buffer
        if len(buf) < 2:
            return None
        b0, b1 = buf[0], buf[1]
        n, start = b1 & 0x7F, 2
        if n == 126:
            if len(buf) < 4:
                return None
            n, start = struct.unpack("!H", buf[2:4])[0], 4
        elif n == 127:
            if len(buf) < 10:
                return None
            n, start = struct.unpack("!Q", buf[2:10])[0], 10
        if len(buf) < start + n:
            return None
        self._buffer = buf[start + n :]
        return b0 & 0x80, b0 & 0x0F, buf[start : start + n]

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
        key = (mask * (n // 4 + 1))[:n]
        masked = (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")
        self.sock.sendall(header + mask + masked)

    def recv(self) -> str:
        """The next text message. A socket timeout leaves the partial frame buffered."""
        message = b""
        while True:
            frame = self._frame()
            if frame is None:
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    raise ConnectionError("websocket closed")
                self._buffer += chunk
                continue
            fin, opcode, data = frame
            if opcode == 0x8:
                raise ConnectionError("websocket closed by the browser")
            if opcode in (0x9, 0xA):  # ping/pong: ignore
                continue
            message += data
            if fin:
                return message.decode()

    def close(self) -> None:
        self.sock.close()


class DevTools:
    """One page target driven over the DevTools protocol; records events as they come.

    ``events`` holds every event read so far (a test may clear it to judge one
    page on its own); ``requests`` holds the URL of every request the page made
    since the start, in order, and is never cleared.
    """

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        self.requests: list[str] = []

    def _keep(self, msg: dict[str, Any]) -> None:
        self.events.append(msg)
        if msg["method"] == "Network.requestWillBeSent":
            self.requests.append(str(msg["params"]["request"]["url"]))

    def _read(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or ``None`` when nothing came within ``timeout`` seconds."""
        self.ws.sock.settimeout(max(timeout, 0.01))
        try:
            msg: dict[str, Any] = json.loads(self.ws.recv())
        except TimeoutError:
            return None
        finally:
            self.ws.sock.settimeout(60.0)
        return msg

    def call(self, method: str, timeout: float = 60.0, **params: Any) -> dict[str, Any]:
        """Send one command and return its result; events read meanwhile are kept."""
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            msg = self._read(left) if left > 0 else None
            if msg is None:
                raise TimeoutError(f"{method}: no answer within {timeout} s")
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return dict(msg.get("result", {}))
            if "method" in msg:
                self._keep(msg)

    def mark(self) -> int:
        """A position in ``events``: :meth:`wait_for` with ``since`` looks only after it."""
        return len(self.events)

    def wait_for(self, event: str, timeout: float = 30.0, since: int = 0) -> dict[str, Any]:
        """The first ``event`` at or after position ``since`` of ``events`` (waits for it)."""
        for e in self.events[since:]:
            if e["method"] == event:
                return e
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            msg = self._read(left)
            if msg is not None and "method" in msg:
                self._keep(msg)
                if msg["method"] == event:
                    return msg
        raise TimeoutError(f"no {event} within {timeout} s")

    def drain(self, seconds: float) -> None:
        """Collect the events that arrive in the next ``seconds``."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            msg = self._read(left)
            if msg is not None and "method" in msg:
                self._keep(msg)

    def evaluate(self, expression: str, timeout: float = 60.0) -> Any:
        """The value of a JavaScript expression in the page (promises awaited).

        A thrown exception fails with its text, so a selector that finds nothing
        (``document.querySelector(...).value`` on ``null``) says so at once.
        """
        reply = self.call(
            "Runtime.evaluate",
            timeout=timeout,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise RuntimeError(f"in the page: {text}\n  while evaluating: {expression}")
        return reply["result"].get("value")

    def wait_until(self, expression: str, timeout: float = 60.0, what: str = "") -> Any:
        """Poll a JavaScript expression until it is truthy; its value."""
        end = time.monotonic() + timeout
        while True:
            with contextlib.suppress(RuntimeError):  # a page between two loads
                value = self.evaluate(expression)
                if value:
                    return value
            if time.monotonic() > end:
                raise TimeoutError(f"{what or expression}: not true within {timeout} s")
            self.drain(0.2)

    def set_files(self, selector: str, paths: Sequence[Path]) -> None:
        """Give the file input ``selector`` these files, as a user choosing them does."""
        found = self.call(
            "Runtime.evaluate", expression=f"document.querySelector({json.dumps(selector)})"
        )["result"]
        if found.get("subtype") == "null" or "objectId" not in found:
            raise RuntimeError(f"no element {selector} in the page")
        self.call(
            "DOM.setFileInputFiles",
            files=[str(Path(p).resolve()) for p in paths],
            objectId=found["objectId"],
        )

    def download(self, selector: str, folder: Path, timeout: float = 120.0) -> Path:
        """Click the link ``selector`` and wait for the browser to save what it downloads
        into ``folder`` (under the name the server suggests); the file's path."""
        folder.mkdir(parents=True, exist_ok=True)
        self.call(
            "Browser.setDownloadBehavior",
            behavior="allow",
            downloadPath=str(folder.resolve()),
            eventsEnabled=True,
        )
        since = self.mark()
        clicked = self.evaluate(
            f"""(() => {{
            const link = document.querySelector({json.dumps(selector)});
            if (!link) return false;
            link.click();
            return true;
            }})()"""
        )
        if not clicked:
            raise RuntimeError(f"no link {selector} in the page")
        begun = self.wait_for("Browser.downloadWillBegin", timeout=timeout, since=since)
        guid = begun["params"]["guid"]
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            progress = [
                e["params"]
                for e in self.events[since:]
                if e["method"] == "Browser.downloadProgress" and e["params"]["guid"] == guid
            ]
            if progress and progress[-1]["state"] == "completed":
                return folder / str(begun["params"]["suggestedFilename"])
            if progress and progress[-1]["state"] == "canceled":
                raise RuntimeError(f"the download of {selector} was cancelled")
            self.drain(0.1)
        raise TimeoutError(f"the download of {selector} did not end within {timeout} s")

    def navigate(self, url: str, timeout: float = 60.0) -> None:
        """Open ``url`` and wait for its load event."""
        since = self.mark()
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired", timeout=timeout, since=since)

    def problems(self, allowed: Sequence[str] = ("file:", "data:")) -> list[str]:
        """Console errors, exceptions, failed loads and requests to URLs outside ``allowed``.

        A request the browser turned into a download (a form whose answer is an
        attachment) ends as an aborted load; that one is no problem.
        """
        urls = {
            e["params"]["requestId"]: e["params"]["request"]["url"]
            for e in self.events
            if e["method"] == "Network.requestWillBeSent"
        }
        downloaded = {
            e["params"]["url"] for e in self.events if e["method"] == "Browser.downloadWillBegin"
        }
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(f"console.{p['type']}: {p.get('args')}")
            elif e["method"] == "Runtime.exceptionThrown":
                details = p.get("exceptionDetails", {})
                text = details.get("exception", {}).get("description") or details.get("text")
                out.append(f"exception: {text}")
            elif e["method"] == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(f"log error: {p['entry'].get('text')} {p['entry'].get('url', '')}")
            elif e["method"] == "Network.requestWillBeSent":
                url = p["request"]["url"]
                if not url.startswith(tuple(allowed)):
                    out.append(f"network request: {url}")
            elif e["method"] == "Network.loadingFailed":
                aborted = p.get("errorText") == "net::ERR_ABORTED"
                if not (aborted and urls.get(p.get("requestId")) in downloaded):
                    out.append(
                        f"loading failed: {p.get('errorText')} {urls.get(p.get('requestId'))}"
                    )
        return out

    def screenshot(self, max_height: float = 6000.0) -> bytes:
        """The whole page as PNG, :data:`WIDTH` pixels wide."""
        metrics = self.call("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        shot = self.call(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={
                "x": 0,
                "y": 0,
                "width": WIDTH,
                "height": min(float(size["height"]), max_height),
                "scale": 1,
            },
        )
        return base64.b64decode(shot["data"])


def chromium_path() -> str:
    """Debian's Chromium; the test fails (not skips) when it is missing."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.fail(
            "chromium is not installed: run tests/setup_chromium.sh (Debian's "
            "'chromium' package) before the tests"
        )
    return path


@contextlib.contextmanager
def launch(chromium: str, profile: Path) -> Iterator[DevTools]:
    """A headless Chromium with a fresh profile; its one page, with Runtime, Log, Network, Page on.

    The browser is stopped (its whole process group) at exit.
    """
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
        for domain in ("Runtime", "Log", "Network", "Page", "DOM"):
            tools.call(f"{domain}.enable")
        tools.call(
            "Emulation.setDeviceMetricsOverride",
            width=WIDTH,
            height=900,
            deviceScaleFactor=1,
            mobile=False,
        )
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
