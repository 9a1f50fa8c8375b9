"""The one reader and the one writer: every source and every output format.

The same small table (leading zeros, empty values, unicode, a quoted comma,
a quote, integral and fractional numbers) is stored as CSV (comma and
semicolon), Parquet (a file and a folder of parts), Excel (with numbers as
number cells), SQLite (a table with INTEGER/REAL columns and NULLs, and a
query) and a DataFrame; read as text, all give the same frame.
"""

from __future__ import annotations

import csv
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from openpyxl import Workbook, load_workbook  # type: ignore[import-untyped]
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.database import DatabaseTarget
from anonlab.errors import AnonlabError
from anonlab.io import read_table, write_table
from anonlab.outputs import Outputs

COLUMNS = ["zip", "city", "age", "score"]
# typed values (None = missing) and the text every source must read
TYPED: list[list[Any]] = [
    ["01234", "Zoë", 39, 1.5],
    ["00501", "Köln, Nord", None, 2.0],
    ["99950", 'say "hi"', 41, None],
    ["", "", 7, 0.25],
]
TEXT = [
    ["01234", "Zoë", "39", "1.5"],
    ["00501", "Köln, Nord", "", "2"],
    ["99950", 'say "hi"', "41", ""],
    ["", "", "7", "0.25"],
]
REPO = Path(__file__).resolve().parents[1]
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


def _expected() -> pd.DataFrame:
    return pd.DataFrame(TEXT, columns=COLUMNS)


def _csv(path: Path, delimiter: str) -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter=delimiter, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows(TEXT)
    return path


def _typed_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "zip": pd.array([r[0] for r in TYPED], dtype=object),
            "city": [r[1] for r in TYPED],
            "age": pd.array([r[2] for r in TYPED], dtype="Int64"),
            "score": [float("nan") if r[3] is None else r[3] for r in TYPED],
        }
    )


def _arrow() -> pa.Table:
    return pa.table(
        {
            "zip": pa.array([r[0] for r in TYPED], pa.string()),
            "city": pa.array([r[1] for r in TYPED], pa.string()),
            "age": pa.array([r[2] for r in TYPED], pa.int64()),
            "score": pa.array([r[3] for r in TYPED], pa.float64()),
        }
    )


def _parquet_folder(folder: Path) -> Path:
    """One part per record, numbered so that only a natural sort orders them (0, 2, 10)."""
    folder.mkdir()
    table = _arrow()
    for row, number in enumerate([0, 2, 10, 11]):
        pq.write_table(table.slice(row, 1), folder / f"part-{number}.parquet")
    (folder / "_SUCCESS").write_text("", encoding="utf-8")
    return folder


def _excel(path: Path, sheet: str | None = None) -> Path:
    """The table as a workbook: numbers as number cells, missing values as empty cells."""
    book = Workbook()
    first = book.active
    if sheet is None:
        data = first
    else:
        first.title = "notes"
        first.append(["this sheet is not the table"])
        data = book.create_sheet(sheet)
    data.append(COLUMNS)
    for row in TYPED:
        data.append(row)
    book.save(path)
    return path


def _sqlite(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE people (zip TEXT, city TEXT, age INTEGER, score REAL)")
        conn.executemany("INSERT INTO people VALUES (?, ?, ?, ?)", TYPED)
    return f"sqlite:///{path}"


def test_every_source_reads_the_same_text(tmp_path: Path) -> None:
    url = _sqlite(tmp_path / "t.db")
    sources: dict[str, pd.DataFrame] = {
        "csv comma": read_table(_csv(tmp_path / "c.csv", ",")),
        "csv semicolon": read_table(_csv(tmp_path / "s.csv", ";")),
        "csv tab": read_table(_csv(tmp_path / "t.tsv", "\t")),
        "parquet file": read_table(_write_parquet(tmp_path / "t.parquet")),
        "parquet folder": read_table(_parquet_folder(tmp_path / "parts")),
        "excel": read_table(_excel(tmp_path / "t.xlsx")),
        "excel sheet": read_table(_excel(tmp_path / "s.xlsx", "data"), sheet="data"),
        "sqlite table": read_table(url, table="people"),
        "sqlite query": read_table(
            url, query="SELECT zip, city, age, score FROM people ORDER BY rowid"
        ),
        "dataframe": read_table(_typed_frame()),
    }
    expected = _expected()
    for name, frame in sources.items():
        assert list(frame.columns) == COLUMNS, name
        assert frame.values.tolist() == TEXT, name
        pd.testing.assert_frame_equal(frame, expected, obj=name)


def _write_parquet(path: Path) -> Path:
    pq.write_table(_arrow(), path)
    return path


def test_a_dataframe_is_copied_and_keeps_its_types_without_dtype() -> None:
    frame = _typed_frame()
    copy = read_table(frame, dtype=None)
    assert copy is not frame and copy["age"].dtype == "Int64"
    copy.loc[0, "zip"] = "changed"
    assert frame.loc[0, "zip"] == "01234"


def test_hive_partition_keys_keep_their_spelling(tmp_path: Path) -> None:
    folder = tmp_path / "hive"
    for key, rows in {"01234": [["a", "1"]], "5": [["b", "2"], ["c", "3"]]}.items():
        (folder / f"zip={key}").mkdir(parents=True)
        pq.write_table(
            pa.table({"name": [r[0] for r in rows], "n": [r[1] for r in rows]}),
            folder / f"zip={key}" / "part-0.parquet",
        )
    frame = read_table(folder)
    assert list(frame.columns) == ["name", "n", "zip"]
    assert sorted(frame.values.tolist()) == [["a", "1", "01234"], ["b", "2", "5"], ["c", "3", "5"]]
    assert read_table(folder, dtype=None)["zip"].tolist().count(1234) == 1  # inferred


@pytest.mark.parametrize("name", ["r.csv", "r.txt", "r.tsv", "r.parquet", "r.pq", "r.xlsx"])
def test_every_output_format_round_trips(tmp_path: Path, name: str) -> None:
    for frame in (_expected(), _typed_frame()):
        write_table(frame, tmp_path / name)
        back = read_table(tmp_path / name)
        pd.testing.assert_frame_equal(back, _expected())


def test_output_formats_are_the_real_formats(tmp_path: Path) -> None:
    frame = _expected()
    write_table(frame, tmp_path / "r.xlsx", sheet="release")
    book = load_workbook(tmp_path / "r.xlsx")
    assert book.sheetnames == ["release"]
    assert book["release"]["A2"].value == "01234"  # text cells keep the zeros
    write_table(frame, tmp_path / "r.parquet")
    assert pq.read_table(tmp_path / "r.parquet").column("zip").to_pylist()[0] == "01234"
    write_table(frame, tmp_path / "r.tsv")
    assert (tmp_path / "r.tsv").read_text(encoding="utf-8").splitlines()[
        0
    ] == "zip\tcity\tage\tscore"


def test_excel_never_writes_a_formula(tmp_path: Path) -> None:
    write_table(pd.DataFrame({"x": ["=1+1", '=HYPERLINK("http://x")']}), tmp_path / "f.xlsx")
    cells = load_workbook(tmp_path / "f.xlsx")["Sheet1"]
    assert [cells["A2"].data_type, cells["A3"].data_type] == ["s", "s"]
    assert read_table(tmp_path / "f.xlsx")["x"].tolist() == ["=1+1", '=HYPERLINK("http://x")']


def test_sqlite_table_round_trip_replaces_the_table(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'out.db'}"
    write_table(_typed_frame(), url, table="release")
    pd.testing.assert_frame_equal(read_table(url, table="release"), _expected())
    write_table(_expected().head(2), url, table="release")  # replaced, not appended
    assert read_table(url, table="release").values.tolist() == TEXT[:2]
    odd = _expected().rename(columns={"zip": "zip code", "age": "select"})
    write_table(odd, url, table="my release")  # names that SQL must quote
    pd.testing.assert_frame_equal(read_table(url, table="my release"), odd)
    with sqlite3.connect(tmp_path / "out.db") as conn:
        types = [row[2] for row in conn.execute("PRAGMA table_info(release)")]
    assert types == ["TEXT", "TEXT", "TEXT", "TEXT"]
    write_table(_arrow(), DatabaseTarget(url, "typed"))
    with sqlite3.connect(tmp_path / "out.db") as conn:
        types = [row[2] for row in conn.execute("PRAGMA table_info(typed)")]
        assert conn.execute("SELECT age FROM typed").fetchall() == [(39,), (None,), (41,), (7,)]
    assert types == ["TEXT", "TEXT", "BIGINT", "FLOAT"]


def test_database_output_is_written_at_commit_in_one_transaction(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'out.db'}"
    target = DatabaseTarget(url, "release")
    report = tmp_path / "r.json"
    with Outputs({"output": target, "report": report}) as outputs:
        outputs.stage("output", lambda tmp: write_table(_expected(), tmp, format_of=target))
        staged = outputs.staged("output")
        assert staged is not None
        pd.testing.assert_frame_equal(read_table(staged), _expected())  # verifiable
        outputs.stage("report", lambda tmp: tmp.write_text("{}", encoding="utf-8"))
        assert not (tmp_path / "out.db").exists()
        assert outputs.commit() == [report]
    assert not staged.exists()
    pd.testing.assert_frame_equal(read_table(url, table="release"), _expected())


def test_a_failing_run_leaves_the_database_as_it_was(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'out.db'}"
    write_table(_expected().head(1), url, table="release")
    target = DatabaseTarget(url, "release")

    def broken(tmp: Path) -> None:
        raise OSError(28, "No space left on device")

    with (
        pytest.raises(AnonlabError, match="no space left on device"),
        Outputs({"output": target, "report": tmp_path / "r.json"}) as outputs,
    ):
        outputs.stage("output", lambda tmp: write_table(_expected(), tmp, format_of=target))
        outputs.stage("report", broken)
        outputs.commit()
    assert read_table(url, table="release").values.tolist() == TEXT[:1]
    assert not (tmp_path / "r.json").exists()


def test_database_outputs_are_checked_up_front(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'out.db'}"
    (tmp_path / "folder.db").mkdir()
    cases: list[tuple[dict[str, Any], list[Any], str]] = [
        ({"output": url}, [], "is a database URL: name the table"),
        ({"output": DatabaseTarget("nosuch://x/y", "t")}, [], "has no dialect 'nosuch'"),
        (
            {"output": DatabaseTarget("mysql+mysqldb://u:pw@h/db", "t")},
            [],
            "driver 'MySQLdb' is not installed",
        ),
        ({"output": DatabaseTarget(f"sqlite:///{tmp_path / 'folder.db'}", "t")}, [], "is a folder"),
        ({"output": DatabaseTarget(url, " ")}, [], "table name is empty"),
        (
            {"output": DatabaseTarget(url, "t"), "copy": DatabaseTarget(url, "t")},
            [],
            "given as both",
        ),
        ({"output": DatabaseTarget(url, "t")}, [DatabaseTarget(url, "t")], "is also an input"),
    ]
    for targets, inputs, words in cases:
        with pytest.raises(AnonlabError, match=words) as info:
            Outputs(targets, inputs=inputs)
        assert "\n" not in str(info.value) and "pw@" not in str(info.value)
    assert not (tmp_path / "out.db").exists()


def _one_line_error(call: Any, words: str) -> None:
    with pytest.raises(AnonlabError, match=words) as info:
        call()
    assert "\n" not in str(info.value)


def test_bad_sources_are_one_line_errors(tmp_path: Path) -> None:
    url = _sqlite(tmp_path / "t.db")
    xlsx = _excel(tmp_path / "t.xlsx")
    fake = tmp_path / "fake.xlsx"
    fake.write_text("a,b\n1,2\n", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no parquet here", encoding="utf-8")
    csv_file = _csv(tmp_path / "c.csv", ",")
    missing = tmp_path / "missing.db"
    cases = [
        (lambda: read_table(url), "table \\(or query\\) is needed"),
        (lambda: read_table(url, table="people", query="SELECT 1"), "both given"),
        (lambda: read_table(url, table="nobody"), "table 'nobody' does not exist .* it has people"),
        (lambda: read_table(url, query="SELECT * FROM nobody"), "no such table: nobody"),
        (lambda: read_table(url, query="SELECT * FROM people WHERE 0"), "has no rows"),
        (lambda: read_table(f"sqlite:///{missing}", table="t"), "does not exist"),
        (lambda: read_table(xlsx, sheet="nope"), "sheet 'nope' is not in .* it has Sheet"),
        (lambda: read_table(tmp_path / "empty"), "holds no Parquet files"),
        (lambda: read_table(fake), "is not an Excel workbook"),
        (lambda: read_table(csv_file, sheet="data"), "is not an Excel workbook: leave sheet"),
        (lambda: read_table(csv_file, table="people"), "is not a database URL"),
        (lambda: read_table(tmp_path / "old.xls"), "does not exist"),
        (lambda: write_table(_expected(), url), "table is needed"),
        (lambda: write_table(_expected(), tmp_path / "o.csv", table="t"), "is not a database URL"),
        (
            lambda: write_table(_expected(), tmp_path / "o.xlsx", sheet="a/b"),
            "not allowed by Excel",
        ),
        (lambda: write_table(_expected(), tmp_path / "o.xls"), "cannot be written"),
    ]
    for call, words in cases:
        _one_line_error(call, words)
    assert not missing.exists()  # reading never creates a database
    (tmp_path / "old.xls").write_bytes(b"\xd0\xcf\x11\xe0")
    _one_line_error(lambda: read_table(tmp_path / "old.xls"), "save it as .xlsx")


@pytest.fixture(scope="module")
def adult_sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The Adult example as CSV, as a SQLite table and as an .xlsx workbook, with the
    flags that read each; the database and the workbook hold numbers as numbers."""
    folder = tmp_path_factory.mktemp("adult")
    source = REPO / "data" / "adult" / "adult.csv"
    typed = pd.read_csv(source, sep=";")  # ages become integers
    assert typed["age"].dtype.kind == "i"
    db = folder / "adult.db"
    with sqlite3.connect(db) as conn:
        typed.to_sql("adult", conn, index=False)
    book = Workbook(write_only=True)
    sheet = book.create_sheet("adult")
    sheet.append(list(typed.columns))
    for row in typed.itertuples(index=False):
        sheet.append([v.item() if hasattr(v, "item") else v for v in row])
    book.save(folder / "adult.xlsx")
    return {
        "csv": [str(source), "--delimiter", ";"],
        "sqlite": [f"sqlite:///{db}", "--table", "adult"],
        "excel": [str(folder / "adult.xlsx"), "--sheet", "adult"],
    }


@pytest.mark.slow
def test_adult_reads_the_same_from_csv_sqlite_and_excel(
    adult_sources: dict[str, list[str]],
) -> None:
    csv_args, db_args, xlsx_args = (adult_sources[k] for k in ("csv", "sqlite", "excel"))
    frame = read_table(csv_args[0], delimiter=";")
    pd.testing.assert_frame_equal(read_table(db_args[0], table="adult"), frame)
    pd.testing.assert_frame_equal(read_table(xlsx_args[0], sheet="adult"), frame)


@pytest.mark.slow
def test_adult_release_is_byte_identical_from_csv_sqlite_and_excel(
    adult_sources: dict[str, list[str]], tmp_path: Path
) -> None:
    qi_flags: list[str] = []
    for q in QIS:
        qi_flags += ["--qi", f"{q}={REPO / 'data' / 'adult' / f'hierarchy_{q}.csv'}"]
    releases = {}
    for name, source in adult_sources.items():
        out = tmp_path / f"{name}.csv"
        result = CliRunner().invoke(
            app,
            [
                "generalize",
                *source,
                *qi_flags,
                "--sensitive",
                "salary-class",
                "--k",
                "5",
                "--suppression",
                "0.01",
                "--metric",
                "precision_with_suppression",
                "--output",
                str(out),
                "--quiet",
            ],
        )
        assert result.exit_code == 0, result.output
        releases[name] = out.read_bytes()
    assert releases["sqlite"] == releases["csv"]
    assert releases["excel"] == releases["csv"]


def test_output_settings_become_targets(tmp_path: Path) -> None:
    from anonlab.outputs import output_target

    url = f"sqlite:///{tmp_path / 'o.db'}"
    assert output_target(url, "release") == DatabaseTarget(url, "release")
    assert output_target(tmp_path / "r.csv", None) == tmp_path / "r.csv"
    assert output_target(None, None) is None
    with pytest.raises(AnonlabError, match="output_table is needed") as info:
        output_target(url, None)
    assert info.value.parameter == "output_table"
    with pytest.raises(AnonlabError, match="is not a database URL"):
        output_target(tmp_path / "r.csv", "release")
