"""anonlab's warnings name the caller's line, and a release without its key says it can never be
inverted (issue 20).

Every warning goes through :func:`anonlab.userwarn.warn_user`, whose stack
level is that of the first frame outside the anonlab package, whatever path
the run took (a run function, ``anonlab.run``, an engine, a library function).
"""

from __future__ import annotations

import inspect
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

import anonlab
from anonlab.cli.app import app
from anonlab.errors import AnonlabWarning, ReleaseRiskWarning
from anonlab.perturbation import IrreversibleReleaseWarning, RecoverableReleaseWarning
from anonlab.perturbation.key import NO_KEY_MESSAGE
from anonlab.runs.microaggregate import MicroaggregateSettings, run_microaggregate
from anonlab.runs.perturb import PerturbSettings, run_perturb
from anonlab.userwarn import caller_stacklevel, inside_anonlab

runner = CliRunner()


@pytest.fixture
def tarragona(data_dir: Path) -> Path:
    return data_dir / "sdc" / "Tarragona.csv"


def _caught(call: Callable[[], Any], category: type[Warning]) -> list[Any]:
    """The warnings of ``category`` that ``call()`` issued."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        call()
    return [w for w in seen if issubclass(w.category, category)]


def _next_line() -> int:
    """The line after the caller's: where the call under test is written."""
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return frame.f_back.f_lineno + 1


def _at_this_line(found: list[Any], line: int) -> None:
    assert found, "no warning was issued"
    for item in found:
        assert (Path(item.filename), item.lineno) == (Path(__file__), line), item


def test_a_release_risk_warning_names_the_callers_line(tarragona: Path, tmp_path: Path) -> None:
    settings = MicroaggregateSettings(input=str(tarragona), k=3, report=str(tmp_path / "r.json"))
    line = _next_line()
    found = _caught(lambda: run_microaggregate(settings), ReleaseRiskWarning)
    _at_this_line(found, line)


def test_through_anonlab_run_as_well(tarragona: Path, tmp_path: Path) -> None:
    settings = MicroaggregateSettings(input=str(tarragona), k=3, report=str(tmp_path / "r.json"))
    line = _next_line()
    found = _caught(lambda: anonlab.run(settings), ReleaseRiskWarning)
    _at_this_line(found, line)


def test_a_library_function_warns_at_its_caller(tarragona: Path) -> None:
    frame = pd.read_csv(tarragona)
    warning = RecoverableReleaseWarning
    line = _next_line()
    found = _caught(lambda: anonlab.perturb(frame, method="obt", seed=1, known=[5]), warning)
    _at_this_line(found, line)


@pytest.mark.parametrize("folder", [False, True], ids=["memory", "engine"])
def test_a_release_without_key_warns_at_the_callers_line(
    tarragona: Path, tmp_path: Path, folder: bool
) -> None:
    output = str(tmp_path / ("rel/" if folder else "rel.csv"))
    settings = PerturbSettings(
        input=str(tarragona), seed=3, known=[2], output=output, report=str(tmp_path / "r.json")
    )
    line = _next_line()
    found = _caught(lambda: run_perturb(settings), IrreversibleReleaseWarning)
    _at_this_line(found, line)
    assert [str(w.message) for w in found] == [NO_KEY_MESSAGE]
    assert not issubclass(IrreversibleReleaseWarning, ReleaseRiskWarning)  # not a risk
    assert json.loads((tmp_path / "r.json").read_text())["key_warning"] == NO_KEY_MESSAGE


@pytest.mark.parametrize(
    ("files", "warned"),
    [
        ({"output": "rel.csv", "key": "key.json"}, False),  # the key is written
        ({"report": "r.json"}, False),  # no release leaves the run
        ({}, True),  # the returned release has no key
    ],
)
def test_which_runs_warn_about_the_key(
    tarragona: Path, tmp_path: Path, files: dict[str, str], warned: bool
) -> None:
    settings = PerturbSettings.model_validate(
        {
            "input": str(tarragona),
            "seed": 3,
            "known": [2],
            **{name: str(tmp_path / path) for name, path in files.items()},
        }
    )
    found = _caught(lambda: run_perturb(settings), IrreversibleReleaseWarning)
    assert len(found) == int(warned)


def test_the_command_line_prints_one_warning_line(tarragona: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    result = runner.invoke(
        app,
        [
            "perturb",
            str(tarragona),
            "--seed",
            "3",
            "--known",
            "2",
            "--max-risk",
            "1",
            "--output",
            str(tmp_path / "rel.csv"),
            "--report",
            str(report),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = [x for x in result.output.splitlines() if "inverted" in x]
    assert lines == [
        "Warning: --key is not given: this release can never be inverted, not "
        "even by its custodian: only a key file holds the means, deviations and "
        "transform that undo it"
    ]
    assert json.loads(report.read_text())["key_warning"] == NO_KEY_MESSAGE
    with_key = runner.invoke(
        app,
        [
            "perturb",
            str(tarragona),
            "--seed",
            "3",
            "--known",
            "2",
            "--output",
            str(tmp_path / "rel2.csv"),
            "--key",
            str(tmp_path / "key.json"),
            "--quiet",
        ],
    )
    assert with_key.exit_code == 0 and "inverted" not in with_key.output


def test_the_stack_level_counts_anonlab_frames_only() -> None:
    frame = inspect.currentframe()
    assert frame is not None and caller_stacklevel(frame) == 1
    assert inside_anonlab(anonlab.__file__) and not inside_anonlab(__file__)
    assert issubclass(ReleaseRiskWarning, AnonlabWarning)
