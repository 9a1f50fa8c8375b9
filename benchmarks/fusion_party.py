"""Networked fusion: the MPyC secure argmax per round, and real party processes on Adult.

1. Secure argmax: 3 parties (2 providers + 1 helper, and 3 providers) as
   separate processes on loopback, MPyC over TLS, one 64-bit secure integer
   per provider per round; the time per round is the median over
   ``--repeats`` runs of ``--rounds`` rounds each (after the connection).
2. The real run: ``anonlab party`` started as 3 OS processes (provider-a,
   provider-b, helper "recipient") on Adult's training file with the paper's
   7 + 7 split (examples/fusion/fusion.toml, k = 100); end to end is from
   starting the processes to the last one exiting (Python start-up, reading,
   TLS and MPyC connection, all rounds, writing the tables), median of
   ``--repeats`` runs. The fused tables are compared with in-process ``fuse``.

    python benchmarks/fusion_party.py            # about 2 minutes
    python benchmarks/fusion_party.py --quick    # 1 repeat
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import pandas as pd

from anonlab.fusion.certs import make_certificates
from anonlab.fusion.config import load_config
from anonlab.fusion.engine import fuse

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "fusion" / "fusion.toml"
RESULTS = REPO / "benchmarks" / "results"
OUT = RESULTS / "fusion_party.json"

ARGMAX_PARTY = r"""
import json, sys, time
from anonlab.fusion.secure_max import SecureMax
from anonlab.fusion.transport import Endpoint, TlsFiles
me, spec = sys.argv[1], json.loads(sys.argv[2])
parties = [Endpoint(n, "127.0.0.1", p) for n, p in spec["parties"]]
c = spec["certs"]
tls = TlsFiles.for_party(c + "/ca.crt", c + "/{party}.crt", c + "/{party}.key", me)
smax = SecureMax(parties, me, spec["providers"], tls=tls, timeout=60)
smax.start()
began = time.perf_counter()
for row in spec["rounds"]:
    smax.argmax(row[spec["providers"].index(me)] if me in spec["providers"] else None)
seconds = time.perf_counter() - began
smax.close()
print(json.dumps({"seconds": seconds, "rounds": len(spec["rounds"]), "bytes": smax.bytes_sent()}))
"""


def free_ports(count: int) -> list[int]:
    """Ports the kernel just handed out (closed again for the parties to bind)."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def argmax_run(
    folder: Path, names: list[str], providers: list[str], rounds: int, seed: int
) -> dict[str, Any]:
    """One secure-argmax run; per party: seconds for all rounds and MPyC bytes sent."""
    rng = random.Random(seed)
    rows = [[rng.randrange(-1, 2**40 + 1) for _ in providers] for _ in range(rounds)]
    spec = {
        "parties": list(zip(names, free_ports(len(names)), strict=True)),
        "providers": providers,
        "rounds": rows,
        "certs": str(folder / "certs"),
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", ARGMAX_PARTY, n, json.dumps(spec)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in names
    ]
    out = {}
    for name, proc in zip(names, procs, strict=True):
        stdout, stderr = proc.communicate(timeout=600)
        if proc.returncode != 0:
            raise SystemExit(f"party {name} failed: {stderr}")
        out[name] = json.loads(stdout.strip().splitlines()[-1])
    return out


def bench_argmax(folder: Path, rounds: int, repeats: int) -> list[dict[str, Any]]:
    make_certificates(folder / "certs", [(n, "127.0.0.1") for n in ("a", "b", "c", "h")])
    rows = []
    for label, names, providers in (
        ("2 providers + helper", ["a", "b", "h"], ["a", "b"]),
        ("3 providers", ["a", "b", "c"], ["a", "b", "c"]),
    ):
        per_round = []
        bytes_per_round = 0.0
        for r in range(repeats):
            res = argmax_run(folder, names, providers, rounds, seed=r)
            per_round.append(max(v["seconds"] for v in res.values()) / rounds * 1000)
            bytes_per_round = sum(v["bytes"] for v in res.values()) / rounds
        rows.append(
            {
                "setting": label,
                "rounds": rounds,
                "repeats": repeats,
                "ms_per_round_median": round(statistics.median(per_round), 2),
                "ms_per_round_runs": [round(x, 2) for x in per_round],
                "mpc_bytes_per_round_all_parties": round(bytes_per_round),
            }
        )
    return rows


def party_config(folder: Path) -> Path:
    """The example Adult config with free ports and fresh certificates in ``folder``."""
    text = EXAMPLE.read_text(encoding="utf-8")
    raw = tomllib.loads(text)
    ports = free_ports(2 * len(raw["parties"]))
    lines = text.splitlines()
    out, i = [], 0
    for line in lines:
        key = line.split("=")[0].strip()
        if key in ("port", "mpc_port"):
            line = f"{key} = {ports[i]}"
            i += 1
        out.append(line)
    body = "\n".join(out) + "\n"
    for rel in ("../../data/", "provider_a.csv", "provider_b.csv"):
        body = body.replace(
            f'"{rel}', f'"{(EXAMPLE.parent / rel).resolve()}' + ("/" if rel.endswith("/") else "")
        )
    config = folder / "fusion.toml"
    config.write_text(body, encoding="utf-8")
    make_certificates(folder / "certs", [(p["id"], p["host"]) for p in raw["parties"]])
    return config


def party_run(folder: Path) -> dict[str, Any]:
    """Start every party of ``folder/fusion.toml`` as its own process; time until all exit."""
    config = party_config(folder)
    parties = [p["id"] for p in tomllib.loads(config.read_text())["parties"]]
    began = time.perf_counter()
    procs = {}
    for p in parties:
        args = [
            sys.executable,
            "-m",
            "anonlab",
            "party",
            str(config),
            "--party",
            p,
            "--report",
            str(folder / f"{p}.json"),
            "--quiet",
        ]
        if p != "recipient":
            args += ["--output", str(folder / f"fused_{p}.csv")]
        procs[p] = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for p, proc in procs.items():
        _, stderr = proc.communicate(timeout=900)
        if proc.returncode != 0:
            raise SystemExit(f"party {p} failed: {stderr}")
    seconds = time.perf_counter() - began
    reports = {p: json.loads((folder / f"{p}.json").read_text()) for p in parties}
    return {"seconds": seconds, "reports": reports, "config": config}


def bench_parties(folder: Path, repeats: int) -> dict[str, Any]:
    runs = []
    last: dict[str, Any] = {}
    for r in range(repeats):
        run_dir = folder / f"run{r}"
        run_dir.mkdir()
        last = party_run(run_dir)
        runs.append(last["seconds"])
    config = load_config(last["config"])
    began = time.perf_counter()
    expected = fuse(config)
    fuse_seconds = time.perf_counter() - began
    want = expected.table.astype(str).reset_index(drop=True)
    identical = True
    for p in ("provider-a", "provider-b"):
        got = pd.read_csv(
            last["config"].parent / f"fused_{p}.csv", dtype=str, keep_default_na=False
        )
        identical &= bool(got.equals(want))
    rep = last["reports"]["provider-a"]
    return {
        "setting": "Adult train (30162 records), 2 providers + helper, k = 100, paper's QIDs",
        "repeats": repeats,
        "end_to_end_seconds_median": round(statistics.median(runs), 2),
        "end_to_end_seconds_runs": [round(x, 2) for x in runs],
        "rounds": rep["rounds"],
        "loop_seconds_provider_a": rep["time_seconds"],
        "connect_seconds_provider_a": rep["connect_seconds"],
        "secure_max_ms_per_call": {
            p: r["secure_max_ms_per_call"] for p, r in last["reports"].items()
        },
        "bytes_sent": rep["bytes_sent"],
        "bytes_sent_detail": rep["bytes_sent_detail"],
        "in_process_fuse_seconds": round(fuse_seconds, 2),
        "tables_identical_to_fuse": identical,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repeat of each")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    with tempfile.TemporaryDirectory(prefix="anonlab-party-bench-") as tmp:
        folder = Path(tmp)
        argmax_rows = bench_argmax(folder, args.rounds, repeats)
        party = bench_parties(folder, max(1, min(repeats, 3)))
    result = {
        "benchmark": "fusion_party",
        "machine": {"python": platform.python_version(), "cpus": __import__("os").cpu_count()},
        "secure_argmax": argmax_rows,
        "target_secure_argmax_ms": 45,
        "party_run": party,
        "target_party_run_seconds": 60,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{'secure argmax (MPyC, TLS, loopback)':40} {'ms/round (median)':>18} {'runs':>30}")
    for row in argmax_rows:
        print(
            f"{row['setting']:40} {row['ms_per_round_median']:18.2f} "
            f"{row['ms_per_round_runs']!s:>30}"
        )
    print()
    print(
        f"party run, Adult k=100, 3 processes: {party['end_to_end_seconds_median']:.2f} s "
        f"end to end (runs {party['end_to_end_seconds_runs']}), {party['rounds']} rounds, "
        f"identical to fuse: {party['tables_identical_to_fuse']}; in-process fuse "
        f"{party['in_process_fuse_seconds']:.2f} s"
    )
    print(f"bytes sent: {party['bytes_sent']}")
    print(f"wrote {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
