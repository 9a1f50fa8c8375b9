"""The I/O spine: strict JSON reports, tables whose header names each column once."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from anonlab.io import read_json, to_json_text, write_json


def test_non_finite_numbers_become_null() -> None:
    text = to_json_text(
        {
            "ILR": float("inf"),
            "x": [np.float64("nan"), np.float32(1.5)],
            "grid": np.array([[1.0, np.inf]]),
            "n": np.int64(3),
        }
    )

    def refuse(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token}")

    data = json.loads(text, parse_constant=refuse)
    assert data == {"ILR": None, "x": [None, 1.5], "grid": [[1.0, None]], "n": 3}


def test_report_round_trip(tmp_path: Path) -> None:
    report = {"measures": {"IL": 0.25, "ID_by_p": {"1": 0.5}}, "k": np.int32(3)}
    write_json(report, tmp_path / "r.json")
    assert read_json(tmp_path / "r.json") == {
        "measures": {"IL": 0.25, "ID_by_p": {"1": 0.5}},
        "k": 3,
    }


def test_repeated_header_name_is_refused(tmp_path: Path) -> None:
    import pytest

    from anonlab.errors import AnonlabError
    from anonlab.io import read_table

    path = tmp_path / "t.csv"
    path.write_text("city,city,x\nBonn,Bonn,1\n", encoding="utf-8")
    with pytest.raises(AnonlabError, match="names the column 'city' twice"):
        read_table(path)
    path.write_text('"a;b",a,x\n1,2,3\n', encoding="utf-8")  # quoted names are whole names
    assert list(read_table(path, delimiter=",").columns) == ["a;b", "a", "x"]


def test_outputs_may_not_be_inputs_or_each_other(tmp_path: Path) -> None:
    import pytest

    from anonlab.errors import AnonlabError
    from anonlab.outputs import Outputs

    data = tmp_path / "in.csv"
    Outputs({"output": tmp_path / "a.csv", "report": None, "html": tmp_path / "b.html"}, [data])
    with pytest.raises(AnonlabError, match="is also an input"):
        Outputs({"output": data}, [data])
    with pytest.raises(AnonlabError, match="given as both output and html: give each output"):
        Outputs({"output": tmp_path / "a", "html": tmp_path / "x" / ".." / "a"}, [data])


def test_fuse_refuses_one_path_for_two_outputs(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from anonlab.cli.app import app

    config = Path(__file__).resolve().parents[1] / "examples" / "fusion" / "fusion.toml"
    out = tmp_path / "same.csv"
    result = CliRunner().invoke(
        app, ["fuse", str(config), "--output", str(out), "--report", str(out), "--quiet"]
    )
    assert result.exit_code == 2
    assert (
        "given as both --output and --report" in result.output
        or f"--report '{out}' is given as both output and report" in result.output
    )
    assert not out.exists()


# --- the one reader: CSV ----------------------------------------------------------------


def test_csv_values_keep_their_spelling(tmp_path: Path) -> None:
    """Read as text, '01234' keeps its zero and '1.50' its trailing zero (no number inference)."""
    from anonlab.io import read_table

    path = tmp_path / "z.csv"
    path.write_text("zip,x,flag\n01234,1.50,NA\n00001,2,\n", encoding="utf-8")
    assert read_table(path).values.tolist() == [["01234", "1.50", "NA"], ["00001", "2", ""]]


def test_delimiters_are_sniffed(tmp_path: Path) -> None:
    from anonlab.io import read_table, sniff_delimiter

    cases = {
        ",": "a,b\n1,2\n",
        ";": 'a;b\n"x,y";2\n"p,q";3\n',
        "\t": "a\tb\n1,5\t2\n",
        "|": "a|b\n1|2\n3|4\n",
    }
    for delimiter, text in cases.items():
        path = tmp_path / "t.csv"
        path.write_text(text, encoding="utf-8")
        assert sniff_delimiter(path) == delimiter, text
        assert list(read_table(path).columns) == ["a", "b"]
    path.write_text("single\nvalue\n", encoding="utf-8")
    assert sniff_delimiter(path) == ","


def test_a_five_megabyte_field_reads(tmp_path: Path) -> None:
    from anonlab.io import read_table

    path = tmp_path / "big.csv"
    field = "x" * (5 << 20)
    path.write_text(f"a,b\n1,2\n{field},3\n4,5\n", encoding="utf-8")
    frame = read_table(path)
    assert frame.shape == (3, 2) and len(str(frame.loc[1, "a"])) == 5 << 20
    assert frame["b"].tolist() == ["2", "3", "5"]


def test_line_breaks_inside_quotes_across_blocks(tmp_path: Path) -> None:
    """A quoted line break beyond pyarrow's first block is a value, not a new record."""
    from anonlab.io import read_table

    rows = [f"{i},plain" for i in range(120_000)]
    rows[100_000] = '100000,"two\nlines"'
    path = tmp_path / "q.csv"
    path.write_text("n,text\n" + "\n".join(rows) + "\n", encoding="utf-8")
    assert path.stat().st_size > 1 << 20
    frame = read_table(path)
    assert frame.shape == (120_000, 2) and frame.loc[100_000, "text"] == "two\nlines"


def test_unreadable_tables_are_one_line_errors(tmp_path: Path) -> None:
    import pytest

    from anonlab.errors import AnonlabError
    from anonlab.io import read_table

    cases = {
        b"a,b\n\xff\xfe,1\n": "is not UTF-8 text",
        b"": "is empty",
        b"a,b\n": "has a header but no rows",
        b"a,b\n1,2,3\n": "ragged or malformed",
    }
    for data, words in cases.items():
        path = tmp_path / "t.csv"
        path.write_bytes(data)
        with pytest.raises(AnonlabError, match=words) as info:
            read_table(path)
        assert "\n" not in str(info.value)


def test_running_out_of_memory_is_one_line(tmp_path: Path, monkeypatch: object) -> None:
    import pyarrow.csv as pacsv
    import pytest

    from anonlab.errors import AnonlabError
    from anonlab.io import read_table

    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n", encoding="utf-8")

    def no_memory(*args: object, **kwargs: object) -> None:
        raise MemoryError("malloc of size 1073741824 failed")

    monkeypatch.setattr(pacsv, "read_csv", no_memory)  # type: ignore[attr-defined]
    with pytest.raises(AnonlabError) as info:
        read_table(path)
    assert str(info.value).startswith(f"not enough memory to read '{path}' (8 bytes): malloc")


def test_a_deeply_nested_json_file_is_one_line(tmp_path: Path) -> None:
    import pytest

    from anonlab.errors import AnonlabError

    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(AnonlabError, match="nested too deeply") as info:
        read_json(path)
    assert "\n" not in str(info.value)
    (tmp_path / "folder.json").mkdir()
    with pytest.raises(AnonlabError, match="is a folder"):
        read_json(tmp_path / "folder.json")


# --- the one writer ---------------------------------------------------------------------


def test_the_csv_dialect(tmp_path: Path) -> None:
    """Comma, quotes only where needed (doubled inside), '\\n', UTF-8 without BOM, header."""
    import pandas as pd

    from anonlab.io import write_table

    frame = pd.DataFrame(
        {
            "name": ["Zoë", "a,b", 'say "hi"', "two\nlines", ""],
            "n": [1, 2, None, 4, 5],
            "x": [1.0, 0.5, 1e20, float("nan"), -0.25],
        }
    )
    write_table(frame, tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_bytes() == (
        'name,n,x\nZoë,1,1\n"a,b",2,0.5\n"say ""hi""",,1e+20\n"two\nlines",4,\n,5,-0.25\n'
    ).encode()
    write_table(pd.DataFrame({"only": ["a", ""]}), tmp_path / "one.csv")
    assert (tmp_path / "one.csv").read_bytes() == b'only\na\n""\n'  # not a blank line
    write_table(frame.head(2), tmp_path / "t.csv", delimiter=";")
    assert (tmp_path / "t.csv").read_text(encoding="utf-8") == "name;n;x\nZoë;1;1\na,b;2;0.5\n"


def test_a_long_csv_is_written_in_order(tmp_path: Path) -> None:
    """More rows than one rendering batch: the threads' parts come out in order."""
    import csv as pycsv

    import numpy as np
    import pandas as pd

    from anonlab.io import write_table
    from anonlab.sinks import CSV_BATCH_ROWS

    n = 3 * CSV_BATCH_ROWS + 7
    frame = pd.DataFrame(
        {"i": np.arange(n), "s": [f"v{i}" if i % 5 else f"a,{i}" for i in range(n)]}
    )
    write_table(frame, tmp_path / "long.csv")
    with (tmp_path / "long.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(pycsv.reader(fh))
    assert rows[0] == ["i", "s"] and len(rows) == n + 1
    assert rows[1:] == [[str(i), f"v{i}" if i % 5 else f"a,{i}"] for i in range(n)]


def test_format_of_chooses_the_format_of_a_staged_file(tmp_path: Path) -> None:
    import pandas as pd

    from anonlab.io import read_table, write_table

    frame = pd.DataFrame({"zip": ["01234", ""], "n": ["1", "2"]})
    tmp = tmp_path / ".r.xlsx.anonlab-1-00000000.tmp"
    write_table(frame, tmp, format_of=tmp_path / "r.xlsx")
    assert tmp.read_bytes()[:2] == b"PK"
    pd.testing.assert_frame_equal(read_table(tmp), frame)  # recognised by its bytes
    write_table(frame, tmp, format_of=tmp_path / "r.parquet")
    assert tmp.read_bytes()[:4] == b"PAR1"
    pd.testing.assert_frame_equal(read_table(tmp), frame)
    tabbed = pd.DataFrame({"a,b": ["x,y", "z"], "c": ["1", "2"]})
    write_table(tabbed, tmp, format_of=tmp_path / "r.tsv")
    assert tmp.read_text(encoding="utf-8") == "a,b\tc\nx,y\t1\nz\t2\n"
    pd.testing.assert_frame_equal(read_table(tmp, format_of=tmp_path / "r.tsv"), tabbed)


def test_a_folder_is_refused_as_any_output(tmp_path: Path) -> None:
    import pandas as pd
    import pytest

    from anonlab.errors import AnonlabError
    from anonlab.io import atomic_write, write_table, write_text
    from anonlab.outputs import Outputs

    folder = tmp_path / "out"
    folder.mkdir()
    calls: list[Callable[[], object]] = [
        lambda: write_table(pd.DataFrame({"a": [1]}), folder),
        lambda: write_json({}, folder),
        lambda: write_text("x", folder),
        lambda: atomic_write(folder, lambda tmp: tmp.write_text("x")),
        lambda: Outputs({"html": folder}),
    ]
    for call in calls:
        with pytest.raises(AnonlabError, match="is a folder: give a file name inside it"):
            call()
    assert list(folder.iterdir()) == []


def test_write_errors_are_one_line_and_leave_nothing(tmp_path: Path, monkeypatch: object) -> None:
    import errno

    import pandas as pd
    import pytest

    from anonlab import sinks
    from anonlab.errors import AnonlabError
    from anonlab.io import write_table

    reasons = {
        errno.ENOSPC: "no space left on device",
        errno.EACCES: "permission denied",
        errno.EROFS: "read-only file system",
    }
    target = tmp_path / "r.csv"
    for code, words in reasons.items():

        def fail(table: object, path: Path, delimiter: str = ",", code: int = code) -> None:
            path.write_bytes(b"half a file")
            raise OSError(code, os.strerror(code))

        monkeypatch.setattr(sinks, "write_csv", fail)  # type: ignore[attr-defined]
        with pytest.raises(AnonlabError) as info:
            write_table(pd.DataFrame({"a": [1]}), target)
        assert (
            str(info.value)
            == f"cannot write '{target}': {words}: " + str(info.value).split(f"{words}: ", 1)[1]
        )
        assert isinstance(info.value, OSError) and info.value.errno == code
        assert list(tmp_path.iterdir()) == []


def test_atomic_writes_remove_temp_files_of_killed_runs(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    from anonlab.tempfiles import temp_path_for

    host = temp_path_for(tmp_path / "r.json").name.split(".anonlab-")[1].rsplit("-", 2)[0]
    stale = tmp_path / f".r.json.anonlab-{host}-{int(done.stdout)}-0a0b0c0d.tmp"
    stale.write_text("left by kill -9", encoding="utf-8")
    write_json({"a": 1}, tmp_path / "r.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def _categorical_frame(n: int, columns: int = 3, seed: int = 0) -> object:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    words = ["*", "a,b", 'say "hi"', "two\nlines", "", "Zoë", "plain"]
    return pd.DataFrame(
        {f"c{j}": pd.Categorical(rng.choice(words[j % 3 :], n)) for j in range(columns)}
    )


def _rendered_row_by_row(frame: object, path: Path) -> bytes:
    """The same table written batch by batch, every row rendered (no distinct rows)."""
    from anonlab.sinks import CSV_BATCH_ROWS, header_line, to_arrow, write_csv_rows

    table = to_arrow(frame)
    with path.open("wb") as fh:
        fh.write(header_line(table.column_names, ","))
        for start in range(0, table.num_rows, CSV_BATCH_ROWS):  # each part one batch long
            write_csv_rows(table.slice(start, CSV_BATCH_ROWS), fh, ",")
    return path.read_bytes()


@pytest.mark.parametrize("columns", [1, 3])
def test_repeated_rows_are_written_as_rendered_one_by_one(tmp_path: Path, columns: int) -> None:
    """A long table of categoricals whose rows repeat has each distinct row rendered once:
    the same bytes as rendering every row (quotes, the delimiter, line breaks, '')."""
    from anonlab.io import write_table
    from anonlab.sinks import CSV_BATCH_ROWS, _distinct_rows, to_arrow

    frame = _categorical_frame(2 * CSV_BATCH_ROWS + 11, columns)
    assert _distinct_rows(to_arrow(frame)) is not None  # the distinct-row path is taken
    write_table(frame, tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_bytes() == _rendered_row_by_row(frame, tmp_path / "r.csv")


def test_distinct_rows_only_where_rows_repeat() -> None:
    import numpy as np
    import pandas as pd

    from anonlab.sinks import CSV_BATCH_ROWS, _distinct_rows, to_arrow

    n = 2 * CSV_BATCH_ROWS
    unique = pd.DataFrame({"i": pd.Categorical(np.arange(n).astype(str))})
    assert _distinct_rows(to_arrow(unique)) is None  # every row distinct
    missing = pd.DataFrame({"s": pd.Categorical(["a", None] * (n // 2))})
    assert _distinct_rows(to_arrow(missing)) is None  # a missing value: rendered as before
    assert _distinct_rows(to_arrow(_categorical_frame(CSV_BATCH_ROWS))) is None  # one batch
