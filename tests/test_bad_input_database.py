"""Bad database options on every command that reads or writes a database (issue 21).

Each case is one line ``Error: ...`` on stderr, exit code 2, no traceback, no
password, nothing written, and the input databases unchanged to the byte.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app

PASSWORD = "S3cretPW"
runner = CliRunner()
QUIET = ["--other", "insensitive", "--max-risk", "1", "--quiet"]

# the command line of each command that reads a database: (work folder, input URL, the
# database options) -> arguments
Command = Callable[[Path, str, list[str]], list[str]]


def _generalize(work: Path, url: str, opts: list[str]) -> list[str]:
    return [
        "generalize",
        url,
        *opts,
        "--qi",
        f"age={work / 'age.csv'}",
        *QUIET,
        "--output",
        str(work / "out.csv"),
        "--report",
        str(work / "out.json"),
    ]


def _apply(work: Path, url: str, opts: list[str]) -> list[str]:
    return [
        "apply",
        str(work / "found.json"),
        url,
        *opts,
        "--max-risk",
        "1",
        "--quiet",
        "--output",
        str(work / "out.csv"),
    ]


def _microaggregate(work: Path, url: str, opts: list[str]) -> list[str]:
    return [
        "microaggregate",
        url,
        *opts,
        "--columns",
        "age,income",
        *QUIET,
        "--output",
        str(work / "out.csv"),
    ]


def _evaluate(work: Path, url: str, opts: list[str]) -> list[str]:
    return [
        "evaluate",
        url,
        f"sqlite:///{work / 'masked.db'}",
        *opts,
        "--columns",
        "age,income",
        "--other",
        "insensitive",
        "--quiet",
        "--report",
        str(work / "out.json"),
    ]


def _perturb(work: Path, url: str, opts: list[str]) -> list[str]:
    return [
        "perturb",
        url,
        *opts,
        "--columns",
        "age,income",
        *QUIET,
        "--output",
        str(work / "out.csv"),
        "--key",
        str(work / "key.json"),
    ]


def _attack(work: Path, url: str, opts: list[str]) -> list[str]:
    return [
        "attack",
        url,
        f"sqlite:///{work / 'masked.db'}",
        *opts,
        "--columns",
        "age,income",
        "--other",
        "insensitive",
        "--quiet",
        "--report",
        str(work / "out.json"),
    ]


def _risk(work: Path, url: str, opts: list[str]) -> list[str]:
    return ["risk", url, *opts, "--qi", "age", *QUIET, "--report", str(work / "out.json")]


def _tradeoff(work: Path, url: str, opts: list[str]) -> list[str]:
    return [
        "tradeoff",
        url,
        *opts,
        "--columns",
        "age,income",
        "--k",
        "3",
        "--other",
        "insensitive",
        "--quiet",
        "--report",
        str(work / "out.json"),
    ]


READERS: dict[str, Command] = {
    "generalize": _generalize,
    "apply": _apply,
    "microaggregate": _microaggregate,
    "evaluate": _evaluate,
    "perturb": _perturb,
    "attack": _attack,
    "risk": _risk,
    "tradeoff": _tradeoff,
}
WRITERS = {"generalize": _generalize, "apply": _apply, "microaggregate": _microaggregate}

BAD_URLS = {  # malformed or unusable database URLs, each with a password to hide
    "credentials on sqlite": f"sqlite://alice:{PASSWORD}@/people.db",
    "credentials and host on sqlite": f"sqlite://alice:{PASSWORD}@localhost/people.db",
    "port out of range": f"postgresql://alice:{PASSWORD}@127.0.0.1:99999/db",
    "port not a number": f"postgresql://alice:{PASSWORD}@127.0.0.1:port/db",
    "unknown dialect": f"nosuchdb://alice:{PASSWORD}@127.0.0.1/db",
    "driver psycopg2": f"postgresql+psycopg2://alice:{PASSWORD}@127.0.0.1:1/db",
    "mysql": f"mysql://alice:{PASSWORD}@127.0.0.1:1/db",
    "nothing listening": f"postgresql://alice:{PASSWORD}@127.0.0.1:1/db",
    "a query argument the driver ignores": "sqlite:///people.db?mode=ro",
    "a password with an @": f"postgresql://alice:{PASSWORD}@x@127.0.0.1:1/db",
}

READ_OPTIONS = {  # database options that cannot be read: (options, words of the error)
    "missing table": (["--table", "nope"], "does not exist"),
    "a query that deletes": (["--query", "DELETE FROM people"], "read-only"),
    "a query that drops": (["--query", "DROP TABLE people"], "read-only"),
    "two statements": (["--query", "SELECT * FROM people; DELETE FROM people"], "--query"),
    "a query that is not SQL": (["--query", "SELEC age FROM people"], "--query"),
    "an empty query result": (["--query", "SELECT * FROM people WHERE 0"], ""),
    "table and query": (["--table", "people", "--query", "SELECT * FROM people"], "only one"),
    "neither table nor query": ([], "--table"),
}


def _people(work: Path) -> None:
    """``people.db`` and ``masked.db`` (table ``people``), ``age.csv``, and ``found.json``
    (a generalize report that ``apply`` takes)."""
    rows = [(18 + (i * 7) % 60, 1000 + (i * 37) % 900, "ab"[i % 2]) for i in range(60)]
    for name in ("people.db", "masked.db"):
        conn = sqlite3.connect(work / name)
        with conn:
            conn.execute("CREATE TABLE people (age INTEGER, income INTEGER, kind TEXT)")
            conn.executemany("INSERT INTO people VALUES (?, ?, ?)", rows)
        conn.close()
    (work / "age.csv").write_text("".join(f"{a};{a // 10 * 10};*\n" for a in range(100)))
    found = runner.invoke(
        app,
        [
            "generalize",
            f"sqlite:///{work / 'people.db'}",
            "--table",
            "people",
            "--qi",
            f"age={work / 'age.csv'}",
            *QUIET,
            "--report",
            str(work / "found.json"),
        ],
    )
    assert found.exit_code == 0, found.stderr


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("people")
    _people(work)
    return work


@pytest.fixture
def work(template: Path, tmp_path: Path) -> Path:
    for item in template.iterdir():
        (tmp_path / item.name).write_bytes(item.read_bytes())
    return tmp_path


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` and the SHA-256 of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _refused(args: list[str], work: Path, words: str = "") -> str:
    """``anonlab args`` is refused in one line naming ``words``, and changes nothing."""
    before = _snapshot(work)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.stderr and PASSWORD not in result.stderr
    assert words in lines[0], lines[0]
    assert _snapshot(work) == before  # nothing written, no input changed
    return str(lines[0])


@pytest.mark.parametrize("case", READ_OPTIONS)
@pytest.mark.parametrize("command", READERS)
def test_database_options_that_cannot_be_read(work: Path, command: str, case: str) -> None:
    options, words = READ_OPTIONS[case]
    _refused(READERS[command](work, f"sqlite:///{work / 'people.db'}", options), work, words)


@pytest.mark.parametrize("case", BAD_URLS)
@pytest.mark.parametrize("command", READERS)
def test_a_bad_input_url(
    work: Path, command: str, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(work)  # the relative SQLite paths
    line = _refused(READERS[command](work, BAD_URLS[case], ["--table", "people"]), work)
    if PASSWORD in BAD_URLS[case]:
        assert "***" in line


@pytest.mark.parametrize("case", BAD_URLS)
@pytest.mark.parametrize("command", WRITERS)
def test_a_bad_output_url(
    work: Path, command: str, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(work)
    args = [
        a for a in WRITERS[command](work, f"sqlite:///{work / 'people.db'}", ["--table", "people"])
    ]
    at = args.index("--output")
    args[at + 1 : at + 2] = [BAD_URLS[case], "--output-table", "release"]
    line = _refused(args, work, "--output")
    if PASSWORD in BAD_URLS[case]:
        assert "***" in line


BAD_TABLES = {  # output table names that cannot be written: (name, words of the error)
    "empty": ("", "--output-table"),
    "blank": ("  ", ""),
    "reserved by SQLite": ("sqlite_release", "nothing was changed"),
    "the input table": ("people", "also an input"),
    "a null character": ("re\x00lease", "nothing was changed"),
}


@pytest.mark.parametrize("case", BAD_TABLES)
@pytest.mark.parametrize("command", WRITERS)
def test_a_bad_output_table(work: Path, command: str, case: str) -> None:
    name, words = BAD_TABLES[case]
    args = WRITERS[command](work, f"sqlite:///{work / 'people.db'}", ["--table", "people"])
    at = args.index("--output")
    args[at + 1 : at + 2] = [f"sqlite:///{work / 'people.db'}", "--output-table", name]
    _refused(args, work, words)
