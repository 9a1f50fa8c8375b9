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

Medians of ``--repeats`` (default 3) are printed and saved as JSON::

    python benchmarks/ui_upload.py --repeats 3
"""

from __future__ import annotations

import argparse
import http.client
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


def one_upload(csv: Path, tmp: Path) -> dict[str, Any]:
    """Upload ``csv`` to a fresh app and fetch the preview; the measures of that run."""
    proc, url = start_app(tmp)
    try:
        origin, token = url.split("/?token=")
        host, port = origin.removeprefix("http://").split(":")
        before_rss = status_kib(proc.pid, "VmRSS")
        cpu0 = cpu_seconds(proc.pid)
        conn = http.client.HTTPConnection(host, int(port), timeout=3600, blocksize=PIECE)
        size = csv.stat().st_size
        started = time.perf_counter()
        conn.putrequest("PUT", f"/upload?name={csv.name}")
        conn.putheader("X-Anonlab-Token", token)
        conn.putheader("Content-Type", "application/octet-stream")
        conn.putheader("Content-Length", str(size))
        conn.endheaders()
        with csv.open("rb") as fh:
            while piece := fh.read(PIECE):
                conn.send(piece)
        sent = time.perf_counter() - started
        cpu_sent = cpu_seconds(proc.pid) - cpu0
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
        cpu = cpu_seconds(proc.pid) - cpu0
        peak = status_kib(proc.pid, "VmHWM")
    finally:
        stop_app(proc)
    left = list(tmp.glob("anonlab-ui-*"))
    if left:
        raise SystemExit(f"the app left its private folder behind: {left}")
    return {
        "bytes": body["bytes"],
        "sent_s": round(sent, 2),
        "uploaded_and_read_s": round(uploaded, 2),
        "preview_s": round(previewed, 2),
        "server_cpu_at_sent_s": round(cpu_sent, 2),
        "server_cpu_s": round(cpu, 2),
        "rss_before_mib": round(before_rss / 1024, 1),
        "peak_rss_mib": round(peak / 1024, 1),
        "load_1min": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--csv", type=Path, default=Path("/tmp/anonlab_ui_upload/adult_1g.csv"))
    parser.add_argument("--tmp", type=Path, default=Path("/tmp/anonlab_ui_upload/app"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/ui_upload.json")
    args = parser.parse_args()
    made = time.perf_counter()
    table = make_csv(args.csv, args.gib, args.seed)
    print(
        f"table: {args.csv} ({table['bytes'] / GIB:.2f} GiB, {table['rows']:,} rows, "
        f"{table['columns']} columns; ready in {time.perf_counter() - made:.1f} s)"
    )
    runs = []
    for i in range(args.repeats):
        run = one_upload(args.csv, args.tmp)
        runs.append(run)
        print(f"  run {i + 1}: {run}")
    keys = [k for k in runs[0] if k != "bytes"]
    median = {k: round(statistics.median(r[k] for r in runs), 2) for k in keys}
    mib_s = table["bytes"] / (1 << 20) / median["sent_s"]
    print()
    print("| measure | median |")
    print("|---|---:|")
    print(f"| file | {table['bytes'] / GIB:.2f} GiB, {table['rows']:,} rows |")
    print(f"| body sent (s) | {median['sent_s']} ({mib_s:.0f} MiB/s) |")
    print(f"| upload answered: written and read (s) | {median['uploaded_and_read_s']} |")
    print(f"| preview page received (s) | {median['preview_s']} |")
    print(f"| server CPU while the body came (s) | {median['server_cpu_at_sent_s']} |")
    print(f"| server CPU to the preview (s) | {median['server_cpu_s']} |")
    print(f"| server RSS before the upload (MiB) | {median['rss_before_mib']} |")
    print(f"| server peak RSS (MiB) | {median['peak_rss_mib']} |")
    print(f"| load average (1 min, 2 cores) | {median['load_1min']} |")
    result = {
        "benchmark": "ui_upload",
        "command": "python benchmarks/ui_upload.py " + " ".join(sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "table": table,
        "repeats": runs,
        "median": median,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {args.out}")


if __name__ == "__main__":
    main()
