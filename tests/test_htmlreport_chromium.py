"""The HTML report in a real browser: headless Chromium over the DevTools protocol.

Chromium opens the rendered page from a file, and the test fails on any
console message of level error, any uncaught exception, any request that
leaves the file (network, even a blocked one), or a page that does not load;
it also takes a full-page screenshot and prints the page to PDF. Set
ANONLAB_SCREENSHOT=path to keep the screenshot (docs/img/report.png is made that
way) and ANONLAB_SCREENSHOT_DIR=folder to keep one per family
(docs/img/report-tradeoff.png, ...).

Chromium comes from Debian's package: tests/setup_chromium.sh installs it. The
DevTools client (a tiny WebSocket client, no extra dependencies) is
tests/chromium_cdp.py, shared with the web app's browser tests.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from chromium_cdp import DevTools, chromium_path, launch


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevTools]:
    """One Chromium for the module; each page is judged on its own events."""
    with launch(chromium_path(), tmp_path_factory.mktemp("chromium-profile")) as tools:
        yield tools


def open_page(tools: DevTools, page: Path) -> None:
    tools.drain(0.2)
    tools.events.clear()  # problems are counted from this page on
    tools.navigate(page.resolve().as_uri())
    tools.drain(0.5)


def screenshot(tools: DevTools) -> bytes:
    return tools.screenshot()


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
