"""No output may overwrite an input: database inputs given as bare URLs, SQLite files,
Parquet folders; folder inputs in reports; temporary files owner-only while written."""

from __future__ import annotations

import os
import sqlite3
import stat
import tempfile
from pathlib import Path

import pytest

from anonlab.database import DatabaseTarget
from anonlab.errors import AnonlabError
from anonlab.io import atomic_write, file_sha256
from anonlab.outputs import Outputs, Target
from anonlab.report import input_description
from anonlab.tempfiles import remove_stale_temps, temp_path_for


def _database(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x TEXT)")
        conn.execute("INSERT INTO t VALUES ('1')")
    conn.close()
    return f"sqlite:///{path}"


def _parquet_folder(path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.mkdir()
    pq.write_table(pa.table({"x": ["1", "2"]}), path / "part-0.parquet")
    (path / "sub").mkdir()
    pq.write_table(pa.table({"x": ["3"]}), path / "sub" / "part-1.parquet")
    return path


# 1. a database input given as a bare URL protects its database


def test_a_bare_url_input_protects_its_database(tmp_path: Path) -> None:
    url = _database(tmp_path / "d.db")
    for output in (
        DatabaseTarget(url, "t"),
        DatabaseTarget(url, "release"),
        DatabaseTarget(f"sqlite:///{os.path.relpath(tmp_path / 'd.db')}", "t"),
    ):
        with pytest.raises(AnonlabError, match="is in the input's database") as info:
            Outputs({"output": output}, inputs=[url])
        assert info.value.parameter == "output"
        assert len(str(info.value).splitlines()) == 1
    Outputs({"output": DatabaseTarget(f"sqlite:///{tmp_path / 'other.db'}", "t")}, inputs=[url])


def test_the_input_table_told_apart_lets_other_tables_through(tmp_path: Path) -> None:
    url = _database(tmp_path / "d.db")
    known = [DatabaseTarget(url, "t")]
    with pytest.raises(AnonlabError, match="is also an input") as info:
        Outputs({"output": DatabaseTarget(url, "t")}, inputs=[url], input_tables=known)
    assert info.value.parameter == "output"
    Outputs({"output": DatabaseTarget(url, "release")}, inputs=[url], input_tables=known)
    # a table named as an input target protects that table only
    Outputs({"output": DatabaseTarget(url, "release")}, inputs=[DatabaseTarget(url, "t")])


def test_a_run_does_not_replace_its_input_table(tmp_path: Path) -> None:
    from anonlab.runs.microaggregate import MicroaggregateSettings, run_microaggregate

    db = tmp_path / "d.db"
    url = f"sqlite:///{db}"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (a REAL, b REAL)")
        conn.executemany("INSERT INTO t VALUES (?, ?)", [(i, i * 2.0) for i in range(12)])
    conn.close()
    before = db.read_bytes()
    with pytest.raises(AnonlabError, match="also an input"):  # the run names its table
        run_microaggregate(
            MicroaggregateSettings(input=url, table="t", k=3, output=url, output_table="t")
        )
    assert db.read_bytes() == before


# 2. a SQLite input's file, and a SQLite output's file, are taken


def test_a_file_output_may_not_overwrite_a_sqlite_input(tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    url = _database(db)
    for inputs in ([url], [DatabaseTarget(url, "t")]):
        with pytest.raises(AnonlabError, match="is also an input") as info:
            Outputs({"report": db}, inputs=inputs)
        assert info.value.parameter == "report"
    Outputs({"report": tmp_path / "r.json"}, inputs=[url])  # another file: fine


def test_a_sqlite_output_file_is_not_another_output(tmp_path: Path) -> None:
    db = tmp_path / "out.db"
    table = DatabaseTarget(f"sqlite:///{db}", "release")
    both: list[dict[str, Target | None]] = [
        {"output": table, "report": db},
        {"report": db, "output": table},
    ]
    for targets in both:
        with pytest.raises(AnonlabError, match="give each output its own path"):
            Outputs(targets)
    Outputs({"output": table, "html": DatabaseTarget(f"sqlite:///{db}", "other")})


def test_a_sqlite_output_may_not_be_an_input_file(tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text("x\n1\n", encoding="utf-8")
    with pytest.raises(AnonlabError, match="is also an input"):
        Outputs({"output": DatabaseTarget(f"sqlite:///{data}", "t")}, inputs=[data])


# 3. nothing is written inside a Parquet-folder input


def test_an_output_inside_an_input_folder_is_refused(tmp_path: Path) -> None:
    folder = _parquet_folder(tmp_path / "data")
    for inside in (folder / "out.parquet", folder / "sub" / "r.json"):
        with pytest.raises(AnonlabError, match="inside the input folder") as info:
            Outputs({"output": inside}, inputs=[folder])
        assert info.value.parameter == "output"
    with pytest.raises(AnonlabError, match="inside the input folder"):
        Outputs({"output": DatabaseTarget(f"sqlite:///{folder / 'o.db'}", "t")}, inputs=[folder])
    Outputs({"output": tmp_path / "data.parquet"}, inputs=[folder])


# 4. a folder input is described in reports


def test_a_folder_input_has_a_stable_digest_and_its_total_size(tmp_path: Path) -> None:
    folder = _parquet_folder(tmp_path / "data")
    first = file_sha256(folder)
    assert first == file_sha256(folder) and len(first) == 64
    described = input_description(folder)
    assert described is not None
    files = [f for f in folder.rglob("*") if f.is_file()]
    assert described == {
        "name": "data",
        "bytes": sum(f.stat().st_size for f in files),
        "sha256": first,
    }
    (folder / "sub" / "part-1.parquet").rename(folder / "sub" / "part-2.parquet")
    renamed = file_sha256(folder)
    assert renamed != first
    (folder / "sub" / "part-2.parquet").write_bytes(b"changed")
    assert file_sha256(folder) not in (first, renamed)
    single = tmp_path / "a.csv"
    single.write_text("x\n1\n", encoding="utf-8")
    import hashlib

    assert file_sha256(single) == hashlib.sha256(single.read_bytes()).hexdigest()


# 5. temporary files are owner-only while being written


def test_temporary_files_are_owner_only_while_written(tmp_path: Path) -> None:
    modes: list[int] = []

    def writer(tmp: Path) -> None:
        modes.append(stat.S_IMODE(tmp.stat().st_mode))
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write("secret")

    def replacing(tmp: Path) -> None:  # writes elsewhere, then replaces the file
        other = tmp.with_name("other")
        other.write_text("secret", encoding="utf-8")
        os.chmod(other, 0o666)
        os.replace(other, tmp)

    old = os.umask(0)
    try:
        with Outputs(
            {
                "key": tmp_path / "k.json",
                "output": tmp_path / "o.csv",
                "report": tmp_path / "r.json",
            }
        ) as outputs:
            outputs.stage("key", writer, private=True)
            outputs.stage("output", writer)
            outputs.stage("report", replacing, private=True)
            outputs.commit()
        atomic_write(tmp_path / "k2.json", writer, private=True)
        atomic_write(tmp_path / "k3.json", replacing, private=True)
    finally:
        os.umask(old)
    assert modes == [0o600, 0o600, 0o600]
    for name, mode in [
        ("k.json", 0o600),
        ("o.csv", 0o666),
        ("r.json", 0o600),
        ("k2.json", 0o600),
        ("k3.json", 0o600),
    ]:
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name
        assert (tmp_path / name).read_text(encoding="utf-8") == "secret"


# 6. the system's temporary folder is never swept


def test_the_system_temporary_folder_is_never_swept() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    folder = Path(tempfile.gettempdir())
    probe = temp_path_for(folder / "probe")
    host_pid = probe.name.split(".anonlab-")[1].rsplit("-", 2)
    dead = folder / f".probe.anonlab-{host_pid[0]}-{int(done.stdout)}-0a0b0c0d.tmp"
    dead.write_text("", encoding="utf-8")
    try:
        assert remove_stale_temps(folder) == []
        assert dead.exists()
    finally:
        dead.unlink(missing_ok=True)
