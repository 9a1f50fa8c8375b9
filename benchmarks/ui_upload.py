"""``anonlab ui`` on a 1 GB CSV upload: time to the preview and the server's peak memory (issue 26).

The table: Adult's rows (data/adult/adult.csv, 9 columns, ``;``-separated) drawn
with replacement (seeded) until the file holds at least ``--gib`` GiB, written
once to ``--csv`` (default /tmp/anonlab_ui_upload/adult_1g.csv) and reused.

Each repeat starts a fresh app as a user does (``python -m anonlab ui --port 0``,
its private folder under ``--tmp``), then uploads the file as the Load page's
script does: one ``PUT /upload?name=...`` whose body is the file's raw bytes
(``Content-Type: application/octet-stream``, streamed from disk in 1 MiB
pieces; the token in the ``X-Anonlab-Token`` header instead of the cookie). The
app writes the body to disk as it arrives, reads the table with the CLI's
reader and summarizes every column (type, distinct and missing values, first
rows), and answers with the table's id; then ``GET /?table=ID`` renders the
preview page. Measured per repeat:

* ``sent``: seconds until the client had written the whole body;
* ``preview``: seconds from the first byte sent to the preview page received;
* ``server CPU``: the app process's user + system CPU seconds over the same span
  (``/proc/PID/stat``, all its threads), and up to the body sent;
* ``peak RSS``: the app process's resident-set high-water mark (``VmHWM`` of
  ``/proc/PID/status``), and its RSS before the upload (``VmRSS``).

With ``--browser``, each repeat is instead the user's own path: headless
Chromium (Debian's, driven over the DevTools protocol by tests/chromium_cdp.py)
opens the app's URL, the file is given to the Load page's file field, and the
Upload button is clicked; the page's script sends the file in one ``PUT`` and
opens the preview when the app answers. ``preview`` is then the time from the
click to the preview page's load event (``sent`` is not seen from outside the
browser and is left out).

Medians of ``--repeats`` (default 3) are printed and saved as JSON::

    python benchmarks/ui_upload.py --repeats 3
    python benchmarks/ui_upload.py --repeats 3 --browser
"""

from __future__ import annotations

import argparse
import http.client
import importlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "data" / "adult" / "adult.csv"
GIB = 1 << 30
#: bytes the client sends per write (the body streamed from disk)
PIECE = 1 << 20


def make_csv(path: Path, gib: float, seed: int) -> dict[str, Any]:
    """Adult's rows drawn with replacement until ``path`` holds ``gib`` GiB; reused when a
    file of that size made from the same seed is there (a ``.json`` beside it says so)."""
    meta_path = path.with_suffix(".json")
    want = {"gib": gib, "seed": seed, "source": "data/adult/adult.csv"}
    if path.is_file() and meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        if {k: meta.get(k) for k in want} == want and path.stat().st_size == meta["bytes"]:
            return dict(meta)
    lines = ADULT.read_bytes().splitlines(keepends=True)
    header, rows = lines[0], np.array(lines[1:], dtype=object)
    rng = np.random.default_rng(seed)
    target = int(gib * GIB)
    size, count = len(header), 0
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(".part")
    with part.open("wb") as fh:
        fh.write(header)
        while size < target:
            block = b"".join(rows[rng.integers(0, len(rows), size=200_000)])
            fh.write(block)
            size += len(block)
            count += 200_000
    part.replace(path)
    meta = {**want, "bytes": size, "rows": count, "columns": header.count(b";") + 1}
    meta_path.write_text(json.dumps(meta))
    return meta


def start_app(tmp: Path) -> tuple[subprocess.Popen[str], str]:
    """A fresh ``anonlab ui --port 0`` with its private folder under ``tmp``; its URL."""
    tmp.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "anonlab", "ui", "--port", "0", "--no-open"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("anonlab web app: "):
            return proc, line.split(": ", 1)[1].strip()
    proc.wait()
    raise SystemExit(f"anonlab ui did not start (exit {proc.returncode})")


def stop_app(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=120)
    if proc.stdout is not None:
        proc.stdout.close()


def status_kib(pid: int, field: str) -> int:
    """A ``kB`` field of ``/proc/PID/status`` (``VmRSS``, ``VmHWM``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (``/proc/PID/stat`` fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def browser_upload(csv: Path, url: str, profile: Path) -> tuple[float, str]:
    """Upload ``csv`` through the Load page in headless Chromium; seconds from the click to
    the preview page's load event, and the preview's text."""
    import shutil

    sys.path.insert(0, str(ROOT / "tests"))
    launch = importlib.import_module("chromium_cdp").launch  # the browser tests' client

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("--browser needs chromium (tests/setup_chromium.sh installs it)")
    profile.mkdir(parents=True, exist_ok=True)
    with launch(chromium, profile) as browser:
        browser.navigate(url)
        browser.set_files("#upload-file", [csv])
        since = browser.mark()
        started = time.perf_counter()
        browser.evaluate("document.querySelector('#upload-form button[type=submit]').click()")
        browser.wait_for("Page.loadEventFired", timeout=3600, since=since)
        seconds = time.perf_counter() - started
        text = str(browser.evaluate("document.querySelector('main').innerText"))
        origin = url.split("/?", 1)[0] + "/"
        foreign = [u for u in browser.requests if not u.startswith(origin)]
        if foreign:
            raise SystemExit(f"the page asked other addresses: {foreign}")
    return seconds, text


def http_upload(csv: Path, url: str, pid: int) -> dict[str, Any]:
    """Upload ``csv`` by one raw ``PUT`` and fetch the preview page; the times and the
    server's CPU (from the first byte sent) of that upload."""
    origin, token = url.split("/?token=")
    host, port = origin.removeprefix("http://").split(":")
    cpu0 = cpu_seconds(pid)
    conn = http.client.HTTPConnection(host, int(port), timeout=3600, blocksize=PIECE)
    started = time.perf_counter()
    conn.putrequest("PUT", f"/upload?name={csv.name}")
    conn.putheader("X-Anonlab-Token", token)
    conn.putheader("Content-Type", "application/octet-stream")
    conn.putheader("Content-Length", str(csv.stat().st_size))
    conn.endheaders()
    with csv.open("rb") as fh:
        while piece := fh.read(PIECE):
            conn.send(piece)
    sent = time.perf_counter() - started
    cpu_sent = cpu_seconds(pid) - cpu0
    reply = conn.getresponse()
    body = json.loads(reply.read())
    if reply.status != 200:
        raise SystemExit(f"upload refused ({reply.status}): {body}")
    uploaded = time.perf_counter() - started
    conn.request("GET", body["location"], headers={"X-Anonlab-Token": token})
    page = conn.getresponse()
    html = page.read().decode()
    previewed = time.perf_counter() - started
    conn.close()
    if page.status != 200 or "Preview of" not in html:
        raise SystemExit(f"no preview ({page.status})")
    return {
        "bytes": body["bytes"],
        "sent_s": round(sent, 2),
        "uploaded_and_read_s": round(uploaded, 2),
        "preview_s": round(previewed, 2),
        "server_cpu_at_sent_s": round(cpu_sent, 2),
        "server_cpu_s": round(cpu_seconds(pid) - cpu0, 2),
    }


def one_upload(csv: Path, tmp: Path, via_browser: bool = False) -> dict[str, Any]:
    """Upload ``csv`` to a fresh app and get the preview; the measures of that run."""
    import shutil

    proc, url = start_app(tmp)
    try:
        before_rss = status_kib(proc.pid, "VmRSS")
        if via_browser:
            profile = tmp / "chromium-profile"
            shutil.rmtree(profile, ignore_errors=True)
            cpu0 = cpu_seconds(proc.pid)
            seconds, text = browser_upload(csv, url, profile)
            if f"Preview of {csv.name}" not in text:
                raise SystemExit(f"no preview: {text[:300]}")
            run = {
                "bytes": csv.stat().st_size,
                "preview_s": round(seconds, 2),
                "server_cpu_s": round(cpu_seconds(proc.pid) - cpu0, 2),
            }
        else:
            run = http_upload(csv, url, proc.pid)
        peak = status_kib(proc.pid, "VmHWM")
    finally:
        stop_app(proc)
    left = list(tmp.glob("anonlab-ui-*"))
    if left:
        raise SystemExit(f"the app left its private folder behind: {left}")
    return {
        **run,
        "rss_before_mib": round(before_rss / 1024, 1),
        "peak_rss_mib": round(peak / 1024, 1),
        "load_1min": round(os.getloadavg()[0], 1),
    }


#: the printed table's rows: measure -> label
LABELS = {
    "sent_s": "body sent (s)",
    "uploaded_and_read_s": "upload answered: written, read, summarized (s)",
    "preview_s": "preview page loaded (s)",
    "server_cpu_at_sent_s": "server CPU while the body came (s)",
    "server_cpu_s": "server CPU to the preview (s)",
    "rss_before_mib": "server RSS before the upload (MiB)",
    "peak_rss_mib": "server peak RSS (MiB)",
    "load_1min": "load average (1 min, 2 cores)",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--browser", action="store_true", help="upload from headless Chromium")
    parser.add_argument("--csv", type=Path, default=Path("/tmp/anonlab_ui_upload/adult_1g.csv"))
    parser.add_argument("--tmp", type=Path, default=Path("/tmp/anonlab_ui_upload/app"))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or ROOT / "benchmarks" / "results" / (
        "ui_upload_browser.json" if args.browser else "ui_upload.json"
    )
    made = time.perf_counter()
    table = make_csv(args.csv, args.gib, args.seed)
    print(
        f"table: {args.csv} ({table['bytes'] / GIB:.2f} GiB, {table['rows']:,} rows, "
        f"{table['columns']} columns; ready in {time.perf_counter() - made:.1f} s); "
        f"upload {'from Chromium' if args.browser else 'by one HTTP PUT'}"
    )
    runs = []
    for i in range(args.repeats):
        run = one_upload(args.csv, args.tmp, args.browser)
        runs.append(run)
        print(f"  run {i + 1}: {run}")
    median = {k: round(statistics.median(r[k] for r in runs), 2) for k in runs[0] if k != "bytes"}
    print()
    print("| measure | median |")
    print("|---|---:|")
    print(f"| file | {table['bytes'] / GIB:.2f} GiB, {table['rows']:,} rows |")
    for key, label in LABELS.items():
        if key in median:
            print(f"| {label} | {median[key]} |")
    result = {
        "benchmark": "ui_upload",
        "command": "python benchmarks/ui_upload.py " + " ".join(sys.argv[1:]),
        "via": "chromium" if args.browser else "http-put",
        "date": time.strftime("%Y-%m-%d"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "table": table,
        "repeats": runs,
        "median": median,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {out}")


if __name__ == "__main__":
    main()
