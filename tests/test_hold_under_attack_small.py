"""The small ones of issue 21 ("Hold under attack"), each a refusal in one line.

- a scheduler address with a password: refused before any client is made,
  the password shown as ``***`` (the commands: test_bad_input_excel_scheduler);
- a workbook whose XML declares a DTD (entity expansion): refused before
  openpyxl parses it, in whatever encoding the part is written;
- a fusion party's ``port`` or ``mpc_port`` outside 1..65535: refused when
  the config is read, not after a connect timeout;
- a Dask worker that died (``CommClosedError``, ``StreamClosedError``,
  ``KilledWorker``): one line naming ``memory_limit`` and fewer workers;
- ``known`` counts not below the records the attacks run on (perturb, attack);
- staged files and folders of killed runs: removed when a run starts writing
  to their folder, never a live run's.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab import tempfiles as tempfiles_module
from anonlab.cli.app import app
from anonlab.engine import Engine
from anonlab.engine.dask_backend import check_address, shown_address
from anonlab.errors import AnonlabError
from anonlab.fusion.config import config_from_dict
from anonlab.io import read_table
from anonlab.outputs import Outputs
from anonlab.sources import refuse_dtds
from anonlab.tempfiles import remove_stale_temps, temp_path_for
from test_bad_input_excel_scheduler import entity_workbook

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "fusion" / "fusion.toml"
runner = CliRunner()


def _one_line(args: list[str]) -> str:
    """``anonlab args`` fails with exit code 2 in one line ``Error: ...``; returns it."""
    result = runner.invoke(app, args)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]


# ---------------------------------------------------------------------------
# 1. A scheduler address with a password
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "shown"),
    [
        ("tcp://alice:S3cret@127.0.0.1:1", "tcp://alice:***@127.0.0.1:1"),
        ("tls://user:pw@scheduler.example:8786", "tls://user:***@scheduler.example:8786"),
        ("tcp://a:b:c@d@127.0.0.1:1", "tcp://a:***@127.0.0.1:1"),
        ("alice:S3cret@127.0.0.1:1", "alice:***@127.0.0.1:1"),
        ("tcp://token@127.0.0.1:1", "tcp://***@127.0.0.1:1"),
        ("tcp://127.0.0.1:8786", "tcp://127.0.0.1:8786"),
    ],
)
def test_a_scheduler_address_is_shown_without_its_password(address: str, shown: str) -> None:
    assert shown_address(address) == shown
    if "@" in address:
        with pytest.raises(AnonlabError) as info:
            check_address(address)
        assert info.value.parameter == "scheduler" and shown in str(info.value)
        assert "S3cret" not in str(info.value) and ":pw@" not in str(info.value)


def test_a_good_scheduler_address_passes() -> None:
    assert check_address(" tcp://127.0.0.1:8786 ") == "tcp://127.0.0.1:8786"
    assert check_address("tls://[::1]:8786") == "tls://[::1]:8786"


# ---------------------------------------------------------------------------
# 2. A workbook that declares entities
# ---------------------------------------------------------------------------


def _workbook(path: Path) -> Path:
    from openpyxl import Workbook  # type: ignore[import-untyped]

    book = Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["age", "sex"])
    sheet.append([39, "F"])
    sheet.append([50, "M"])
    book.save(path)
    return path


def test_a_workbook_with_entities_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    bomb = entity_workbook(_workbook(tmp_path / "good.xlsx"), tmp_path / "bomb.xlsx")
    with pytest.raises(
        AnonlabError,
        match=r"declares a DTD or entities in its part "
        r"'xl/worksheets/sheet1\.xml': refused",
    ) as info:
        read_table(bomb)
    assert "\n" not in str(info.value)
    line = _one_line(["risk", str(bomb), "--qi", "age,sex", "--report", str(tmp_path / "r.json")])
    assert "declares a DTD or entities" in line and not (tmp_path / "r.json").exists()


PROLOG = '<?xml version="1.0" encoding="{}"?><!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>'


def _with_part(good: Path, path: Path, part: str, data: bytes) -> Path:
    """``good`` with ``part`` replaced by ``data`` (or added, when it has none)."""
    import zipfile

    with zipfile.ZipFile(good) as source, zipfile.ZipFile(path, "w") as target:
        for name in source.namelist():
            target.writestr(name, data if name == part else source.read(name))
        if part not in source.namelist():
            target.writestr(part, data)
    return path


@pytest.mark.parametrize("part", ["xl/styles.xml", "xl/media/image1.png"])
@pytest.mark.parametrize(
    "encoding", ["utf-8", "utf-16", "utf-16-le", "utf-16-be", "latin-1", "utf-32"]
)
def test_a_dtd_is_found_in_any_encoding_and_any_part(
    tmp_path: Path, encoding: str, part: str
) -> None:
    """In the styles or a part of any name, also in an encoding the parser cannot read."""
    good = _workbook(tmp_path / "good.xlsx")
    bomb = _with_part(good, tmp_path / "bomb.xlsx", part, PROLOG.format(encoding).encode(encoding))
    with (
        bomb.open("rb") as fh,
        pytest.raises(AnonlabError, match=re.escape(f"in its part '{part}'")),
    ):
        refuse_dtds(fh, bomb)


def test_a_plain_workbook_and_a_damaged_one(tmp_path: Path) -> None:
    """No DTD: nothing refused (a PNG part is no XML); a damaged sheet is one line."""
    import zipfile

    good = _with_part(
        _workbook(tmp_path / "plain.xlsx"),
        tmp_path / "good.xlsx",
        "xl/media/image1.png",
        b"\x89PNG\r\n\x1a\n" + bytes(200),
    )
    with good.open("rb") as fh:
        refuse_dtds(fh, good)
    assert read_table(good)["age"].tolist() == ["39", "50"]
    with zipfile.ZipFile(good) as book:
        sheet = book.read("xl/worksheets/sheet1.xml")
    damaged = _with_part(
        good, tmp_path / "damaged.xlsx", "xl/worksheets/sheet1.xml", sheet[: len(sheet) // 2]
    )
    with pytest.raises(AnonlabError, match="is not a readable Excel workbook") as info:
        read_table(damaged)
    assert "\n" not in str(info.value)
    with pytest.raises(AnonlabError, match="is not a readable Excel workbook"):
        refuse_dtds(io.BytesIO(b"PK\x03\x04 not a zip"), damaged)


# ---------------------------------------------------------------------------
# 3. Fusion ports
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["port", "mpc_port"])
@pytest.mark.parametrize("value", [99999, 65536, 0, -1])
def test_a_port_outside_1_to_65535_is_refused_when_the_config_is_read(
    field: str, value: int
) -> None:
    data = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    data["parties"][1][field] = value
    with pytest.raises(AnonlabError) as info:
        config_from_dict(data, EXAMPLE.parent)
    assert str(info.value) == (
        f"party 'provider-b': {field} = {value} is not a TCP port: give a free port from 1 to 65535"
    )


def test_the_edge_ports_are_taken() -> None:
    data = tomllib.loads(EXAMPLE.read_text(encoding="utf-8"))
    data["parties"][0].update(port=1, mpc_port=65535)
    config = config_from_dict(data, EXAMPLE.parent)
    assert (config.parties[0].port, config.parties[0].mpc_port) == (1, 65535)


@pytest.mark.parametrize(
    "command",
    [
        ["fuse", "{config}", "--output", "{out}"],
        ["party", "{config}", "--party", "provider-a", "--output", "{out}"],
    ],
)
def test_party_and_fuse_refuse_a_bad_port_at_once(command: list[str], tmp_path: Path) -> None:
    text = EXAMPLE.read_text(encoding="utf-8").replace("port = 17002", "port = 99999")
    assert "port = 99999" in text
    config = tmp_path / "fusion.toml"
    config.write_text(text, encoding="utf-8")
    out = tmp_path / "fused.csv"
    started = time.monotonic()
    line = _one_line([a.format(config=config, out=out) for a in command])
    assert time.monotonic() - started < 5  # no connect timeout waited for
    assert line == (
        "Error: party 'provider-b': port = 99999 is not a TCP port: give a free "
        "port from 1 to 65535"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fusion.toml"]


# ---------------------------------------------------------------------------
# 4. A Dask worker that died
# ---------------------------------------------------------------------------


def closed_piece(piece: int) -> None:
    """A task whose worker lost its connection to another one (it had died) while running."""
    from distributed.comm.core import CommClosedError

    raise CommClosedError(
        f"in <TCP (closed) ConnectionPool.gather local=tcp://127.0.0.1:1 "
        f"remote=tcp://127.0.0.1:2>: Stream is closed (piece {piece})"
    )


def test_a_lost_worker_connection_is_one_line_naming_memory_limit(
    session_dask_engine: Engine,
) -> None:
    """On the session's cluster: a task failing with ``CommClosedError`` (what the client
    gets when a worker holding a result was killed) ends the pass in one line."""
    from anonlab.engine.table import Table

    cloudpickle = pytest.importorskip("cloudpickle")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    runner_engine: Any = session_dask_engine
    with pytest.raises(AnonlabError) as info:
        pieces: Any = (0, 1)  # the kernel takes any piece
        runner_engine.map_pieces(Table("two pieces", ("age",), pieces), closed_piece)
    message = str(info.value)
    assert info.value.parameter == "memory_limit" and "\n" not in message
    assert message.startswith("memory_limit (")
    assert "a Dask worker process died or was killed" in message
    assert "CommClosedError" in message and "use fewer workers" in message


def _stream_closed() -> Exception:
    from tornado.iostream import StreamClosedError

    return StreamClosedError()


def _killed_worker() -> Exception:
    from distributed import KilledWorker

    class Worker:
        address = "tcp://127.0.0.1:2"

    last: Any = Worker()  # the one attribute the message reads
    return KilledWorker(("piece", 3), last, 3)


@pytest.mark.parametrize(
    ("make", "words"),
    [(_stream_closed, "(StreamClosedError)"), (_killed_worker, "again and again running task")],
)
def test_every_worker_death_is_the_same_line(
    session_dask_engine: Engine, make: Any, words: str
) -> None:
    run: Any = getattr(session_dask_engine, "_run")  # noqa: B009 -- DaskEngine's own

    def fails() -> None:
        raise make()

    with pytest.raises(AnonlabError) as info:
        run(fails)
    assert info.value.parameter == "memory_limit" and words in str(info.value)
    assert "died or was killed" in str(info.value) and "\n" not in str(info.value)
    flags = info.value.for_flags()
    assert flags.startswith("--memory-limit (")


# ---------------------------------------------------------------------------
# 5. known and the records the attacks run on
# ---------------------------------------------------------------------------


@pytest.fixture()
def numbers(tmp_path: Path) -> Path:
    """834 records of three numeric columns."""
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(rng.normal(size=(834, 3)), columns=list("abc")).round(4)
    path = tmp_path / "numbers.csv"
    frame.to_csv(path, index=False)
    return path


def test_perturb_refuses_known_not_below_the_records(numbers: Path, tmp_path: Path) -> None:
    out, key = tmp_path / "out" / "p.csv", tmp_path / "out" / "k.json"
    base = ["perturb", str(numbers), "--output", str(out), "--key", str(key), "--quiet"]
    line = _one_line([*base, "--known", "100000"])
    assert line == (
        "Error: --known 100000 is not below the 834 records the attacks run on "
        "(the whole table): give known counts below 834"
    )
    line = _one_line([*base, "--known", "2,834,900"])
    assert "--known [834, 900] is not below the 834 records" in line
    line = _one_line([*base, "--known", "5,300", "--attack-records", "300"])
    assert line == (
        "Error: --known 300 is not below the 300 records the attacks run on "
        "(attack_records is 300): give known counts below 300"
    )
    assert not (tmp_path / "out").exists()


def test_perturb_on_an_engine_refuses_known_not_below_the_records(
    numbers: Path, tmp_path: Path, dask_scheduler: str
) -> None:
    """On the session's cluster: the same line, and the staged release folder is gone."""
    out = tmp_path / "out"
    line = _one_line(
        [
            "perturb",
            str(numbers),
            "--output",
            f"{out}/",
            "--known",
            "2,900",
            "--engine",
            "dask",
            "--scheduler",
            dask_scheduler,
            "--quiet",
        ]
    )
    assert line == (
        "Error: --known 900 is not below the 834 records the attacks run on "
        "(the whole table): give known counts below 834"
    )
    assert sorted(tmp_path.iterdir()) == [numbers]


def test_attack_refuses_known_not_below_the_records(numbers: Path, tmp_path: Path) -> None:
    released = tmp_path / "released.csv"
    done = runner.invoke(
        app, ["perturb", str(numbers), "--method", "rotation", "--output", str(released), "--quiet"]
    )
    assert done.exit_code == 0, done.output
    report = tmp_path / "a.json"
    base = ["attack", str(numbers), str(released), "--report", str(report), "--quiet"]
    line = _one_line([*base, "--known", "5,1000"])
    assert line == (
        "Error: --known 1000 is not below the 834 records the attacks run on "
        "(the whole table): give known counts below 834"
    )
    line = _one_line([*base, "--known", "5,100", "--max-records", "100"])
    assert "(max_records is 100): give known counts below 100" in line
    assert not report.exists()


# ---------------------------------------------------------------------------
# 6. Staged files of killed runs
# ---------------------------------------------------------------------------


@pytest.fixture()
def live_pids() -> Iterator[tuple[int, int]]:
    """The ids of two processes that live for the test (and are not this one)."""
    processes = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(2)
    ]
    try:
        yield processes[0].pid, processes[1].pid
    finally:
        for process in processes:
            process.kill()
            process.wait()


def _dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def _staged(folder: Path, name: str, pid: int) -> Path:
    """The name a run of process ``pid`` on this host stages ``name`` in ``folder`` under."""
    mine = temp_path_for(folder / name).name
    return folder / mine.replace(f"-{os.getpid()}-", f"-{pid}-")


def test_a_run_removes_staged_files_and_folders_of_killed_runs_as_it_starts(
    tmp_path: Path, live_pids: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A killed run's staged file and staged folder (a partitioned release) are gone once a
    run writing to that folder starts; a live run's file stays, and so does one whose
    process id was reused by a process started after the file was written."""
    out = tmp_path / "out"
    out.mkdir()
    dead = _dead_pid()
    stale_file = _staged(out, "r.json", dead)
    stale_file.write_text("left by kill -9", encoding="utf-8")
    stale_folder = _staged(out, "release", dead)
    stale_folder.mkdir()
    (stale_folder / "part-0.parquet").write_bytes(b"half")
    (stale_folder / ".part-1.parquet.tmp").write_bytes(b"half")
    live_pid, reused_pid = live_pids
    alive = _staged(out, "other.csv", live_pid)  # a run still writing it
    alive.write_text("a live run's", encoding="utf-8")
    reused = _staged(out, "old.csv", reused_pid)  # written before that process started
    reused.write_text("left by a run whose id was given again", encoding="utf-8")
    started = tempfiles_module.process_started

    def later(pid: int) -> float | None:
        return time.time() + 60 if pid == reused_pid else started(pid)

    monkeypatch.setattr(tempfiles_module, "process_started", later)
    result = runner.invoke(
        app,
        [
            "risk",
            str(ROOT / "data" / "adult" / "adult.csv"),
            "--qi",
            "age,sex",
            "--other",
            "insensitive",
            "--report",
            str(out / "r.json"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == sorted(["r.json", alive.name])


def test_the_sweep_never_touches_a_live_run_another_host_or_a_link(
    tmp_path: Path, live_pids: tuple[int, int]
) -> None:
    live_pid = live_pids[0]
    dead = _dead_pid()
    alive = _staged(tmp_path, "o.csv", live_pid)
    alive.write_text("a live run's", encoding="utf-8")
    mine = temp_path_for(tmp_path / "o.csv")  # this process's: started before it was made
    mine.mkdir()
    elsewhere = tmp_path / f".o.csv.anonlab-another-host-{dead}-0a0b0c0d.tmp"
    elsewhere.mkdir()
    keep = tmp_path / "kept"
    keep.mkdir()
    (keep / "data.csv").write_text("not ours", encoding="utf-8")
    link = _staged(tmp_path, "l.csv", dead)
    link.symlink_to(keep, target_is_directory=True)
    assert remove_stale_temps(tmp_path) == []
    assert link.is_symlink() and (keep / "data.csv").exists()  # no run makes a link
    assert alive.exists() and mine.exists() and elsewhere.exists()
    stale = _staged(tmp_path, "release", dead)
    stale.mkdir()
    with Outputs({"output": tmp_path / "o.csv"}):  # a run's start
        assert not stale.exists() and alive.exists() and mine.exists()
