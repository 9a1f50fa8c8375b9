"""Bad Excel and bad scheduler input on every command that takes them (issue 21).

Every command that reads a table takes ``--sheet``; the ones that run on an
engine take ``--scheduler``. Each bad input below is one ``Error:`` line on
standard error, exit code 2, no traceback, no password, and nothing left in
the output folder:

- Excel: a ``--sheet`` the workbook lacks, a file that is not a workbook (CSV
  text named ``.xlsx``, an empty file), a workbook whose sheet is empty, and
  a workbook whose XML declares entities (the "billion laughs");
- scheduler: a malformed address, an unreachable one (a closed port on this
  machine, with a short connect timeout), and one that holds a password.

Each command is first run on the good workbook, so a refusal below is the bad
input's and not a mistake in the command line.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from openpyxl import Workbook  # type: ignore[import-untyped]
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.engine import dask_backend
from anonlab.io import read_table, write_table

PASSWORD = "S3cret"
runner = CliRunner()

#: the columns the numeric methods mask, and the roles of the others
NUMERIC = ["--columns", "age,income", "--insensitive", "sex,born,zip"]


@dataclass(frozen=True)
class Command:
    """A command line with ``{data}`` where its table goes and ``{out}`` for its output
    folder; ``{work}`` is the module's folder of inputs (hierarchies, earlier outputs;
    the second table of ``evaluate`` and ``attack`` is a workbook, as ``--sheet`` reads
    both). ``engine`` is the line on engine ``dask`` (a folder release, the scalable
    variant), for the commands that take ``--scheduler``; it reads the CSV table."""

    name: str
    args: tuple[str, ...]
    engine: tuple[str, ...] = ()

    def line(self, data: str, work: Path, out: Path, *extra: str) -> list[str]:
        """The command line on table ``data`` (``extra`` flags appended)."""
        return _filled(self.args, data, work, out) + list(extra)

    def engine_line(self, work: Path, out: Path, scheduler: str) -> list[str]:
        """The command line on engine ``dask`` joining ``scheduler``."""
        line = _filled(self.engine or self.args, str(work / "t.csv"), work, out)
        return [*line, "--engine", "dask", "--scheduler", scheduler]


def _filled(args: tuple[str, ...], data: str, work: Path, out: Path) -> list[str]:
    return [a.format(data=data, work=work, out=out) for a in args]


GENERALIZE = (
    "generalize",
    "{data}",
    "--qi",
    "age={work}/h_age.csv",
    "--qi",
    "sex={work}/h_sex.csv",
    "--insensitive",
    "income,born,zip",
    "--k",
    "2",
)
MICRO = ("microaggregate", "{data}", *NUMERIC, "--k", "3")
PERTURB = ("perturb", "{data}", *NUMERIC, "--key", "{out}/k.json", "--quiet", "--output")

COMMANDS = [
    Command(
        "generalize",
        (*GENERALIZE, "--output", "{out}/g.csv", "--quiet"),
        (*GENERALIZE, "--output", "{out}/g/", "--quiet"),
    ),
    Command(
        "apply",
        ("apply", "{work}/g.json", "{data}", "--output", "{out}/a.csv", "--quiet"),
        ("apply", "{work}/g.json", "{data}", "--output", "{out}/a/", "--quiet"),
    ),
    Command(
        "microaggregate",
        (*MICRO, "--output", "{out}/m.csv", "--quiet"),
        (*MICRO, "--variant", "scalable", "--output", "{out}/m/", "--quiet"),
    ),
    Command(
        "evaluate",
        (
            "evaluate",
            "{data}",
            "{work}/masked.xlsx",
            *NUMERIC,
            "--report",
            "{out}/e.json",
            "--quiet",
        ),
        (
            "evaluate",
            "{data}",
            "{work}/masked.csv",
            *NUMERIC,
            "--report",
            "{out}/e.json",
            "--quiet",
        ),
    ),
    Command(
        "tradeoff",
        ("tradeoff", "{data}", *NUMERIC, "--k", "3", "--report", "{out}/t.json", "--quiet"),
    ),
    Command("perturb", (*PERTURB, "{out}/p.csv"), (*PERTURB, "{out}/p/")),
    Command(
        "attack",
        (
            "attack",
            "{data}",
            "{work}/released.xlsx",
            *NUMERIC,
            "--report",
            "{out}/at.json",
            "--quiet",
        ),
    ),
    Command(
        "risk",
        (
            "risk",
            "{data}",
            "--qi",
            "age,sex",
            "--other",
            "insensitive",
            "--report",
            "{out}/r.json",
            "--quiet",
        ),
        (
            "risk",
            "{data}",
            "--qi",
            "age,sex",
            "--other",
            "insensitive",
            "--report",
            "{out}/r.json",
            "--quiet",
        ),
    ),
    Command(
        "hierarchy interval",
        (
            "hierarchy",
            "interval",
            "{data}",
            "--column",
            "age",
            "--widths",
            "5,10",
            "--output",
            "{out}/h.csv",
            "--quiet",
        ),
    ),
    Command(
        "hierarchy redaction",
        (
            "hierarchy",
            "redaction",
            "{data}",
            "--column",
            "zip",
            "--output",
            "{out}/h.csv",
            "--quiet",
        ),
    ),
    Command(
        "hierarchy grouping",
        (
            "hierarchy",
            "grouping",
            "{data}",
            "--column",
            "age",
            "--sizes",
            "2,4",
            "--output",
            "{out}/h.csv",
            "--quiet",
        ),
    ),
    Command(
        "hierarchy taxonomy",
        (
            "hierarchy",
            "taxonomy",
            "{data}",
            "--column",
            "sex",
            "--group",
            "1:person=F,M",
            "--output",
            "{out}/h.csv",
            "--quiet",
        ),
    ),
    Command(
        "hierarchy date",
        (
            "hierarchy",
            "date",
            "{data}",
            "--column",
            "born",
            "--levels",
            "month,year",
            "--output",
            "{out}/h.csv",
            "--quiet",
        ),
    ),
    Command(
        "hierarchy show",
        (
            "hierarchy",
            "show",
            "{work}/h_age.csv",
            "--data",
            "{data}",
            "--column",
            "age",
            "--report",
            "{out}/s.json",
            "--quiet",
        ),
    ),
]
SCHEDULED = [c for c in COMMANDS if c.engine]


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(21)
    n = 40
    return pd.DataFrame(
        {
            "age": rng.integers(20, 60, n),
            "income": rng.normal(3000, 800, n).round(2),
            "sex": rng.choice(["F", "M"], n),
            "born": [f"19{60 + i % 30}-0{1 + i % 9}-1{i % 10}" for i in range(n)],
            "zip": [f"{10000 + 37 * i}" for i in range(n)],
        }
    )


def _workbook(frame: pd.DataFrame | None, path: Path, sheet: str = "data") -> Path:
    book = Workbook()
    first = book.active
    assert first is not None
    first.title = sheet
    if frame is not None:
        first.append(list(frame.columns))
        for row in frame.itertuples(index=False):
            first.append([v.item() if hasattr(v, "item") else v for v in row])
    book.save(path)
    return path


def entity_workbook(good: Path, path: Path) -> Path:
    """``good`` with a billion-laughs DTD in its first sheet, one cell its entity."""
    with zipfile.ZipFile(good) as source:
        parts = {name: source.read(name) for name in source.namelist()}
    name = next(n for n in parts if n.startswith("xl/worksheets/"))
    entities = '<!ENTITY lol0 "lol">' + "".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)
    )
    sheet = parts[name].decode("utf-8")
    cell = sheet.index("<t>F</t>") if "<t>F</t>" in sheet else sheet.index("<t>M</t>")
    sheet = sheet[:cell] + "<t>&lol9;</t>" + sheet[cell + len("<t>F</t>") :]
    parts[name] = (f'<?xml version="1.0"?><!DOCTYPE lolz [{entities}]>' + sheet).encode()
    with zipfile.ZipFile(path, "w") as target:
        for part, data in parts.items():
            target.writestr(part, data)
    return path


def _hierarchies(frame: pd.DataFrame, work: Path) -> None:
    ages = sorted(set(frame["age"]))
    (work / "h_age.csv").write_text(
        "".join(f"{a};{a // 10 * 10}-{a // 10 * 10 + 9};*\n" for a in ages), encoding="utf-8"
    )
    (work / "h_sex.csv").write_text("F;*\nM;*\n", encoding="utf-8")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The inputs: the table as CSV and as workbooks good and bad, its hierarchies, and the
    earlier outputs ``apply``, ``evaluate`` and ``attack`` read."""
    work = tmp_path_factory.mktemp("bad_input")
    frame = _table()
    frame.to_csv(work / "t.csv", index=False)
    good = _workbook(frame, work / "good.xlsx")
    _workbook(None, work / "empty.xlsx")
    (work / "csv.xlsx").write_text(frame.to_csv(index=False), encoding="utf-8")
    (work / "zero.xlsx").write_bytes(b"")
    entity_workbook(good, work / "entities.xlsx")
    _hierarchies(frame, work)
    earlier = [
        [
            "generalize",
            str(work / "t.csv"),
            "--qi",
            f"age={work}/h_age.csv",
            "--qi",
            f"sex={work}/h_sex.csv",
            "--insensitive",
            "income,born,zip",
            "--k",
            "2",
            "--report",
            str(work / "g.json"),
            "--quiet",
        ],
        [
            "microaggregate",
            str(work / "t.csv"),
            *NUMERIC,
            "--k",
            "3",
            "--output",
            str(work / "masked.csv"),
            "--quiet",
        ],
        [
            "perturb",
            str(work / "t.csv"),
            *NUMERIC,
            "--method",
            "rotation",
            "--output",
            str(work / "released.csv"),
            "--quiet",
        ],
    ]
    for args in earlier:
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
    for name in ("masked", "released"):  # --sheet reads both tables of evaluate and attack
        write_table(read_table(work / f"{name}.csv"), work / f"{name}.xlsx", sheet="data")
    return work


def assert_one_error(args: list[str], out: Path, words: str) -> str:
    """``anonlab args`` exits with 2 after one line ``Error: ...`` holding ``words``, no
    traceback, no password, and leaves ``out`` empty; returns the line."""
    result = runner.invoke(app, args)
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, text
    assert len(lines) == 1 and lines[0].startswith("Error: "), text
    assert words in lines[0], lines[0]
    assert "Traceback" not in text and PASSWORD not in text
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
    assert sorted(out.rglob("*")) == [], sorted(out.rglob("*"))
    return lines[0]


# ---------------------------------------------------------------------------
# Excel
# ---------------------------------------------------------------------------

EXCEL_CASES = {
    # case: (workbook, --sheet, words of the error)
    "missing sheet": ("good.xlsx", "nope", "sheet 'nope' is not in"),
    "not a workbook": ("csv.xlsx", "data", "is not an Excel workbook"),
    "empty file": ("zero.xlsx", "data", "is not an Excel workbook"),
    "empty workbook": ("empty.xlsx", "data", "is empty"),
    "entities": ("entities.xlsx", "data", "declares a DTD or entities"),
}


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_every_command_reads_the_good_workbook(
    command: Command, work: Path, tmp_path: Path
) -> None:
    result = runner.invoke(
        app, command.line(str(work / "good.xlsx"), work, tmp_path, "--sheet", "data")
    )
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("case", list(EXCEL_CASES))
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_bad_excel_input_is_one_error_line(
    command: Command, case: str, work: Path, tmp_path: Path
) -> None:
    book, sheet, words = EXCEL_CASES[case]
    assert_one_error(
        command.line(str(work / book), work, tmp_path, "--sheet", sheet), tmp_path, words
    )


# ---------------------------------------------------------------------------
# Scheduler
# ---------------------------------------------------------------------------


def closed_port() -> int:
    """A port on this machine that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


SCHEDULER_CASES = {
    # case: (address, words of the error)
    "malformed": ("notaurl:::", "is not a Dask scheduler address"),
    "no port": ("tcp://127.0.0.1", "is not a Dask scheduler address"),
    "bad port": ("tcp://127.0.0.1:99999", "a port is 1 to 65535"),
    "unknown scheme": ("htp://127.0.0.1:8786", "unknown address scheme 'htp'"),
    "password": (f"tcp://alice:{PASSWORD}@127.0.0.1:1", "tcp://alice:***@127.0.0.1:1"),
    "tls password": (f"tls://alice:{PASSWORD}@127.0.0.1:1", "holds a user name or password"),
    "malformed password": (f"tcp://alice:{PASSWORD}@[bad", "tcp://alice:***@[bad"),
    "unreachable": ("tcp://127.0.0.1:{port}", "cannot be reached within 0.5 s"),
}


@pytest.mark.parametrize("case", list(SCHEDULER_CASES))
@pytest.mark.parametrize("command", SCHEDULED, ids=lambda c: c.name)
def test_bad_scheduler_is_one_error_line(
    command: Command, case: str, work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    address, words = SCHEDULER_CASES[case]
    monkeypatch.setattr(dask_backend, "CONNECT_TIMEOUT", 0.5)
    line = assert_one_error(
        command.engine_line(work, tmp_path, address.format(port=closed_port())), tmp_path, words
    )
    assert line.startswith("Error: --scheduler "), line


def test_a_password_in_the_scheduler_is_the_only_line_a_process_prints(
    work: Path, tmp_path: Path
) -> None:
    """In a process of its own (where a half-made client's finalizer would print an
    "Exception ignored" trace after 20 s): one line, at once, the password masked."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "anonlab",
            "risk",
            str(work / "t.csv"),
            "--qi",
            "age,sex",
            "--other",
            "insensitive",
            "--engine",
            "dask",
            "--scheduler",
            f"tcp://alice:{PASSWORD}@127.0.0.1:1",
            "--report",
            str(tmp_path / "r.json"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: --scheduler "), done.stderr
    assert "tcp://alice:***@127.0.0.1:1" in lines[0] and PASSWORD not in done.stderr
    assert list(tmp_path.iterdir()) == []
