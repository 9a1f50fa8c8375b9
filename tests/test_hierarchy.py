"""Hierarchy loading, validation and builders."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from anonlab.errors import AnonlabError
from anonlab.hierarchy import (
    Hierarchy,
    grouping_hierarchy,
    interval_hierarchy,
    redaction_hierarchy,
)


def test_loads_adult(data_dir: Path) -> None:
    h = Hierarchy.from_csv(data_dir / "adult" / "hierarchy_education.csv")
    assert h.height == 3
    assert h.label("Bachelors", 1) == "Undergraduate"
    assert h.label("Bachelors", 3) == "*"


def test_ragged_file_names_line(tmp_path: Path) -> None:
    p = tmp_path / "h.csv"
    p.write_text("a;x;*\nb;x\n")
    with pytest.raises(AnonlabError, match=r"line 2: 2 fields where line 1 has 3"):
        Hierarchy.from_csv(p)


def test_non_nested_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "h.csv"
    p.write_text("a;x;P;*\nb;x;Q;*\n")
    with pytest.raises(
        AnonlabError,
        match=r"not nested: group 'x' at level 1 goes to 'P' "
        r"\(line 1\) and to 'Q' \(line 2\)",
    ):
        Hierarchy.from_csv(p)


def test_duplicate_value_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "h.csv"
    p.write_text("a;*\na;*\n")
    with pytest.raises(AnonlabError, match="value 'a' is listed again"):
        Hierarchy.from_csv(p)


def test_missing_file() -> None:
    with pytest.raises(AnonlabError, match="does not exist"):
        Hierarchy.from_csv("no/such/file.csv")


def test_interval_builder_nests_and_round_trips(tmp_path: Path) -> None:
    h = interval_hierarchy([17, 23, 39, 90], [5, 10, 20])
    assert h.height == 4
    assert h.rows[h.values.index("23")] == ("23", "20-24", "20-29", "20-39", "*")
    out = tmp_path / "age.csv"
    h.write(out)
    assert Hierarchy.from_csv(out).rows == h.rows


def test_interval_widths_must_nest() -> None:
    with pytest.raises(AnonlabError, match="not a multiple"):
        interval_hierarchy([1, 2], [5, 7])


def test_redaction_builder() -> None:
    h = redaction_hierarchy(["47677", "47602", "4760"])
    assert h.rows[h.values.index("47677")] == ("47677", "4767*", "476**", "47***", "4****", "*")
    assert h.label("4760", 1) == "0476*"


def test_grouping_builder() -> None:
    h = grouping_hierarchy(["A", "B", "C", "D", "E"], [2, 4])
    assert h.rows == (
        ("A", "A..B", "A..D", "*"),
        ("B", "A..B", "A..D", "*"),
        ("C", "C..D", "A..D", "*"),
        ("D", "C..D", "A..D", "*"),
        ("E", "E", "E", "*"),
    )


def test_messages_name_file_lines_despite_blank_lines(tmp_path: Path) -> None:
    p = tmp_path / "h.csv"
    p.write_text("\n\na;x;P;*\n\nb;x;Q;*\n")
    with pytest.raises(
        AnonlabError,
        match=r"group 'x' at level 1 goes to 'P' \(line 3\) and "
        r"to 'Q' \(line 5\)",
    ):
        Hierarchy.from_csv(p)
    p.write_text("\na;*\n\na;*\n")
    with pytest.raises(
        AnonlabError,
        match=r"h.csv' line 4: value 'a' is listed again "
        r"\(first on line 2\)",
    ):
        Hierarchy.from_csv(p)
    p.write_text("\na;x;*\nb;x\n")
    with pytest.raises(AnonlabError, match=r"line 3: 2 fields where line 2 has 3"):
        Hierarchy.from_csv(p)


def test_missing_values_in_a_quasi_identifier_are_the_empty_string() -> None:
    """A null (Parquet/DataFrame) reads like an empty CSV field: value '' of the hierarchy."""
    from anonlab.dataset import Dataset

    hier = Hierarchy.from_rows([["a", "*"], ["b", "*"], ["", "*"]])
    frame = pd.DataFrame({"q": ["a", None, "b", float("nan"), ""]})
    ds = Dataset.from_frame(frame, {"q": hier})
    assert ds.qis[0].values[ds.qis[0].codes[1]] == ""
    assert ds.qis[0].values[ds.qis[0].codes[3]] == ""
    assert ds.qis[0].frequencies.tolist() == [1, 3, 1]
    no_empty = Hierarchy.from_rows([["a", "*"], ["b", "*"]])
    with pytest.raises(AnonlabError, match=r"value '' \(data row 2\) is not in hierarchy"):
        Dataset.from_frame(frame, {"q": no_empty})


def test_byte_order_mark_is_not_part_of_the_first_value(tmp_path: Path) -> None:
    """Spreadsheet programs save UTF-8 CSV with a BOM; the first value must still match."""
    path = tmp_path / "h.csv"
    path.write_bytes("Köln;NRW;*\nBonn;NRW;*\n".encode("utf-8-sig"))
    h = Hierarchy.from_csv(path)
    assert h.values == ["Köln", "Bonn"]
    assert "Köln" in h


def test_interval_builder_is_exact_on_decimals() -> None:
    """0.3 lies in [0.3, 0.4), not [0.2, 0.3) as 0.3 / 0.1 = 2.9999... in binary floats."""
    h = interval_hierarchy(["0.3", "1.9", "0.12", "-0.1"], [0.1, 0.3])
    assert h.label("0.3", 1) == "[0.3, 0.4)"
    assert h.label("1.9", 1) == "[1.9, 2)"
    assert h.label("1.9", 2) == "[1.8, 2.1)"
    assert h.label("0.12", 1) == "[0.1, 0.2)"
    assert h.label("-0.1", 1) == "[-0.1, 0)"
    assert h.label("-0.1", 2) == "[-0.3, 0)"


def test_value_with_surrounding_spaces_gets_an_actionable_message() -> None:
    """Hierarchy fields are trimmed, so adding ' a' to the file cannot help: say what can."""
    from anonlab.dataset import Dataset

    hier = Hierarchy.from_rows([["a", "*"], ["b", "*"]])
    frame = pd.DataFrame({"q": ["a", " b"]})
    with pytest.raises(AnonlabError, match=r"value ' b' \(data row 2\) has surrounding spaces"):
        Dataset.from_frame(frame, {"q": hier})


def test_grouping_builder_keeps_a_missing_value_apart() -> None:
    """The empty (missing) value is not part of the order: its own group below '*'."""
    h = grouping_hierarchy(["A", "B", "", "C", "D"], [2])
    assert h.rows == (
        ("", "", "*"),
        ("A", "A..B", "*"),
        ("B", "A..B", "*"),
        ("C", "C..D", "*"),
        ("D", "C..D", "*"),
    )


def test_redaction_builder_keeps_a_missing_value_apart(tmp_path: Path) -> None:
    h = redaction_hierarchy(["123", "", "124"])
    assert h.rows[0] == ("", "", "", "*")
    h.write(tmp_path / "h.csv")
    assert Hierarchy.from_csv(tmp_path / "h.csv").rows == h.rows


def test_a_column_name_twice_in_a_frame_is_refused() -> None:
    """Which copy would be generalized? The other would be released as it is."""
    from anonlab.dataset import Dataset

    frame = pd.DataFrame([["a", "a", "1"], ["a", "b", "2"]], columns=["q", "q", "x"])
    with pytest.raises(AnonlabError, match="column 'q' appears twice in the table: rename one"):
        Dataset.from_frame(frame, {"q": Hierarchy.from_rows([["a", "*"], ["b", "*"]])})


def test_bundled_hierarchies_all_load(data_dir: Path) -> None:
    for path in sorted((data_dir / "adult").glob("hierarchy_*.csv")):
        assert Hierarchy.from_csv(path).height >= 1


def test_a_hierarchy_that_only_relabels_is_refused(tmp_path: Path) -> None:
    """Every level renames the one below one-to-one: generalizing would protect nothing."""
    p = tmp_path / "h.csv"
    p.write_text("\na;x;X\nb;y;Y\nc;z;Z\n")
    with pytest.raises(AnonlabError) as info:
        Hierarchy.from_csv(p)
    message = str(info.value)
    assert f"hierarchy '{p}' only relabels values" in message
    assert "'a' on line 2 and 'b' on line 3 stay apart up to level 2" in message
    assert "give a level where values share a label" in message and "\n" not in message


@pytest.mark.parametrize(
    "rows",
    [
        [["a", "x", "*"], ["b", "y", "*"]],  # level 1 only renames: the top merges
        [["a"], ["b"], ["c"]],  # height 0: the column can only be suppressed
        [["only", "ONLY"]],  # one value: nothing to merge
        [["a", "a", "*"], ["b", "b", "*"]],  # a value kept at level 1 is no cycle
        [["1", "0", "*"], ["2", "1", "*"], ["3", "1", "*"], ["0", "0", "*"]],  # labels reuse values
    ],
)
def test_hierarchies_that_merge_or_cannot_are_accepted(rows: list[list[str]]) -> None:
    assert Hierarchy.from_rows(rows).rows == tuple(tuple(r) for r in rows)


def test_a_two_step_cycle_is_refused(tmp_path: Path) -> None:
    """'a' generalizes to 'b' and 'b' to 'a': the release would swap values."""
    p = tmp_path / "h.csv"
    p.write_text("a;b;*\nb;a;*\n")
    with pytest.raises(
        AnonlabError,
        match=r"has a cycle: 'a' generalizes to 'b' \(line 1\), "
        r"'b' to 'a' \(line 2\)",
    ):
        Hierarchy.from_csv(p)


def test_a_longer_cycle_across_levels_is_refused() -> None:
    rows = [["a", "g1", "g2", "*"], ["g2", "h", "a", "*"], ["z", "g1", "g2", "*"]]
    with pytest.raises(AnonlabError) as info:
        Hierarchy.from_rows(rows)
    message = str(info.value)
    assert "has a cycle: 'a' generalizes to 'g1' (line 1), 'g1' to 'g2' (line 1)" in message
    assert "'g2' to 'h' (line 2), 'h' to 'a' (line 2)" in message


def test_a_large_hierarchy_loads() -> None:
    """40,000 ZIP-like values, 5 levels: the cycle search is iterative (no recursion limit)."""
    rows = [
        [f"{v:05d}", f"{v // 10:04d}*", f"{v // 100:03d}**", f"{v // 1000:02d}***", "*"]
        for v in range(40_000)
    ]
    assert Hierarchy.from_rows(rows).height == 4
