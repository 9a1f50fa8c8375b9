"""A run's outputs: checked first, written together at the end, or not at all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from anonlab.errors import AnonlabError
from anonlab.outputs import Outputs
from anonlab.tempfiles import remove_stale_temps, temp_path_for


def _text(value: str):  # type: ignore[no-untyped-def]
    return lambda tmp: tmp.write_text(value, encoding="utf-8")


def test_nothing_appears_before_commit(tmp_path: Path) -> None:
    out, rep = tmp_path / "o.csv", tmp_path / "sub" / "r.json"
    with Outputs({"output": out, "report": rep, "html": None}) as outputs:
        outputs.stage("output", _text("a"))
        outputs.stage("report", _text("b"))
        outputs.stage("html", _text("never"))  # not asked for: ignored
        assert not out.exists() and not rep.exists()
        written = outputs.commit()
    assert written == [out, rep]
    assert out.read_text() == "a" and rep.read_text() == "b"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_an_error_leaves_no_file(tmp_path: Path) -> None:
    out, rep = tmp_path / "o.csv", tmp_path / "r.json"

    def broken(tmp: Path) -> None:
        tmp.write_text("half", encoding="utf-8")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError), Outputs({"output": out, "report": rep}) as outputs:
        outputs.stage("output", _text("a"))
        outputs.stage("report", broken)
        outputs.commit()
    assert list(tmp_path.iterdir()) == []


def test_paths_are_checked_before_any_work(tmp_path: Path) -> None:
    data = tmp_path / "in.csv"
    data.write_text("x\n1\n", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    (tmp_path / "afile").write_text("", encoding="utf-8")
    cases = [
        ({"output": data}, "is also an input"),
        ({"output": tmp_path / "folder"}, "is a folder"),
        ({"report": tmp_path / "afile" / "r.json"}, "is a file, not a folder"),
        ({"output": tmp_path / "same", "report": tmp_path / "same"}, "given as both"),
    ]
    for targets, words in cases:
        with pytest.raises(AnonlabError, match=words) as info:
            Outputs(targets, inputs=[data])
        assert info.value.parameter in targets


def test_private_outputs_are_owner_only(tmp_path: Path) -> None:
    key = tmp_path / "key.json"
    with Outputs({"key": key}) as outputs:
        outputs.stage("key", _text("{}"), private=True)
        outputs.commit()
    assert key.stat().st_mode & 0o777 == 0o600


def test_temp_files_of_dead_runs_are_removed(tmp_path: Path) -> None:
    target = tmp_path / "o.csv"
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_pid = int(done.stdout)
    alive = temp_path_for(target)
    alive.write_text("this run's", encoding="utf-8")
    old_style = tmp_path / ".o.csv.abcd1234.tmp"  # not ours for sure: kept
    old_style.write_text("earlier version", encoding="utf-8")
    os.utime(old_style, (0, 0))
    host = alive.name.split(".anonlab-")[1].rsplit("-", 2)[0]
    other = "other-host" if host != "other-host" else "another-host"
    elsewhere = tmp_path / f".o.csv.anonlab-{other}-{dead_pid}-0a0b0c0d.tmp"
    elsewhere.write_text("a run on another host sharing the folder", encoding="utf-8")
    dead = tmp_path / f".o.csv.anonlab-{host}-{dead_pid}-0a0b0c0d.tmp"
    dead.write_text("left by kill -9", encoding="utf-8")
    removed = remove_stale_temps(tmp_path)
    assert removed == [dead]
    assert alive.exists() and old_style.exists() and elsewhere.exists()
    Outputs({"output": target})  # a new run in the folder cleans up too
    assert alive.exists()


def test_folders_made_for_a_failed_run_are_removed(tmp_path: Path) -> None:
    out = tmp_path / "new" / "deep" / "o.csv"
    with pytest.raises(RuntimeError), Outputs({"output": out}) as outputs:
        outputs.stage("output", _text("a"))
        raise RuntimeError("a later step failed")
    assert list(tmp_path.iterdir()) == []
    with Outputs({"output": out}) as outputs:
        outputs.stage("output", _text("a"))
        outputs.commit()
    assert out.read_text() == "a"
