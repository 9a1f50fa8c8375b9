"""The rules every family's settings share: TOML, paths, overrides, one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import Field

from anonlab.errors import AnonlabError
from anonlab.settings import Settings, read_toml


class Demo(Settings):
    path_fields: ClassVar[tuple[str, ...]] = ("input", "output", "report", "tables")

    input: str
    output: str | None = None
    report: str | None = None
    tables: dict[str, str] = Field(default_factory=dict)
    k: int = 2
    block_size: int = 10


def _write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "run.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_paths_resolve_against_the_config_folder(tmp_path: Path) -> None:
    config = _write(
        tmp_path / "conf", 'input = "data/t.csv"\nreport = "/abs/r.json"\n[tables]\na = "h.csv"\n'
    )
    s = Demo.load(config)
    assert s.input == str(tmp_path / "conf" / "data" / "t.csv")
    assert s.report == "/abs/r.json"
    assert s.tables == {"a": str(tmp_path / "conf" / "h.csv")}


def test_urls_are_not_paths(tmp_path: Path) -> None:
    config = _write(tmp_path, 'input = "sqlite:///t.db"\n')
    assert Demo.load(config).input == "sqlite:///t.db"


def test_overrides_win_and_none_keeps_the_file(tmp_path: Path) -> None:
    config = _write(tmp_path, 'input = "t.csv"\nk = 5\nblock-size = 7\n')
    s = Demo.load(config, k=None, block_size=9)
    assert (s.k, s.block_size) == (5, 9)


def test_error_names_the_parameter_and_the_cli_shows_the_flag(tmp_path: Path) -> None:
    config = _write(tmp_path, 'input = "t.csv"\nblock_size = "many"\n')
    with pytest.raises(AnonlabError) as info:
        Demo.load(config)
    assert str(info.value).startswith("block_size")
    assert info.value.for_flags().startswith("--block-size")
    assert info.value.for_flags({"block_size": "-b"}).startswith("-b")


def test_unknown_and_missing_settings(tmp_path: Path) -> None:
    with pytest.raises(AnonlabError, match="nope is not a known setting"):
        Demo.load(_write(tmp_path / "a", 'input = "t"\nnope = 1\n'))
    with pytest.raises(AnonlabError, match="input is missing"):
        Demo.load(_write(tmp_path / "b", "k = 3\n"))


@pytest.mark.parametrize("kind", ["folder", "latin1", "bad", "missing"])
def test_bad_config_files_are_one_line(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "c.toml"
    if kind == "folder":
        path.mkdir()
    elif kind == "latin1":
        path.write_bytes('input = "caf\u00e9"\n'.encode("latin-1"))
    elif kind == "bad":
        path.write_text("input = \n", encoding="utf-8")
    with pytest.raises(AnonlabError) as info:
        read_toml(path)
    assert "\n" not in str(info.value)
    assert {"folder": "folder", "latin1": "UTF-8", "bad": "TOML", "missing": "does not exist"}[
        kind
    ] in str(info.value)


def test_new_input_with_the_config_outputs_is_refused(tmp_path: Path) -> None:
    config = _write(tmp_path, 'input = "t.csv"\noutput = "o.csv"\nreport = "r.json"\n')
    with pytest.raises(AnonlabError, match="give output, report for the new input"):
        Demo.load(config, input=str(tmp_path / "other.csv"))
    s = Demo.load(config, input=str(tmp_path / "other.csv"), output="x.csv", report="x.json")
    assert s.output == "x.csv"
    assert Demo.load(config, input=str(tmp_path / "t.csv")).output == str(tmp_path / "o.csv")


def test_building_settings_directly_gives_the_same_one_line_error() -> None:
    values: dict[str, object] = {"input": "t.csv", "k": "many"}
    with pytest.raises(AnonlabError, match=r"^k: ") as info:
        Demo(**values)  # type: ignore[arg-type]
    assert info.value.parameter == "k"


def test_another_table_of_the_config_database_counts_as_a_new_input(tmp_path: Path) -> None:
    class FromDatabase(Demo):
        table: str | None = None

    config = _write(tmp_path, 'input = "sqlite:///d.db"\ntable = "t"\noutput = "o.csv"\n')
    with pytest.raises(AnonlabError, match="table differs from the config file's"):
        FromDatabase.load(config, table="other")
    assert FromDatabase.load(config, table="t").output == str(tmp_path / "o.csv")
