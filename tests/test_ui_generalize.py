"""The web app's core workflow on Adult: load, roles, a generalization run, explore, export.

The release downloaded from the app must equal, byte for byte, the release the
CLI writes for the settings the app exports (issue 26).
"""

from __future__ import annotations

import html
import re
import shlex
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
from starlette.datastructures import FormData
from starlette.testclient import TestClient
from typer.testing import CliRunner

from anonlab.cli.app import app as cli_app
from anonlab.ui.jobs import Job, JobStore
from ui_flow import (
    ADULT,
    IDENTIFYING,
    K5_L2,
    QIS,
    app_client,
    finish,
    generalize,
    load_adult,
    wait,
)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with app_client(tmp_path / "workspace") as c:
        yield c


def run_cli(args: list[str], folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(folder)
    result = CliRunner().invoke(cli_app, args)
    assert result.exit_code == 0, result.output


def test_k5_l_diversity_second_node_equals_the_cli_byte_for_byte(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = load_adult(client)
    form = client.get(f"/method/generalize?table={table}")
    assert form.status_code == 200 and "distinct-l-diversity" in form.text
    reply = client.post(
        "/method/generalize", data={"table": table, **K5_L2}, follow_redirects=False
    )
    assert reply.status_code == 303, reply.text
    first = finish(client, reply.headers["location"])
    page = client.get(f"/runs/{first}")
    assert "k-anonymity" in page.text and "holds" in page.text
    assert "Re-identification risk" in page.text and "records at risk above 0.05" in page.text

    explore = client.get(f"/runs/{first}/explore")
    assert explore.status_code == 200
    assert "Solution space" in explore.text and "before and after" in explore.text
    reply = client.post(f"/runs/{first}/explore", data={"node": "2"}, follow_redirects=False)
    assert reply.status_code == 303, reply.text
    second = finish(client, reply.headers["location"])

    applied_page = client.get(f"/runs/{second}").text
    assert "sex=0, age=4, race=0, education=2" in applied_page  # node 2's levels
    explored = client.get(f"/runs/{second}/explore").text
    assert "released by this run" in explored and 'aria-label="release node 1"' in explored
    release = client.get(f"/runs/{second}/files/release.csv")
    assert release.status_code == 200
    settings = client.get(f"/runs/{second}/files/settings.toml")
    assert settings.status_code == 200
    values = tomllib.loads(settings.text)
    assert values["k"] == 5 and values["criteria"] == [
        {"model": "distinct-l-diversity", "attribute": "salary-class", "l": 2}
    ]
    assert values["min_level"] == values["max_level"]

    # the exported settings, run by the CLI's generalize --config
    cli = tmp_path / "cli"
    cli.mkdir()
    (cli / "settings.toml").write_text(settings.text, encoding="utf-8")
    run_cli(["generalize", "--config", "settings.toml", "--quiet"], cli, monkeypatch)
    assert (cli / "release.csv").read_bytes() == release.content

    # and the apply line the export page gives
    export = client.get(f"/runs/{second}/export")
    assert "anonlab apply" in export.text
    applied = tmp_path / "applied"
    applied.mkdir()
    words = apply_line_of(client, second)
    assert words[words.index("--node") + 1] == "2"
    run_cli([*words[1:], "--quiet"], applied, monkeypatch)
    assert (applied / "release.csv").read_bytes() == release.content

    # the optimum too: its settings.toml repeats it
    optimum = tmp_path / "optimum"
    optimum.mkdir()
    (optimum / "settings.toml").write_text(
        client.get(f"/runs/{first}/files/settings.toml").text, encoding="utf-8"
    )
    run_cli(["generalize", "--config", "settings.toml", "--quiet"], optimum, monkeypatch)
    assert (optimum / "release.csv").read_bytes() == client.get(
        f"/runs/{first}/files/release.csv"
    ).content


def test_cancel_stops_the_run_and_writes_nothing(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = load_adult(client)
    entered, gate = threading.Event(), threading.Event()
    original = Job.progress

    def gated(self: Job, step: str, done: int, total: int | None) -> None:
        entered.set()
        gate.wait(30)
        original(self, step, done, total)

    monkeypatch.setattr(Job, "progress", gated)
    reply = client.post(
        "/method/generalize", data={"table": table, **K5_L2}, follow_redirects=False
    )
    run_id = reply.headers["location"].rsplit("/", 1)[-1]
    assert entered.wait(30)
    page = client.get(f"/runs/{run_id}")
    assert "Cancel the run" in page.text and f'data-job="/runs/{run_id}/state"' in page.text
    assert client.get(f"/runs/{run_id}/state").json()["status"] == "running"
    reply = client.post(f"/runs/{run_id}/cancel", follow_redirects=False)
    assert reply.status_code == 303
    gate.set()
    assert wait(client, run_id) == "cancelled"
    written = sorted(p.name for p in (run_folder(client, run_id)).iterdir())
    assert written == ["settings.toml"]
    assert "nothing was written" in client.get(f"/runs/{run_id}").text


def run_folder(client: TestClient, run_id: str) -> Path:
    """The folder of run ``run_id`` (where its outputs go)."""
    jobs: JobStore = client.app.state.jobs  # type: ignore[attr-defined]
    return jobs.get(run_id).folder


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("k", "five", "k: 'five' is not a number"),
        ("parameters_0", "x=1", "criteria"),
        ("suppression", "150%", "suppression must be a fraction"),
        ("metric", "nonsense", "metric 'nonsense' is unknown"),
        ("recoding", "global", "recoding 'global' is unknown"),
    ],
)
def test_a_bad_parameter_is_one_line(
    client: TestClient, field: str, value: str, message: str
) -> None:
    table = load_adult(client)
    reply = client.post("/method/generalize", data={"table": table, **K5_L2, field: value})
    assert reply.status_code == 400
    assert message in html.unescape(reply.text) and 'role="alert"' in reply.text
    assert reply.text.count("Error:") == 1
    assert client.get("/runs").text.count("/runs/r") == 0  # no run started


def test_a_model_the_settings_refuse_is_one_line(client: TestClient) -> None:
    table = load_adult(client)
    form = {**K5_L2, "model_0": "distinct-l-diversity", "attribute_0": "", "parameters_0": "l=2"}
    reply = client.post("/method/generalize", data={"table": table, **form})
    assert reply.status_code == 400 and "Error: " in reply.text


def test_a_node_outside_the_list_is_refused(client: TestClient) -> None:
    table = load_adult(client)
    first = generalize(client, table)
    for node in ("0", "6", "x"):
        reply = client.post(f"/runs/{first}/explore", data={"node": node})
        assert reply.status_code == 400, node
        assert "Error: " in reply.text


def test_explore_shows_the_alternatives_and_the_distributions(client: TestClient) -> None:
    table = load_adult(client)
    first = generalize(client, table)
    page = client.get(f"/runs/{first}/explore").text
    for node in range(1, 6):
        assert f'aria-label="release node {node}"' in page or node == 1
    assert "released by this run" in page
    # age is generalized to '*' by the optimum (level 4): one value after, 72 before
    assert "age: 72 values before, 1 after" in page
    assert "0.33714" in page  # the optimum's loss (precision_with_suppression)


def test_mondrian_and_local_recoding_equal_the_cli(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = load_adult(client)
    for recoding, suppression in (("mondrian", ""), ("local", "1%")):
        form = {**K5_L2, "recoding": recoding, "suppression": suppression}
        run_id = generalize(client, table, form)
        page = client.get(f"/runs/{run_id}").text
        assert "Result" in page and "Generalization" in page
        text = client.get(f"/runs/{run_id}/files/settings.toml").text
        settings = tomllib.loads(text)
        assert settings["recoding"] == recoding and "alternatives" not in settings
        cli = tmp_path / recoding
        cli.mkdir()
        (cli / "settings.toml").write_text(text, encoding="utf-8")
        run_cli(["generalize", "--config", "settings.toml", "--quiet"], cli, monkeypatch)
        release = client.get(f"/runs/{run_id}/files/release.csv").content
        assert (cli / "release.csv").read_bytes() == release


def test_a_run_that_fails_shows_its_error(client: TestClient) -> None:
    table = load_adult(client)
    reply = client.post(
        "/method/generalize",
        data={"table": table, **K5_L2, "min_level_0": "9"},
        follow_redirects=False,
    )
    if reply.status_code == 400:  # refused before the run
        assert "Error: " in reply.text
        return
    run_id = reply.headers["location"].rsplit("/", 1)[-1]
    assert wait(client, run_id) == "failed"
    assert "Error: " in client.get(f"/runs/{run_id}").text


def test_the_risk_settings_reach_the_run(client: TestClient) -> None:
    table = load_adult(client)
    form = {**K5_L2, "attacker_columns": "sex, age", "max_risk": "0.5", "min_level_1": "3"}
    run_id = generalize(client, table, form)
    values = tomllib.loads(client.get(f"/runs/{run_id}/files/settings.toml").text)
    assert values["attacker_columns"] == ["sex", "age"] and values["max_risk"] == 0.5
    assert values["min_level"] == {"age": 3}
    report = client.get(f"/runs/{run_id}/files/report.json").json()
    assert report["risk"]["attacker_columns"] == ["sex", "age"]
    assert report["transformation"]["age"] >= 3


def test_a_relative_file_parameter_is_written_out_absolute(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from anonlab.ui.pages.method import criteria_of

    monkeypatch.chdir(ADULT)
    form = FormData(
        [
            ("model_0", "hierarchical-distance-t-closeness"),
            ("attribute_0", "salary-class"),
            ("parameters_0", "t=0.3,hierarchy=hierarchy_salary-class.csv"),
            ("criteria_text", "distinct-l-diversity:salary-class:l=2"),
        ]
    )
    assert criteria_of(form) == [
        {
            "model": "hierarchical-distance-t-closeness",
            "attribute": "salary-class",
            "t": 0.3,
            "hierarchy": str(ADULT / "hierarchy_salary-class.csv"),
        },
        {"model": "distinct-l-diversity", "attribute": "salary-class", "l": 2},
    ]


def apply_line_of(client: TestClient, run_id: str) -> list[str]:
    """The ``anonlab apply`` command line the export page of run ``run_id`` gives, as words."""
    page = client.get(f"/runs/{run_id}/export").text
    (line,) = re.findall(r"<pre>(anonlab apply .*?)</pre>", page)
    return shlex.split(html.unescape(line))


def test_other_levels_are_released_and_repeated_by_the_cli(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = load_adult(client)
    first = generalize(client, table)
    page = client.get(f"/runs/{first}/explore").text
    assert "Release these levels" in page and 'max="3"' in page  # education's bound
    reply = client.post(
        f"/runs/{first}/explore",
        data={"level_0": "1", "level_1": "4", "level_2": "1", "level_3": ""},
        follow_redirects=False,
    )
    assert reply.status_code == 303, reply.text
    run_id = finish(client, reply.headers["location"])
    report = client.get(f"/runs/{run_id}/files/report.json").json()
    assert report["transformation"] == {"sex": 1, "age": 4, "race": 1, "education": 1}
    release = client.get(f"/runs/{run_id}/files/release.csv").content
    text = client.get(f"/runs/{run_id}/files/settings.toml").text
    cli = tmp_path / "pinned"
    cli.mkdir()
    (cli / "settings.toml").write_text(text, encoding="utf-8")
    run_cli(["generalize", "--config", "settings.toml", "--quiet"], cli, monkeypatch)
    assert (cli / "release.csv").read_bytes() == release
    words = apply_line_of(client, run_id)
    assert words[:2] == ["anonlab", "apply"] and "--levels" in words
    line = tmp_path / "line"
    line.mkdir()
    run_cli([*words[1:], "--quiet"], line, monkeypatch)
    assert (line / "release.csv").read_bytes() == release
    assert "give a level" in html.unescape(
        client.post(f"/runs/{first}/explore", data={"level_0": ""}).text
    )


def test_weights_aggregates_and_the_classification_metric_equal_the_cli(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = load_adult(client)
    weighted = {
        **K5_L2,
        "weight_1": "2",
        "aggregate_qi_1": "mean",
        "metric": "loss",
        "practical_monotonicity": "on",
    }
    classified = {**K5_L2, "metric": "classification", "targets": "salary-class"}
    expected: list[dict[str, Any]] = [
        {"attribute_weights": {"age": 2.0}, "aggregate_qi": {"age": "mean"}},
        {"targets": ["salary-class"], "metric": "classification"},
    ]
    for i, (form, wanted) in enumerate(zip((weighted, classified), expected, strict=True)):
        run_id = generalize(client, table, form)
        text = client.get(f"/runs/{run_id}/files/settings.toml").text
        values = tomllib.loads(text)
        assert {k: values.get(k) for k in wanted} == wanted
        cli = tmp_path / f"cli{i}"
        cli.mkdir()
        (cli / "settings.toml").write_text(text, encoding="utf-8")
        run_cli(["generalize", "--config", "settings.toml", "--quiet"], cli, monkeypatch)
        release = client.get(f"/runs/{run_id}/files/release.csv").content
        assert (cli / "release.csv").read_bytes() == release
    bad = {**K5_L2, "aggregate_qi_1": "average"}
    reply = client.post("/method/generalize", data={"table": table, **bad})
    assert reply.status_code == 400 and "aggregate &#39;average&#39;" in reply.text


def load_weighted_adult(client: TestClient, folder: Path) -> str:
    """Adult with a column of sampling weights (``w``, insensitive) loaded from a path, its
    other columns given the roles :func:`ui_flow.load_adult` gives; the table's id."""
    lines = (ADULT / "adult.csv").read_text(encoding="utf-8").splitlines()
    weighted = folder / "adult_weighted.csv"
    weighted.write_text(
        "\n".join([f"{lines[0]};w"] + [f"{line};{100 + i % 7}" for i, line in enumerate(lines[1:])])
        + "\n",
        encoding="utf-8",
    )
    reply = client.post(
        "/load/path", data={"path": str(weighted), "delimiter": ";"}, follow_redirects=False
    )
    assert reply.status_code == 303, reply.text
    table = reply.headers["location"].split("table=")[1]
    form = {"table": table}
    for i, column in enumerate([*lines[0].split(";"), "w"]):
        if column in QIS:
            form[f"role_{i}"] = "qi"
            form[f"hierarchy_{i}"] = str(ADULT / f"hierarchy_{column}.csv")
        elif column in IDENTIFYING:
            form[f"role_{i}"] = "identifying"
        else:
            form[f"role_{i}"] = "insensitive" if column == "w" else "sensitive"
    reply = client.post("/roles", data=form, follow_redirects=False)
    assert reply.status_code == 303, reply.text
    return table


#: the genetic search with a step limit under the static metric, and every risk setting the
#: form has: the fields of the form and the settings.toml values they must give
GENETIC_STATIC = {
    "search": "genetic",
    "step_limit": "40",
    "genetic_seed": "-559038737",
    "genetic_iterations": "5",
    "genetic_subpopulation_size": "10",
    "genetic_mutation_probability": "0.5",
    "metric": "static",
    "static_loss_0": "0,1",
    "static_loss_1": "0,0.2,0.4,0.7,1",
    "static_loss_2": "0,1",
    "static_loss_3": "0,0.3,0.6,1",
    "risk_threshold": "0.09, 0.01",
    "weights": "w",
    "sensitive_hierarchy_0": "hierarchy_salary-class.csv",
    "alternatives": "",
}


def test_genetic_static_loss_and_risk_settings_equal_the_cli(
    client: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = load_weighted_adult(client, tmp_path)
    page = client.get(f"/method/generalize?table={table}").text
    for name in ("genetic_seed", "static_loss_3", "risk_threshold", "sensitive_hierarchy_0"):
        assert f'name="{name}"' in page
    assert '<option value="w">w</option>' in page
    assert '<option value="occupation">' not in page  # identifying: not released
    monkeypatch.chdir(ADULT)  # the hierarchy file is typed relative to the app's folder
    run_id = generalize(client, table, {**K5_L2, **GENETIC_STATIC})
    text = client.get(f"/runs/{run_id}/files/settings.toml").text
    values = tomllib.loads(text)
    assert values["genetic"] == {
        "subpopulation_size": 10,
        "iterations": 5,
        "mutation_probability": 0.5,
        "seed": -559038737,
    }
    assert values["search"] == "genetic" and values["step_limit"] == 40
    assert values["static_loss"] == {
        "sex": [0.0, 1.0],
        "age": [0.0, 0.2, 0.4, 0.7, 1.0],
        "race": [0.0, 1.0],
        "education": [0.0, 0.3, 0.6, 1.0],
    }
    assert values["risk_threshold"] == [0.09, 0.01] and values["weights"] == "w"
    assert values["sensitive_hierarchies"] == {
        "salary-class": str(ADULT / "hierarchy_salary-class.csv")
    }
    report = client.get(f"/runs/{run_id}/files/report.json").json()
    assert report["parameters"]["metric"] == "static"
    assert report["risk"]["prosecutor"]["records_at_risk"].keys() >= {"0.09", "0.01"}
    cli = tmp_path / "cli"
    cli.mkdir()
    (cli / "settings.toml").write_text(text, encoding="utf-8")
    run_cli(["generalize", "--config", "settings.toml", "--quiet"], cli, monkeypatch)
    release = client.get(f"/runs/{run_id}/files/release.csv").content
    assert (cli / "release.csv").read_bytes() == release
    assert (cli / "report.json").read_text(encoding="utf-8").count('"static"') >= 1


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"static_loss_0": "0,x"}, "static_loss 'sex=0,x' is not COLUMN=NUMBER,NUMBER"),
        ({"search": "genetic", "genetic_elite_fraction": "2"}, "elite_fraction must be from 0"),
        ({"genetic_iterations": "5"}, "apply to search 'genetic', not to 'flash'"),
        ({"search": "genetic", "genetic_iterations": "many"}, "'many' is not a number"),
        ({"risk_threshold": "0.1, high"}, "risk_threshold: 'high' is not a number"),
        ({"risk_threshold": "3"}, "risk_threshold"),
        ({"weights": "nope"}, "weights: 'nope' is not a column"),
        ({"sensitive_hierarchy_0": "/no/such/h.csv"}, "sensitive_hierarchies: no file"),
    ],
)
def test_a_bad_new_field_is_one_line(
    client: TestClient, fields: dict[str, str], message: str
) -> None:
    table = load_adult(client)
    reply = client.post("/method/generalize", data={"table": table, **K5_L2, **fields})
    assert reply.status_code == 400, reply.text
    assert message in html.unescape(reply.text) and 'role="alert"' in reply.text
    assert reply.text.count("Error:") == 1
    assert client.get("/runs").text.count("/runs/r") == 0  # no run started
