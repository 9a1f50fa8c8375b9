"""No silent overwrite: a run that changes its config's parameters names its own outputs.

A config file's outputs hold the results of the config's own parameters. A run
that overrides one of them (``--k 10``, ``Settings.load(path, k=10)``) and
still writes to those outputs is refused in one line naming them, unless it
names its own outputs or passes ``--overwrite`` (``overwrite=True``). Outputs
themselves and the parameters that change neither the release nor a figure of
its report (``Settings.neutral_fields``) may be overridden freely. Every
report names the outputs it describes (``outputs``), a database table as its
URL without password and its table.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.errors import AnonlabError
from anonlab.runs.generalize import run_generalize
from anonlab.runs.generalize_settings import GeneralizeSettings
from anonlab.runs.microaggregate import (
    EvaluateSettings,
    MicroaggregateSettings,
    TradeoffSettings,
)
from anonlab.runs.perturb import AttackSettings, PerturbSettings
from anonlab.settings import OverwriteError, Settings, changed_parameters

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]

GENERALIZE_TOML = (
    'input = "t.csv"\nidentifying = ["name"]\nk = 2\nsuppression = 0.01\n'
    "max_risk = 0.5\n"
    'output = "out/g.csv"\nreport = "out/g.json"\n'
    '[qi]\nage = "age.csv"\nzip = "zip.csv"\n'
)
MICRO_TOML = (
    'input = "n.csv"\ncolumns = "a,b"\nk = 3\noutput = "out/m.csv"\nreport = "out/m.json"\n'
)

#: each family's model, a config naming outputs, a changed parameter and those outputs
FAMILIES: list[tuple[type[Settings], str, dict[str, Any], tuple[str, ...]]] = [
    (GeneralizeSettings, GENERALIZE_TOML, {"k": 3}, ("output", "report")),
    (MicroaggregateSettings, MICRO_TOML, {"k": 5}, ("output", "report")),
    (
        EvaluateSettings,
        'original = "n.csv"\nmasked = "m.csv"\nreport = "out/e.json"\n',
        {"tau": "0.3,0.7"},
        ("report",),
    ),
    (
        TradeoffSettings,
        'input = "n.csv"\nk = "3-5"\nreport = "out/t.json"\nplot = "out/t.png"\n',
        {"k": "3-6"},
        ("report", "plot"),
    ),
    (
        PerturbSettings,
        'input = "n.csv"\nmethod = "obt"\nseed = 7\noutput = "out/p.csv"\n'
        'key = "out/p_key.json"\nreport = "out/p.json"\n',
        {"seed": 8},
        ("output", "key", "report"),
    ),
    (
        AttackSettings,
        'original = "n.csv"\nreleased = "p.csv"\nreport = "out/a.json"\n',
        {"known": "2,3"},
        ("report",),
    ),
]


@pytest.fixture
def people(tmp_path: Path) -> Path:
    """A small table with an identifier and two QIs, their hierarchies and a config."""
    (tmp_path / "t.csv").write_text(
        "name,age,zip\nann,31,47677\nbob,32,47602\ncy,33,47678\ndee,34,47605\n"
    )
    (tmp_path / "age.csv").write_text("31;30-34;*\n32;30-34;*\n33;30-34;*\n34;30-34;*\n")
    (tmp_path / "zip.csv").write_text(
        "47677;4767*;*\n47602;4760*;*\n47678;4767*;*\n47605;4760*;*\n"
    )
    (tmp_path / "g.toml").write_text(GENERALIZE_TOML)
    return tmp_path


@pytest.fixture
def numbers(tmp_path: Path) -> Path:
    """Two numeric columns of 12 records and a microaggregation config."""
    rows = [f"{(7 * i) % 11},{(5 * i) % 13}" for i in range(12)]
    (tmp_path / "n.csv").write_text("a,b\n" + "\n".join(rows) + "\n")
    (tmp_path / "m.toml").write_text(MICRO_TOML)
    return tmp_path


def _config(tmp_path: Path, text: str) -> Path:
    config = tmp_path / "conf" / "c.toml"
    config.parent.mkdir(exist_ok=True)
    config.write_text(text)
    return config


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


# ------------------------------------------------------------------ the Python API


@pytest.mark.parametrize(
    ("model", "text", "change", "outputs"), FAMILIES, ids=[f[0].__name__ for f in FAMILIES]
)
def test_every_family_refuses_a_changed_run_on_the_configs_outputs(
    tmp_path: Path,
    model: type[Settings],
    text: str,
    change: dict[str, Any],
    outputs: tuple[str, ...],
) -> None:
    config = _config(tmp_path, text)
    with pytest.raises(OverwriteError) as caught:
        model.load(config, **change)
    error = caught.value
    assert (error.changed, sorted(error.kept)) == ([*change], sorted(outputs))
    assert error.parameter == error.changed[0]  # the name the message starts with
    message = str(error)
    assert message.startswith(f"{next(iter(change))} differs from config '{config}'")
    assert message.endswith("for this run, or overwrite=True to replace them")
    assert all(f"out/{Path(p).name}" in message for p in error.paths)


@pytest.mark.parametrize(
    ("model", "text", "change", "outputs"), FAMILIES, ids=[f[0].__name__ for f in FAMILIES]
)
def test_naming_the_outputs_or_overwrite_lets_the_changed_run_through(
    tmp_path: Path,
    model: type[Settings],
    text: str,
    change: dict[str, Any],
    outputs: tuple[str, ...],
) -> None:
    config = _config(tmp_path, text)
    own: dict[str, Any] = {name: str(tmp_path / f"own_{name}") for name in outputs}
    named = model.load(config, **change, **own)
    assert all(getattr(named, name) == path for name, path in own.items())
    replaced = model.load(config, **change, overwrite=True)
    assert all(Path(getattr(replaced, name)).parent == config.parent / "out" for name in outputs)
    if len(outputs) > 1:  # one output named: the others are still the config's
        first = outputs[0]
        with pytest.raises(OverwriteError) as caught:
            model.load(config, **change, **{first: own[first]})
        assert sorted(caught.value.kept) == sorted(outputs[1:])


def test_only_one_named_output_still_refuses_the_others(tmp_path: Path) -> None:
    config = _config(tmp_path, GENERALIZE_TOML)
    with pytest.raises(OverwriteError) as caught:
        GeneralizeSettings.load(config, k=3, output=str(tmp_path / "g3.csv"))
    assert caught.value.kept == ["report"]
    assert "but report would still be written to the config's " in str(caught.value)


@pytest.mark.parametrize(
    "same",
    [
        {"k": 2},
        {"suppression": "1%"},
        {"identifying": "name"},
        {"qi": "relative"},
        {"input": "relative"},
        {"search": "flash"},
    ],
)
def test_an_override_equal_to_the_configs_value_changes_nothing(
    tmp_path: Path, same: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same value, however spelled (1% = 0.01, a path from another folder), is no change."""
    config = _config(tmp_path, GENERALIZE_TOML)
    monkeypatch.chdir(tmp_path)
    if same.get("qi") == "relative":
        same = {"qi": {"age": "conf/age.csv", "zip": "conf/zip.csv"}}
    if same.get("input") == "relative":
        same = {"input": "conf/t.csv"}
    settings = GeneralizeSettings.load(config, **same)
    assert settings.output == str(config.parent / "out" / "g.csv")


@pytest.mark.parametrize(
    "neutral",
    [
        {"verify": False},
        {"max_risk": 0.6},
        {"fail_on_risk": True},
        {"alternatives": 3},
        {"engine": "dask", "workers": 2, "memory_limit": "1GB"},
        {"html": "page.html"},
        {"output": "elsewhere.csv"},
        {"report": "elsewhere.json"},
    ],
)
def test_outputs_and_neutral_parameters_may_be_overridden(
    tmp_path: Path, neutral: dict[str, Any]
) -> None:
    config = _config(tmp_path, GENERALIZE_TOML)
    if "engine" in neutral:  # the engine itself may change a release: only where it runs
        config.write_text(GENERALIZE_TOML.replace("k = 2\n", 'k = 2\nengine = "dask"\n'))
    assert GeneralizeSettings.load(config, **neutral) is not None


def test_the_engine_itself_is_a_parameter(tmp_path: Path) -> None:
    """An engine may group a release otherwise (microaggregation's regions): it counts."""
    config = _config(
        tmp_path, MICRO_TOML.replace('columns = "a,b"\n', 'columns = "a,b"\nvariant = "scalable"\n')
    )
    with pytest.raises(OverwriteError) as caught:
        MicroaggregateSettings.load(config, engine="dask")
    assert caught.value.changed == ["engine"]


def test_several_changes_are_all_named(tmp_path: Path) -> None:
    config = _config(tmp_path, GENERALIZE_TOML)
    with pytest.raises(OverwriteError) as caught:
        GeneralizeSettings.load(config, k=3, suppression="5%", criteria=None)
    assert caught.value.changed == ["k", "suppression"]
    assert str(caught.value).startswith("k and suppression differ from config")


def test_invalid_overrides_are_left_to_validation(tmp_path: Path) -> None:
    """A bad value gets its own one-line error, naming it, not the overwrite refusal."""
    config = _config(tmp_path, GENERALIZE_TOML)
    with pytest.raises(AnonlabError) as caught:
        GeneralizeSettings.load(config, gs_factor=2.0)
    assert not isinstance(caught.value, OverwriteError)
    assert caught.value.parameter == "gs_factor"


def test_a_config_without_outputs_takes_any_override(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        GENERALIZE_TOML.replace('output = "out/g.csv"\n', "").replace(
            'report = "out/g.json"\n', ""
        ),
    )
    assert GeneralizeSettings.load(config, k=3).k == 3
    values = {"input": "t.csv", "qi": {"age": "age.csv"}, "k": 2, "suppression": 0.01}
    assert changed_parameters(GeneralizeSettings, values, {"k": 3, "verify": False}) == ["k"]
    assert changed_parameters(GeneralizeSettings, values, {"suppression": "1%"}) == []


def test_a_dataframe_input_is_a_new_input(tmp_path: Path) -> None:
    """A DataFrame is not the config's file: it equals only itself."""
    import pandas as pd

    config = _config(tmp_path, 'input = "n.csv"\nmethod = "obt"\noutput = "out/p.csv"\n')
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": [3.0, 4.0]})
    with pytest.raises(AnonlabError, match="give output for the new input"):
        PerturbSettings.load(config, input=frame)
    values = {"input": str(tmp_path / "n.csv"), "method": "obt"}
    assert changed_parameters(PerturbSettings, values, {"input": frame}) == ["input"]
    assert changed_parameters(PerturbSettings, {**values, "input": frame}, {"input": frame}) == []
    assert PerturbSettings.load(config, input=frame, output=str(tmp_path / "f.csv")) is not None


def test_the_python_run_keeps_the_configs_files(people: Path) -> None:
    """The refusal comes before any work: the config's outputs stay as they are."""
    out = people / "out"
    run_generalize(GeneralizeSettings.load(people / "g.toml"))
    before = _files(out)
    with pytest.raises(OverwriteError):
        GeneralizeSettings.load(people / "g.toml", k=4)
    settings = GeneralizeSettings.load(
        people / "g.toml", k=4, output=str(people / "g4.csv"), report=str(people / "g4.json")
    )
    run_generalize(settings)
    assert _files(out) == before
    assert json.loads((people / "g4.json").read_text())["k"] == 4


# ------------------------------------------------------------------ the command line


def _refused(args: list[str], folder: Path) -> str:
    """The one line of a refused run (exit code 2), nothing written under ``folder``."""
    before = _files(folder)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert _files(folder) == before
    return lines[0]


def test_the_documented_k10_line_is_refused_naming_output_and_report(tmp_path: Path) -> None:
    """``anonlab generalize --config examples/adult.toml --k 10``: refused before any work."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    line = _refused(
        ["generalize", "--config", str(tmp_path / "examples" / "adult.toml"), "--k", "10"], tmp_path
    )
    assert line == (
        f"Error: --k differs from config '{tmp_path / 'examples' / 'adult.toml'}', but --output "
        "and --report would still be written to the config's "
        f"{tmp_path / 'out' / 'adult_k5.csv'}, {tmp_path / 'out' / 'adult_k5.json'}, over the "
        "results of its own parameters: give --output and --report for this run, or "
        "--overwrite to replace them"
    )


@pytest.mark.parametrize(
    ("command", "config", "change", "flags"),
    [
        (
            "generalize",
            "adult.toml",
            ["--criterion", "distinct-l-diversity:salary-class:l=2", "--k", "5"],
            "--criterion",
        ),
        ("generalize", "adult.toml", ["--weight", "age=4"], "--weight"),
        ("microaggregate", "tarragona.toml", ["--k", "5"], "--k"),
        ("tradeoff", "tarragona_tradeoff.toml", ["--k", "3-5"], "--k"),
        ("perturb", "perturb_tarragona.toml", ["--min-privacy", "0.6"], "--min-privacy"),
    ],
)
def test_every_command_with_a_config_refuses_with_its_flags(
    tmp_path: Path, command: str, config: str, change: list[str], flags: str
) -> None:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    line = _refused([command, "--config", str(tmp_path / "examples" / config), *change], tmp_path)
    assert line.startswith(f"Error: {flags} differs from config "), line
    assert "--report" in line and line.endswith("or --overwrite to replace them")


def test_evaluate_and_attack_configs_refuse_too(tmp_path: Path) -> None:
    (tmp_path / "e.toml").write_text(
        'original = "o.csv"\nmasked = "m.csv"\nreport = "e.json"\nhtml = "e.html"\n'
    )
    line = _refused(
        ["evaluate", "--config", str(tmp_path / "e.toml"), "--tau", "0.3,0.7"], tmp_path
    )
    assert line.startswith("Error: --tau differs from config ")
    assert "--report and --html would still be written" in line
    (tmp_path / "a.toml").write_text('original = "o.csv"\nreleased = "r.csv"\nreport = "a.json"\n')
    line = _refused(["attack", "--config", str(tmp_path / "a.toml"), "--known", "2,3"], tmp_path)
    assert line.startswith("Error: --known differs from config ")


def test_overwrite_writes_the_configs_outputs(numbers: Path) -> None:
    config = numbers / "m.toml"
    _refused(["microaggregate", "--config", str(config), "--k", "4", "--quiet"], numbers)
    result = runner.invoke(
        app, ["microaggregate", "--config", str(config), "--k", "4", "--overwrite", "--quiet"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads((numbers / "out" / "m.json").read_text())["k"] == 4


def test_named_outputs_leave_the_configs_alone(numbers: Path) -> None:
    config = numbers / "m.toml"
    assert runner.invoke(app, ["microaggregate", "--config", str(config), "--quiet"]).exit_code == 0
    before = _files(numbers / "out")
    result = runner.invoke(
        app,
        [
            "microaggregate",
            "--config",
            str(config),
            "--k",
            "4",
            "--output",
            str(numbers / "m4.csv"),
            "--report",
            str(numbers / "m4.json"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert _files(numbers / "out") == before
    assert json.loads((numbers / "m4.json").read_text())["k"] == 4


def test_neutral_flags_on_the_command_line_are_not_refused(numbers: Path) -> None:
    result = runner.invoke(
        app,
        [
            "microaggregate",
            "--config",
            str(numbers / "m.toml"),
            "--workers",
            "2",
            "--no-verify",
            "--max-risk",
            "0.5",
            "--html",
            str(numbers / "m.html"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (numbers / "out" / "m.csv").exists() and (numbers / "m.html").exists()


# ------------------------------------------------------------------ reports name their outputs


def test_a_report_names_every_output_it_describes(people: Path) -> None:
    result = runner.invoke(
        app,
        [
            "generalize",
            "--config",
            str(people / "g.toml"),
            "--html",
            str(people / "out" / "g.html"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((people / "out" / "g.json").read_text())
    assert report["outputs"] == {"output": "g.csv", "report": "g.json", "html": "g.html"}


def test_a_database_release_is_named_by_url_and_table(people: Path) -> None:
    db = people / "out.db"
    url = f"sqlite:///{db}"
    result = runner.invoke(
        app,
        [
            "generalize",
            "--config",
            str(people / "g.toml"),
            "--output",
            url,
            "--output-table",
            "g_k2",
            "--report",
            str(people / "db.json"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((people / "db.json").read_text())
    assert report["outputs"] == {"output": {"url": url, "table": "g_k2"}, "report": "db.json"}
    verified = runner.invoke(app, ["verify", str(people / "db.json")])
    assert verified.exit_code == 0, verified.output
    assert f"release '{url}#g_k2' holds" in verified.output


def test_a_database_password_never_reaches_the_report() -> None:
    from anonlab.database import DatabaseTarget
    from anonlab.runs.common import outputs_section

    class _Targets:
        """What :func:`outputs_section` asks of :class:`anonlab.outputs.Outputs`."""

        def names(self) -> list[str]:
            return ["report", "output", "key"]

        def path(self, name: str) -> Path | None:
            return Path("/r/rep.json") if name == "report" else None

        def target(self, name: str) -> Path | DatabaseTarget | None:
            if name == "output":
                return DatabaseTarget("postgresql://ann:secret@db.example/x", "rel")
            return Path("/r/rep.json") if name == "report" else Path("/r/key.json")

    section = outputs_section(_Targets())  # type: ignore[arg-type]
    assert list(section) == ["output", "report"]  # the release first, never the key
    assert section["output"] == {"url": "postgresql://ann:***@db.example/x", "table": "rel"}
    assert "secret" not in json.dumps(section)
