"""The two large passes at 10M (and 100M) rows, on the NumPy and Dask engines.

The table. A synthetic table with Adult's nine columns (8 quasi-identifiers
and ``salary-class``) in which every column is drawn independently: for
each column and each row, a row of Adult (``data/adult/adult.csv``, 30,162
rows) is drawn uniformly at random and its value of that column taken, as
``benchmarks/lattice.py`` makes its 1M-row table. Each column keeps Adult's
marginal distribution, but the columns are independent, so the number of
distinct quasi-identifier combinations keeps growing with the rows (rare
values meet ever more partners; the product of the domains is ~6e8): the
script prints the counts it finds. Part ``i`` (``part_rows`` rows, default
1M) is drawn with ``numpy.random.default_rng([seed, i])``, so any part can be
remade alone; parts are written as Parquet (text columns, dictionary pages,
row groups of 1M rows) into one folder.

The measurements, each in a fresh child process:

* ``command`` (``--command``): the whole ``anonlab generalize`` (k=5, 1 %
  suppression, flash, ``salary-class`` sensitive, report and risk section
  included) as a user runs it, three ways: ``numpy`` in memory (the table
  read whole, the release one Parquet file), ``numpy-engine`` (a folder
  output: the NumPy engine's two passes, rows never held) and ``dask``
  (``--workers`` x ``--memory-limit``, folder output). Wall time includes
  starting the cluster; CPU time and peak memory are those of the command
  and every process it started (``RUSAGE_CHILDREN``: user + system, and the
  largest resident set of any one of them, so a Dask worker's peak counts);
  the releases are compared by a content hash of their rows after a sort.
  Saved to ``benchmarks/results/scale_command.json``;

* ``limit``: the physical limit, plain pyarrow in one process: read the nine
  columns of every part (dictionary pages, as the engines read them), once
  alone (``read_*``: the floor under any pass) and once counting each
  distinct combination with Arrow's hash group-by, the parts' counts summed
  by a second group-by;
* ``frequency``: the base frequency set (8 quasi-identifiers, per-tuple
  histograms of ``salary-class``) on each engine;
* ``release``: the release-writing pass on each engine: a fixed
  generalization (``RELEASE_LEVELS``) with the classes of fewer than 5 rows
  suppressed (found from the frequency set of the ``frequency`` step, not
  timed), written as partitioned Parquet.

Dask runs a ``LocalCluster`` of ``--workers`` processes (default 2) with
``--memory-limit`` each (default 4 GB), one thread each; its wall time
excludes starting the cluster (reported apart). CPU time is the child's own
(user + system) plus, on Dask, the workers' CPU during the pass. Peak memory
is the child's peak resident set (``ru_maxrss``) and, on Dask, each worker's
(``VmHWM``). Throughput is rows / wall second. The two engines' frequency
sets are compared array by array, and their releases part by part (content
hash of each part's rows). The machine's 1-minute load average before and
after each step is recorded: on a shared machine wall times follow it, CPU
times much less.

    python benchmarks/scale.py                 # 10M rows
    python benchmarks/scale.py --rows 100M     # 100M rows (~1 GB of Parquet)
    python benchmarks/scale.py --rows 10M --rows 100M
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO / "data" / "adult"
RESULTS = REPO / "benchmarks" / "results"
OUT = RESULTS / "scale.json"
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
SENSITIVE = "salary-class"
#: the ways --command runs the generalize command
WAYS = ("numpy", "numpy-engine", "dask")
COLUMNS = [*QIS, SENSITIVE]
#: the node the release pass applies (age in 10-year bands, education in 3 groups, ...)
RELEASE_LEVELS = {
    "sex": 0,
    "age": 2,
    "race": 1,
    "marital-status": 1,
    "education": 2,
    "native-country": 1,
    "workclass": 1,
    "occupation": 1,
}
K = 5


COMMAND_OUT = RESULTS / "scale_command.json"
MONDRIAN_OUT = RESULTS / "scale_command_mondrian.json"


def parse_rows(text: str) -> int:
    """``10M`` -> 10_000_000, ``250k`` -> 250_000."""
    scale = {"k": 10**3, "m": 10**6, "g": 10**9}.get(text[-1].lower(), 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------


def write_parts(
    folder: Path, wanted: dict[str, Any], parts: int, make: Callable[[int], Any]
) -> dict[str, Any]:
    """Write a synthetic table as Parquet parts ``make(0)``, ``make(1)``, ... (pyarrow tables;
    row groups of 1M rows) into ``folder``; reuse the folder when its manifest says it holds
    ``wanted`` complete. Returns the manifest: ``wanted``, parts, seconds, bytes."""
    import pyarrow.parquet as pq

    manifest = folder / "_manifest.json"
    if manifest.exists() and json.loads(manifest.read_text()).get("table") == wanted:
        return dict(json.loads(manifest.read_text()))
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    started = time.perf_counter()
    for i in range(parts):
        pq.write_table(make(i), folder / f"part-{i:05d}.parquet", row_group_size=1 << 20)
    info = {
        "table": wanted,
        "parts": parts,
        "seconds": time.perf_counter() - started,
        "bytes": sum(p.stat().st_size for p in folder.glob("*.parquet")),
    }
    manifest.write_text(json.dumps(info))
    return info


def generate(folder: Path, rows: int, part_rows: int, seed: int) -> dict[str, Any]:
    """Write the synthetic table (see the module text); reuse it when already complete."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    adult = pacsv.read_csv(
        ADULT / "adult.csv",
        parse_options=pacsv.ParseOptions(delimiter=";"),
        convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in COLUMNS}),
    )
    encoded = {c: adult.column(c).combine_chunks().dictionary_encode() for c in COLUMNS}

    def part(i: int) -> Any:
        n = min(part_rows, rows - i * part_rows)
        rng = np.random.default_rng([seed, i])
        arrays = []
        for c in COLUMNS:
            pick = rng.integers(0, adult.num_rows, n)
            codes = np.asarray(encoded[c].indices)[pick].astype(np.int32)
            arrays.append(pa.DictionaryArray.from_arrays(pa.array(codes), encoded[c].dictionary))
        table = pa.Table.from_arrays(arrays, names=COLUMNS)
        return table.cast(pa.schema([(c, pa.string()) for c in COLUMNS]))

    wanted = {"rows": rows, "part_rows": part_rows, "seed": seed, "columns": COLUMNS}
    return write_parts(folder, wanted, -(-rows // part_rows), part)


def generate_lattice_table(folder: Path, parts: int) -> dict[str, Any]:
    """Write the 1M-row synthetic table of ``benchmarks/lattice.py`` (the same rows, from its
    :func:`lattice.synthetic_table`) as ``parts`` Parquet parts of text columns."""
    import pandas as pd
    import pyarrow as pa

    import lattice

    frame = lattice.synthetic_table(pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str))
    bounds = np.linspace(0, len(frame), parts + 1).astype(int)
    wanted = {"table": "benchmarks/lattice.py synthetic_table", "rows": len(frame), "parts": parts}
    return write_parts(
        folder,
        wanted,
        parts,
        lambda i: pa.Table.from_pandas(frame.iloc[bounds[i] : bounds[i + 1]], preserve_index=False),
    )


# ---------------------------------------------------------------------------
# One measurement (in a child process)
# ---------------------------------------------------------------------------


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _worker_stats() -> dict[str, float]:
    """A worker's CPU seconds so far and peak resident memory (MiB)."""
    peak = 0.0
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) / 1024
    return {"cpu": _cpu(), "peak_mib": peak}


def _open(engine_name: str, workers: int, memory_limit: str) -> Any:
    from anonlab.engine import open_engine

    if engine_name == "numpy":
        return open_engine("numpy")
    return open_engine("dask", workers=workers, memory_limit=memory_limit)


def _save_base(base: Any, path: Path) -> None:
    s = base.sensitive[SENSITIVE]
    np.savez(
        path,
        tuples=base.tuples,
        counts=base.counts,
        first_rows=base.first_rows,
        classes=s.classes,
        values=s.values,
        hist=s.counts,
        dictionaries=np.asarray(json.dumps([list(d) for d in base.dictionaries])),
        sensitive_dictionary=np.asarray(json.dumps(list(s.dictionary))),
    )


def _plan(base_path: Path) -> tuple[Any, int]:
    """The release plan: ``RELEASE_LEVELS``, classes under ``K`` rows suppressed; and the
    number of rows suppressed."""
    from anonlab.engine import BaseFrequencySet
    from anonlab.hierarchy import Hierarchy
    from anonlab.lattice.bridge import encoded_qis, plan_at

    saved = np.load(base_path)
    base = BaseFrequencySet(
        tuple(QIS),
        tuple(tuple(d) for d in json.loads(str(saved["dictionaries"]))),
        saved["tuples"],
        saved["counts"],
        saved["first_rows"],
        {},
        int(saved["counts"].sum()),
    )
    hierarchies = {q: Hierarchy.from_csv(ADULT / f"hierarchy_{q}.csv") for q in QIS}
    qis = encoded_qis(base, hierarchies)
    levels = [RELEASE_LEVELS[q] for q in QIS]
    classes, counts = base.classes_at(
        [q.level_codes[lv] for q, lv in zip(qis, levels, strict=True)],
        [q.cardinality(lv) for q, lv in zip(qis, levels, strict=True)],
    )
    small = counts < K
    return plan_at(qis, levels, classes[small]), int(counts[small].sum())


def child(args: argparse.Namespace) -> dict[str, Any]:
    """Run one measurement and return its figures."""
    data = Path(args.data)
    import pandas  # noqa: F401  -- imports are not part of any pass
    import pyarrow.compute
    import pyarrow.parquet  # noqa: F401

    if args.step == "limit":
        return _physical_limit(data)
    started = time.perf_counter()
    engine = _open(args.engine, args.workers, args.memory_limit)
    startup = time.perf_counter() - started
    client = getattr(engine, "client", None)
    before = client.run(_worker_stats) if client is not None else {}
    cpu0, wall0 = _cpu(), time.perf_counter()
    out: dict[str, Any] = {}
    if args.step == "frequency":
        base = engine.frequency_set(data, QIS, [SENSITIVE])
        out.update(rows=base.rows, distinct_tuples=int(base.tuples.shape[0]))
        _save_base(base, Path(args.save))
    else:
        plan, suppressed = _plan(Path(args.save))
        plan_seconds = time.perf_counter() - wall0
        summary = engine.write_release(data, plan, Path(args.output))
        out.update(
            rows=summary.rows,
            parts=summary.parts,
            suppressed=summary.suppressed,
            expected_suppressed=suppressed,
            plan_seconds=plan_seconds,
        )
    wall = time.perf_counter() - wall0
    cpu = _cpu() - cpu0
    workers: list[dict[str, float]] = []
    if client is not None:
        after = client.run(_worker_stats)
        for addr, stats in after.items():
            spent = stats["cpu"] - before.get(addr, {"cpu": 0.0})["cpu"]
            workers.append({"cpu_s": spent, "peak_mib": stats["peak_mib"]})
            cpu += spent
        out["memory_limit_mib"] = (engine.memory_limit or 0) / 2**20
        out["restarted_workers"] = len(set(after) - set(before))
    engine.close()
    out.update(
        wall_s=wall,
        cpu_s=cpu,
        startup_s=startup,
        rows_per_s=out["rows"] / wall,
        client_peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        workers=workers,
    )
    return out


def _physical_limit(data: Path) -> dict[str, Any]:
    """Plain pyarrow: read the nine columns of every part and count the combinations.

    Each part's counts come from Arrow's hash group-by; the parts' counts are
    summed by a second group-by whenever they hold as many rows as the sum so
    far (so memory stays near the final counts).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([*((c, pa.string()) for c in COLUMNS), ("n", pa.int64())])

    def combine(tables: list[Any]) -> Any:
        summed = pa.concat_tables(tables).group_by(COLUMNS).aggregate([("n", "sum")])
        return summed.rename_columns([*COLUMNS, "n"]).select([*COLUMNS, "n"])

    parts = sorted(data.glob("part-*.parquet"))
    cpu0, wall0 = _cpu(), time.perf_counter()
    for part in parts:  # reading alone: the floor under any pass
        pq.read_table(part, columns=COLUMNS, read_dictionary=COLUMNS)
    read_wall, read_cpu = time.perf_counter() - wall0, _cpu() - cpu0
    cpu0, wall0 = _cpu(), time.perf_counter()
    done, pending, rows = None, [], 0
    for part in parts:
        table = pq.read_table(part, columns=COLUMNS, read_dictionary=COLUMNS)
        rows += table.num_rows
        counted = table.group_by(COLUMNS).aggregate([([], "count_all")])
        pending.append(counted.rename_columns([*COLUMNS, "n"]).cast(schema))
        if done is None or sum(t.num_rows for t in pending) >= done.num_rows:
            done, pending = combine([*([done] if done is not None else []), *pending]), []
    counts = combine([*([done] if done is not None else []), *pending])
    tuples = counts.group_by(QIS).aggregate([]).num_rows
    wall, cpu = time.perf_counter() - wall0, _cpu() - cpu0
    return {
        "rows": rows,
        "distinct_tuples": tuples,
        "tuple_value_pairs": counts.num_rows,
        "wall_s": wall,
        "cpu_s": cpu,
        "rows_per_s": rows / wall,
        "read_wall_s": read_wall,
        "read_cpu_s": read_cpu,
        "read_rows_per_s": rows / read_wall,
        "client_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


# ---------------------------------------------------------------------------
# The driver
# ---------------------------------------------------------------------------


def run_child(
    step: str, engine: str, args: argparse.Namespace, data: Path, extra: dict[str, str]
) -> dict[str, Any]:
    """One measurement in a fresh process (its peak memory is its own)."""
    command = [
        sys.executable,
        __file__,
        "--child",
        "--step",
        step,
        "--engine",
        engine,
        "--data",
        str(data),
        "--workers",
        str(args.workers),
        "--memory-limit",
        args.memory_limit,
    ]
    for key, value in extra.items():
        command += [f"--{key}", value]
    load = os.getloadavg()[0]
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{step} on {engine} failed:\n{proc.stderr[-3000:]}")
    out = dict(json.loads(proc.stdout.strip().splitlines()[-1]))
    out["load_average"] = [round(load, 2), round(os.getloadavg()[0], 2)]  # before, after
    return out


def release_hashes(folder: Path) -> list[str]:
    """Content hash of each part's rows: per column, the text's offsets and bytes (as a
    ``large_string`` Arrow array starting at offset 0), with the column names."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    hashes = []
    for part in sorted(folder.glob("part-*.parquet")):
        digest = hashlib.sha256()
        table = pq.read_table(part)
        for name in table.column_names:
            column = table.column(name).combine_chunks().cast(pa.large_string())
            assert column.offset == 0 and column.null_count == 0
            digest.update(name.encode() + b"\x00")
            for buffer in column.buffers()[1:]:
                digest.update(memoryview(buffer))
        hashes.append(digest.hexdigest())
    return hashes


def same_base(a: Path, b: Path) -> bool:
    """Whether two saved frequency sets hold the same arrays."""
    x, y = np.load(a), np.load(b)
    return all(np.array_equal(x[k], y[k]) for k in x.files)


def measure(rows: int, args: argparse.Namespace) -> dict[str, Any]:
    """Generate the table and run every measurement at ``rows`` rows."""
    label = f"{rows // 10**6}M" if rows >= 10**6 else str(rows)
    root = Path(args.dir)
    data = root / f"synthetic_{label}"
    table = generate(data, rows, args.part_rows, args.seed)
    print(
        f"{label}: table of {table['parts']} parts, {table['bytes'] / 2**20:,.0f} MiB", flush=True
    )
    result: dict[str, Any] = {"rows": rows, "table": table, "steps": []}
    steps = result["steps"]
    steps.append(
        {"step": "limit", "engine": "pyarrow", **run_child("limit", "numpy", args, data, {})}
    )
    _print(label, steps[-1])
    bases = {}
    for engine in ("numpy", "dask"):
        save = root / f"base_{label}_{engine}.npz"
        steps.append(
            {
                "step": "frequency",
                "engine": engine,
                **run_child("frequency", engine, args, data, {"save": str(save)}),
            }
        )
        _print(label, steps[-1])
        bases[engine] = save
    result["same_frequency_set"] = same_base(bases["numpy"], bases["dask"])
    hashes = {}
    for engine in ("numpy", "dask"):
        output = root / f"release_{label}_{engine}"
        steps.append(
            {
                "step": "release",
                "engine": engine,
                **run_child(
                    "release",
                    engine,
                    args,
                    data,
                    {"save": str(bases["numpy"]), "output": str(output)},
                ),
            }
        )
        _print(label, steps[-1])
        hashes[engine] = release_hashes(output)
    result["same_release"] = hashes["numpy"] == hashes["dask"]
    for engine in ("numpy", "dask"):
        shutil.rmtree(root / f"release_{label}_{engine}", ignore_errors=True)
    print(
        f"{label}: same frequency set {result['same_frequency_set']}, same release "
        f"{result['same_release']}",
        flush=True,
    )
    return result


def _command_args(data: Path, output: str, report: Path) -> list[str]:
    args = [sys.executable, "-m", "anonlab", "generalize", str(data)]
    for q in QIS:
        args += ["--qi", f"{q}={ADULT / f'hierarchy_{q}.csv'}"]
    return [
        *args,
        "--sensitive",
        SENSITIVE,
        "--k",
        str(K),
        "--suppression",
        "1%",
        "--search",
        "flash",
        "--output",
        output,
        "--report",
        str(report),
        "--quiet",
    ]


#: runs a command and prints the CPU time and largest resident set of it and every process
#: it started (RUSAGE_CHILDREN of a fresh process: only this command's tree)
_WRAPPER = """
import json, resource, subprocess, sys
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"cpu_s": u.ru_utime + u.ru_stime, "peak_mib": u.ru_maxrss / 1024}))
sys.exit(code)
"""


def measured_run(command: list[str], what: str) -> dict[str, Any]:
    """Run ``command`` in a fresh measuring process (:data:`_WRAPPER`): its wall and CPU
    time, peak memory (of the largest process, and of the command's own process and of each
    Dask worker, :class:`PeakWatch`), and the load average before and after; a failure
    raises with the end of the command's error output."""
    load = os.getloadavg()[0]
    started = time.perf_counter()
    with (
        subprocess.Popen(
            [sys.executable, "-c", _WRAPPER, *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as proc,
        PeakWatch(proc.pid) as watch,
    ):
        out, err = proc.communicate()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{err[-3000:]}")
    usage = json.loads(out.strip().splitlines()[-1])
    return {
        "wall_s": wall,
        "cpu_s": usage["cpu_s"],
        "peak_mib": usage["peak_mib"],
        "command_peak_mib": watch.command_peak(),
        "worker_peaks_mib": watch.worker_peaks(),
        "peak_polls_missed": watch.missed,
        "load_average": [round(load, 2), round(os.getloadavg()[0], 2)],
    }


def _process_children() -> dict[int, list[int]]:
    """Every running process's children, by parent pid (from ``/proc/<pid>/stat``)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    return children


class PeakWatch:
    """Polls the high-water mark (``VmHWM``) of every process under ``root`` every
    ``interval`` seconds while a command runs: the command's own process (the root's child)
    and each Dask worker (a process started by ``multiprocessing``'s spawn). A process that
    ends between two polls keeps the mark of its last poll."""

    def __init__(self, root: int, interval: float = 0.25) -> None:
        import threading

        self.root = root
        self.interval = interval
        self.peaks: dict[int, tuple[str, float]] = {}
        self.missed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> PeakWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                self._sample()
            except (OSError, ValueError, IndexError):  # a process that ended mid-read
                self.missed += 1
            self._stop.wait(self.interval)

    def _sample(self) -> None:
        """One poll: every process under the command, its mark and role."""
        children = _process_children()
        command = set(children.get(self.root, []))
        todo = list(command)
        while todo:
            pid = todo.pop()
            todo += children.get(pid, [])
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            hwm = (
                next(
                    (
                        int(line.split()[1])
                        for line in status.splitlines()
                        if line.startswith("VmHWM:")
                    ),
                    0,
                )
                / 1024
            )
            role = (
                "command" if pid in command else "worker" if b"spawn_main" in cmdline else "other"
            )
            self.peaks[pid] = (role, max(hwm, self.peaks.get(pid, (role, 0.0))[1]))

    def command_peak(self) -> float:
        """Peak MiB of the command's own process."""
        return max((mib for role, mib in self.peaks.values() if role == "command"), default=0.0)

    def worker_peaks(self) -> list[float]:
        """Peak MiB of each Dask worker process (none on the NumPy engine)."""
        return sorted(round(mib, 1) for role, mib in self.peaks.values() if role == "worker")


def dask_flags(args: argparse.Namespace) -> list[str]:
    """The flags of a run on Dask: a local cluster of ``args.workers`` workers with
    ``args.memory_limit`` each."""
    return ["--engine", "dask", "--workers", str(args.workers), "--memory-limit", args.memory_limit]


def run_command(way: str, data: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The whole generalize command one way (``numpy``, ``numpy-engine``, ``dask``)."""
    out = root / f"command_{way}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    target = str(out / "release.parquet") if way == "numpy" else f"{out / 'release'}/"
    command = _command_args(data, target, out / "report.json")
    if args.recoding != "full-domain":  # a partitioning suppresses nothing, nor searches
        at = command.index("--suppression")
        command[at : at + 4] = ["--recoding", args.recoding]
    if way == "dask":
        command += dask_flags(args)
    run = measured_run(command, f"generalize {way}")
    report = json.loads((out / "report.json").read_text())
    return {
        "way": way,
        **run,
        "rows_per_s": report["records"] / run["wall_s"],
        "search_s": report.get("search_seconds", 0.0),  # a Mondrian run has no search
        "transformation": report.get("transformation"),
        "nodes_checked": report.get("nodes_checked"),
        "suppressed_records": report.get("suppressed_records"),
        "release_sha256": _sorted_digest(
            out / ("release.parquet" if way == "numpy" else "release")
        ),
    }


def _sorted_digest(path: Path) -> str:
    """A content hash of a release's rows that ignores their order, read batch by batch.

    Each row's text values are hashed to 64 bits
    (``pandas.util.hash_pandas_object``); the digest is the SHA-256 of the
    column names, the row count and the sums of those hashes and of their
    squares modulo 2^64 (equal multisets of rows give equal sums, whatever
    their order). Memory stays at one batch, so a 100M-row release is hashed
    too (a full sort would need tens of GB).
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.dataset as ds

    dataset = ds.dataset(path, format="parquet")
    names = sorted(dataset.schema.names)
    total = np.uint64(0)
    squares = np.uint64(0)
    rows = 0
    for batch in dataset.to_batches(columns=names, batch_size=1 << 20):
        text = pa.Table.from_batches([batch]).cast(pa.schema([(n, pa.string()) for n in names]))
        hashed = pd.util.hash_pandas_object(text.to_pandas(), index=False).to_numpy()
        with np.errstate(over="ignore"):
            total += hashed.sum(dtype=np.uint64)
            squares += (hashed * hashed).sum(dtype=np.uint64)
        rows += len(hashed)
    digest = hashlib.sha256(",".join(names).encode())
    digest.update(f"{rows}:{int(total)}:{int(squares)}".encode())
    return digest.hexdigest()


def size_label(rows: int) -> str:
    """``10M`` for 10,000,000 rows."""
    return f"{rows // 10**6}M" if rows >= 10**6 else str(rows)


def measure_command(rows: int, args: argparse.Namespace) -> dict[str, Any]:
    """The whole command at ``rows`` rows, each way, the table made first if needed."""
    label = size_label(rows)
    root = Path(args.dir)
    if args.lattice_table:
        label, data = "lattice 1M", root / "lattice_1M"
        rows = generate_lattice_table(data, args.lattice_table)["table"]["rows"]
    else:
        data = root / f"synthetic_{label}"
        generate(data, rows, args.part_rows, args.seed)
    result: dict[str, Any] = {"rows": rows, "table": label, "ways": []}
    for repeat in range(args.repeats):  # the ways interleaved, so load hits them alike
        for way in args.ways:
            r = run_command(way, data, root, args)
            r["repeat"] = repeat
            result["ways"].append(r)
            print(
                f"{label:>5} generalize {way:<13} wall {r['wall_s']:7.1f} s  cpu "
                f"{r['cpu_s']:7.1f} s  peak {r['peak_mib']:7,.0f} MiB (command "
                f"{r['command_peak_mib']:,.0f}, workers {r['worker_peaks_mib']})  "
                f"{r['rows_per_s'] / 1e6:5.2f} M rows/s  search {r['search_s']:5.1f} s  "
                f"load {r['load_average']}",
                flush=True,
            )
            shutil.rmtree(root / f"command_{way}", ignore_errors=True)
    result["median"] = {
        way: {
            key: statistics.median(r[key] for r in result["ways"] if r["way"] == way)
            for key in ("wall_s", "cpu_s", "peak_mib")
        }
        for way in args.ways
    }
    for way, m in result["median"].items():
        print(
            f"{label:>5} median {way:<13} wall {m['wall_s']:7.1f} s  cpu {m['cpu_s']:7.1f} s"
            f"  peak {m['peak_mib']:7,.0f} MiB",
            flush=True,
        )
    result["same_release"] = len({w["release_sha256"] for w in result["ways"]}) == 1
    result["same_search"] = (
        len(
            {
                json.dumps([w["transformation"], w["nodes_checked"], w["suppressed_records"]])
                for w in result["ways"]
            }
        )
        == 1
    )
    print(
        f"{label}: same release {result['same_release']}, same search {result['same_search']}",
        flush=True,
    )
    return result


def _print(label: str, r: dict[str, Any]) -> None:
    workers = ", ".join(f"{w['peak_mib']:,.0f}" for w in r.get("workers", []))
    print(
        f"{label:>5} {r['step']:<10} {r['engine']:<8} wall {r['wall_s']:8.1f} s  "
        f"cpu {r['cpu_s']:8.1f} s  {r['rows_per_s'] / 1e6:6.2f} M rows/s  "
        f"peak {r['client_peak_mib']:7,.0f} MiB"
        + (f"  workers [{workers}] MiB" if workers else ""),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rows",
        action="append",
        type=parse_rows,
        help="table size, e.g. 10M or 100M (repeatable; default 10M)",
    )
    parser.add_argument("--dir", default="/tmp/anonlab_scale", help="where tables go")
    parser.add_argument("--part-rows", type=parse_rows, default=10**6)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="4GB")
    parser.add_argument(
        "--command",
        action="store_true",
        help="measure the whole generalize command instead of the passes",
    )
    parser.add_argument(
        "--ways",
        nargs="+",
        default=list(WAYS),
        choices=WAYS,
        help="with --command: the ways to run (numpy in memory needs about 400 bytes a row)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="with --command: runs of each way, interleaved (medians saved)",
    )
    parser.add_argument(
        "--lattice-table",
        type=int,
        metavar="PARTS",
        help="with --command: run on benchmarks/lattice.py's 1M-row synthetic "
        "table, written as PARTS Parquet parts, instead of --rows",
    )
    parser.add_argument(
        "--recoding",
        default="full-domain",
        choices=("full-domain", "mondrian"),
        help="with --command: the recoding of the generalize command (results of mondrian "
        "go to scale_command_mondrian.json)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--step", help=argparse.SUPPRESS)
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--save", help=argparse.SUPPRESS)
    parser.add_argument("--output", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    sizes = args.rows or [10**7]
    if args.command:
        out = COMMAND_OUT if args.recoding == "full-domain" else MONDRIAN_OUT
        earlier = json.loads(out.read_text()) if out.exists() else {}
        by_rows = {r.get("table", size_label(r["rows"])): r for r in earlier.get("runs", [])}
        for rows in [0] if args.lattice_table else sizes:  # a size measured again replaces
            done = measure_command(rows, args)  # its earlier figures
            by_rows[str(done["table"])] = done
            RESULTS.mkdir(parents=True, exist_ok=True)
            out.write_text(
                json.dumps(
                    {
                        "machine": {
                            "cpus": os.cpu_count(),
                            "workers": args.workers,
                            "memory_limit": args.memory_limit,
                        },
                        "runs": sorted(
                            by_rows.values(), key=lambda r: (r["rows"], r.get("table", ""))
                        ),
                    },
                    indent=1,
                )
            )
        print(f"saved {out}")
        return
    previous = json.loads(OUT.read_text()) if OUT.exists() else {}
    runs = {str(r["rows"]): r for r in previous.get("runs", [])}
    for rows in sizes:
        runs[str(rows)] = measure(rows, args)
        RESULTS.mkdir(parents=True, exist_ok=True)
        OUT.write_text(
            json.dumps(
                {
                    "machine": {
                        "cpus": os.cpu_count(),
                        "workers": args.workers,
                        "memory_limit": args.memory_limit,
                    },
                    "runs": sorted(runs.values(), key=lambda r: r["rows"]),
                },
                indent=1,
            )
        )
    print(f"saved {OUT}")


if __name__ == "__main__":
    main()
