"""Outputs get ordinary file permissions; secrets (keys) are owner-only."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from anonlab.io import write_json, write_text


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_outputs_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_text("x", tmp_path / "a.txt")
        write_json({"a": 1}, tmp_path / "a.json")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "a.txt") == 0o644
    assert _mode(tmp_path / "a.json") == 0o644


def test_private_outputs_are_owner_only(tmp_path: Path) -> None:
    old = os.umask(0o000)
    try:
        write_json({"secret": 1}, tmp_path / "key.json", private=True)
        write_text("secret", tmp_path / "key.pem", private=True)
    finally:
        os.umask(old)
    assert _mode(tmp_path / "key.json") == 0o600
    assert _mode(tmp_path / "key.pem") == 0o600


def test_perturbation_key_is_owner_only(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from anonlab.cli.app import app

    data = Path(__file__).resolve().parents[1] / "data" / "sdc" / "Tarragona.csv"
    old = os.umask(0o022)
    try:
        result = CliRunner().invoke(
            app,
            [
                "perturb",
                str(data),
                "--method",
                "rotation",
                "--seed",
                "3",
                "--quiet",
                "--output",
                str(tmp_path / "rel.csv"),
                "--key",
                str(tmp_path / "key.json"),
            ],
        )
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    assert _mode(tmp_path / "key.json") == 0o600
    assert _mode(tmp_path / "rel.csv") == 0o644


def test_a_staged_database_release_is_owner_only(tmp_path: Path) -> None:
    """A database output waits in the shared temporary folder: readable by its owner only,
    and gone when the run ends without committing."""
    import pandas as pd

    from anonlab.database import DatabaseTarget
    from anonlab.io import write_table
    from anonlab.outputs import Outputs

    target = DatabaseTarget(f"sqlite:///{tmp_path / 'out.db'}", "release")
    old = os.umask(0o022)
    try:
        with Outputs({"output": target}) as outputs:
            outputs.stage(
                "output", lambda tmp: write_table(pd.DataFrame({"a": ["1"]}), tmp, format_of=target)
            )
            staged = outputs.staged("output")
            assert staged is not None and _mode(staged) == 0o600
    finally:
        os.umask(old)
    assert not staged.exists()
    assert not (tmp_path / "out.db").exists()
