"""``anonlab.run(settings)``: one entry point that runs any family's settings."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import anonlab
from anonlab.errors import AnonlabError, ReleaseRiskWarning
from anonlab.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_run_dispatches_to_the_family(tmp_path: Path) -> None:
    settings = anonlab.MicroaggregateSettings.load(
        EXAMPLES / "tarragona.toml", output=str(tmp_path / "m.csv"), report=str(tmp_path / "m.json")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        via_run = anonlab.run(settings)
        direct = anonlab.run_microaggregate(
            settings.model_copy(update={"output": str(tmp_path / "d.csv"), "report": None})
        )
    assert via_run.written == [tmp_path / "m.csv", tmp_path / "m.json"]
    assert (tmp_path / "m.csv").read_bytes() == (tmp_path / "d.csv").read_bytes()
    assert via_run.report["k"] == direct.report["k"] == 3


def test_settings_of_no_family_are_refused() -> None:
    class Lonely(Settings):
        input: str

    with pytest.raises(AnonlabError, match="name no run") as info:
        anonlab.run(Lonely(input="t.csv"))
    assert info.value.parameter == "settings"
