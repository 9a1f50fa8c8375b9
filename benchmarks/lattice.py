"""Lattice search on Adult (the paper's figures 5 and 6) and the whole command at scale.

Part 1, in-process and warm: Adult with 8 quasi-identifiers, k in {2, 5, 10,
25, 50, 100}, suppression 0 and 1 %: nodes checked, search time (wall and
CPU) and CPU time of the whole ``anonymize()`` call on the encoded table
(search, final roll-up, all five metrics and the release), median of 5 runs
after a warm-up, for every strategy; and the CPU time of encoding the table
(``Dataset.from_frame``), which the comparison with ARX adds to be safe. The
metric is precision without suppression and precision-with-suppression with
1 %, as in the ARX figures quoted in docs/benchmarks.md.

Part 2, whole ``anonlab generalize`` commands (start to written release):
wall and CPU time (median of 5) and peak resident memory (largest of 5, via
``/usr/bin/time``) on Adult (k = 5, 1 % and 0); Adult x33 (995,346 rows,
k = 165, 1 %: the same search as k = 5 on Adult), also with ``--no-verify``; and a synthetic
1,000,000-row table whose columns are drawn independently (row indices drawn
uniformly with seed 1, one draw per column) from Adult's columns, so that its
distinct quasi-identifier combinations grow with the rows (23,316 at 30,162
rows, 122,042 at 250,000, 318,902 at 1,000,000).

    python benchmarks/lattice.py            # full run, 5-15 minutes
    python benchmarks/lattice.py --quick    # 1 repeat, fewer k
    python benchmarks/lattice.py --part scale   # only the whole-command table
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from anonlab.dataset import Dataset
from anonlab.generalize import anonymize
from anonlab.hierarchy import Hierarchy

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO / "data" / "adult"
RESULTS = REPO / "benchmarks" / "results"
OUT = RESULTS / "lattice.json"
QIS = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
]
STRATEGIES = ["flash", "ola", "degree", "exhaustive"]
# ARX 3.9 on this machine (the generalization issue): (k, suppression) -> (nodes, CPU ms)
ARX = {
    (2, 0.0): (184, 66),
    (5, 0.0): (142, 43),
    (100, 0.0): (49, 30),
    (2, 0.01): (587, 570),
    (5, 0.01): (815, 616),
    (100, 0.01): (433, 202),
}


def search_table(ks: list[int], repeats: int) -> list[dict[str, object]]:
    """Nodes checked and warm search time for every strategy, k and suppression."""
    frame = pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str)
    hierarchies = {q: Hierarchy.from_csv(ADULT / f"hierarchy_{q}.csv") for q in QIS}
    encode = []
    for _ in range(repeats + 1):
        started = time.process_time()
        ds = Dataset.from_frame(frame, hierarchies, sensitive=["salary-class"])
        encode.append(time.process_time() - started)
    encode_ms = 1000 * statistics.median(encode[1:] or encode)
    rows = []
    for suppression in (0.0, 0.01):
        metric = "precision" if suppression == 0 else "precision_with_suppression"
        for k in ks:
            for strategy in STRATEGIES:
                if strategy == "exhaustive" and k not in (5, 100):
                    continue
                anonymize(ds, k, suppression, strategy, metric)  # warm-up
                times, cpu, search_cpu, result = [], [], [], None
                for _ in range(repeats):
                    started = time.process_time()
                    result = anonymize(ds, k, suppression, strategy, metric)
                    cpu.append(time.process_time() - started)
                    times.append(result.search.runtime_seconds)
                    search_cpu.append(result.search.cpu_seconds)
                assert result is not None
                arx = ARX.get((k, suppression))
                rows.append(
                    {
                        "k": k,
                        "suppression": suppression,
                        "metric": metric,
                        "strategy": strategy,
                        "nodes_checked": result.search.nodes_checked,
                        "search_ms": 1000 * statistics.median(times),
                        "search_cpu_ms": 1000 * statistics.median(search_cpu),
                        "anonymize_cpu_ms": 1000 * statistics.median(cpu),
                        "encode_cpu_ms": encode_ms,
                        "loss": result.search.loss,
                        "arx_nodes": arx[0] if arx else None,
                        "arx_cpu_ms": arx[1] if arx else None,
                    }
                )
                print(
                    f"k={k:>3} s={suppression:<4} {strategy:<10} "
                    f"nodes={result.search.nodes_checked:>5} "
                    f"time={rows[-1]['search_ms']:8.1f} ms "
                    f"cpu={rows[-1]['anonymize_cpu_ms']:8.1f} ms  loss={result.search.loss:.4f}"
                    + (f"   ARX: {arx[0]} nodes, {arx[1]} ms" if arx else ""),
                    flush=True,
                )
    return rows


def run_command(args: list[str]) -> tuple[float, float, float]:
    """Wall time (s), peak RSS (MiB) and CPU time (user + system, s) of one child process.

    The child runs under ``/usr/bin/time`` when it exists: Linux carries a
    process's peak RSS across fork and exec, so a child forked straight from
    this (large) benchmark process would report this process's memory.
    """
    timer = "/usr/bin/time" if Path("/usr/bin/time").is_file() else None
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as stats:
        command = [timer, "-f", "%M %U %S", "-o", stats.name, *args] if timer else args
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"command failed: {' '.join(args)}")
        if timer:
            rss_kib, user, system = Path(stats.name).read_text().split()[-3:]
            return wall, int(rss_kib) / 1024, float(user) + float(system)
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def read_qis(path: Path) -> pd.DataFrame:
    """The quasi-identifier columns of a benchmark table."""
    return pd.read_csv(path, sep=";", dtype=str, usecols=QIS)


#: rows of the synthetic table (:func:`synthetic_table`)
SYNTHETIC_ROWS = 1_000_000


def synthetic_table(frame: pd.DataFrame, rows: int = SYNTHETIC_ROWS, seed: int = 1) -> pd.DataFrame:
    """The synthetic table: each column drawn independently from ``frame``'s rows (Adult),
    uniformly with replacement, column after column from one generator seeded ``seed``."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {c: frame[c].to_numpy()[rng.integers(0, len(frame), rows)] for c in frame.columns}
    )


def scale_table(repeats: int) -> list[dict[str, object]]:
    """Whole-command time and peak memory on Adult, Adult x33 and a synthetic 1M table."""
    frame = pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        pd.concat([frame] * 33, ignore_index=True).to_csv(
            folder / "adult33.csv", sep=";", index=False
        )
        n = SYNTHETIC_ROWS
        synth = synthetic_table(frame)
        synth.to_csv(folder / "synthetic1m.csv", sep=";", index=False)
        growth = {
            str(m): int(synth[QIS].iloc[:m].drop_duplicates().shape[0])
            for m in (30_162, 100_000, 250_000, 500_000, n)
        }
        print(f"synthetic distinct QI tuples by rows: {growth}", flush=True)
        # the command's defaults verify the release and measure its risk; --no-verify skips
        # the verification only
        cases = [
            ("adult", ADULT / "adult.csv", 5, 0.01, True),
            ("adult", ADULT / "adult.csv", 5, 0.0, True),
            ("adult_x33 --no-verify", folder / "adult33.csv", 165, 0.01, False),
            ("adult_x33", folder / "adult33.csv", 165, 0.01, True),
            ("synthetic_1m --no-verify", folder / "synthetic1m.csv", 5, 0.01, False),
            ("synthetic_1m", folder / "synthetic1m.csv", 5, 0.01, True),
        ]
        for name, path, k, suppression, verify in cases:
            stem = name.split()[0]
            qi_flags = [x for q in QIS for x in ("--qi", f"{q}={ADULT / f'hierarchy_{q}.csv'}")]
            args = [
                sys.executable,
                "-m",
                "anonlab",
                "generalize",
                str(path),
                "--delimiter",
                ";",
                *qi_flags,
                "--sensitive",
                "salary-class",
                "--k",
                str(k),
                "--suppression",
                str(suppression),
                "--metric",
                "precision_with_suppression" if suppression else "precision",
                "--output",
                str(folder / f"{stem}_out.csv"),
                "--report",
                str(folder / f"{stem}.json"),
                "--quiet",
                *([] if verify else ["--no-verify"]),
            ]
            runs = [run_command(args) for _ in range(repeats)]
            report = json.loads((folder / f"{stem}.json").read_text())
            rows.append(
                {
                    "case": name,
                    "rows": report["records"],
                    "k": k,
                    "suppression": suppression,
                    "wall_s": statistics.median(r[0] for r in runs),
                    "peak_mib": max(r[1] for r in runs),
                    "cpu_s": statistics.median(r[2] for r in runs),
                    "wall_s_runs": [round(r[0], 3) for r in runs],
                    "nodes_checked": report["nodes_checked"],
                    "search_s": report["search_seconds"],
                    "distinct_qi_tuples": int(read_qis(path).drop_duplicates().shape[0]),
                }
            )
            r = rows[-1]
            print(
                f"{name:<13} k={k} s={suppression} rows={r['rows']:>9} wall={r['wall_s']:6.2f} s "
                f"cpu={r['cpu_s']:6.2f} s "
                f"peak={r['peak_mib']:7.1f} MiB nodes={r['nodes_checked']}",
                flush=True,
            )
    rows.append({"case": "synthetic_growth", "distinct_qi_tuples_by_rows": growth})
    return rows


def plot(rows: list[dict[str, object]]) -> None:
    """Figures 5 and 6 of the paper: nodes checked and time against k."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for key, label, name in (
        ("nodes_checked", "nodes checked", "lattice_nodes.png"),
        ("search_cpu_ms", "search CPU time (ms)", "lattice_time.png"),
    ):
        fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=False)
        for ax, suppression in zip(axes, (0.0, 0.01), strict=True):
            for strategy in STRATEGIES[:3]:
                pts = [
                    (r["k"], r[key])
                    for r in rows
                    if r["strategy"] == strategy and r["suppression"] == suppression
                ]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=strategy)
            arx = sorted(
                (k, v[0] if key == "nodes_checked" else v[1])
                for (k, s), v in ARX.items()
                if s == suppression
            )
            ax.plot(
                [p[0] for p in arx],
                [p[1] for p in arx],
                "kx",
                markersize=9,
                label="ARX 3.9" + ("" if key == "nodes_checked" else " (CPU)"),
            )
            ax.set_xscale("log")
            ax.set_xlabel("k")
            ax.set_ylabel(label)
            ax.set_title(f"Adult, 8 QIs, suppression {suppression:.0%}")
            ax.legend()
        fig.tight_layout()
        fig.savefig(RESULTS / name, dpi=100)
        plt.close(fig)


def markdown(results: dict[str, Any]) -> str:
    """The docs/benchmarks.md tables of a results file."""
    lines = [
        "| k | suppression | ARX nodes | flash nodes | ola nodes | degree nodes "
        "| ARX CPU ms | flash search CPU ms | flash encode + anonymize() CPU ms "
        "| ola / degree anonymize() CPU ms | loss (all equal) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    search = results.get("search", [])
    keys = sorted({(r["suppression"], r["k"]) for r in search})
    for suppression, k in keys:
        by = {r["strategy"]: r for r in search if r["k"] == k and r["suppression"] == suppression}
        flash = by["flash"]
        losses = {round(r["loss"], 12) for r in by.values()}
        arx_nodes = flash["arx_nodes"] if flash["arx_nodes"] is not None else "-"
        arx_cpu = flash["arx_cpu_ms"] if flash["arx_cpu_ms"] is not None else "-"
        lines.append(
            f"| {k} | {suppression:.0%} | {arx_nodes} | {flash['nodes_checked']} "
            f"| {by['ola']['nodes_checked']} | {by['degree']['nodes_checked']} | {arx_cpu} "
            f"| {flash.get('search_cpu_ms', float('nan')):.0f} "
            f"| {flash.get('encode_cpu_ms', 0.0) + flash['anonymize_cpu_ms']:.0f} "
            f"| {by['ola']['anonymize_cpu_ms']:.0f} / {by['degree']['anonymize_cpu_ms']:.0f} "
            f"| {flash['loss']:.4f}{'' if len(losses) == 1 else ' (DIFFER)'} |"
        )
    lines += [
        "",
        "| table | rows | distinct QI tuples | k | suppression | nodes checked "
        "| wall s | CPU s | peak MiB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results.get("scale", []):
        if "rows" not in r:
            continue
        lines.append(
            f"| {r['case']} | {r['rows']:,} | {r.get('distinct_qi_tuples', 0):,} | {r['k']} "
            f"| {r['suppression']:.0%} | {r['nodes_checked']} | {r['wall_s']:.2f} "
            f"| {r.get('cpu_s', float('nan')):.2f} | {r['peak_mib']:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 repeat, k in {5, 100}")
    parser.add_argument(
        "--part",
        choices=["all", "search", "scale"],
        default="all",
        help="run only the search table or only the whole-command table",
    )
    parser.add_argument(
        "--markdown",
        action="store_true",
        help="print the docs tables of the saved results, redraw the plots, stop",
    )
    args = parser.parse_args()
    if args.markdown:
        saved = json.loads(OUT.read_text())
        print(markdown(saved))
        if saved.get("search"):
            plot(saved["search"])
        return
    repeats = 1 if args.quick else 5
    ks = [5, 100] if args.quick else [2, 5, 10, 25, 50, 100]
    RESULTS.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()[0]
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    search = (
        search_table(ks, repeats) if args.part in ("all", "search") else previous.get("search", [])
    )
    scale = (
        scale_table(1 if args.quick else 5)
        if args.part in ("all", "scale")
        else previous.get("scale", [])
    )
    out = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
            "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        },
        "repeats": repeats,
        "search": search,
        "scale": scale,
    }
    OUT.write_text(json.dumps(out, indent=2) + "\n")
    if search:
        plot(search)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
