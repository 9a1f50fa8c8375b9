"""The README's local recoding and cell suppression examples give the figures it shows."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from anonlab.cli.app import app

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
runner = CliRunner()


def _run(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output


def test_mondrian_example_gives_the_readme_figures(tmp_path: Path) -> None:
    report = tmp_path / "m.json"
    config = str(REPO / "examples" / "adult_mondrian.toml")
    out = str(tmp_path / "m.csv")
    _run(["generalize", "--config", config, "--output", out, "--report", str(report), "--quiet"])
    found = json.loads(report.read_text())
    mondrian, loss = found["mondrian"], found["loss"]
    assert (mondrian["partitions"], mondrian["classes"]) == (2038, 2033)
    assert (mondrian["smallest_class"], mondrian["largest_class"]) == (10, 54)
    assert found["suppressed"] == 0 and f"GCP) of {loss['gcp']:.4f}" in README


def test_suppression_example_prints_the_readme_line(tmp_path: Path) -> None:
    config = str(REPO / "examples" / "testdata_suppress.toml")
    out, report = str(tmp_path / "s.csv"), str(tmp_path / "s.json")
    text = _run(["suppress", "--config", config, "--output", out, "--report", report])
    line = next(x for x in text.splitlines() if x.startswith("local suppression"))
    shown = next(x for x in README.splitlines() if x.startswith("local suppression"))
    strip = re.compile(r"; [0-9.]+ s$")
    assert strip.sub("", line) == strip.sub("", shown)
