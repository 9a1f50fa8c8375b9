"""The web app's method pages of every family but generalization, and the R-U map (issue 26).

Each family runs from its page on sdcMicro's test data or Tarragona (the fusion
example on Adult), loaded through the Load page and given roles on the Roles page.
Microaggregation, masking, perturbation and cell suppression from the app write, byte
for byte, the release the CLI writes for the run's ``settings.toml``; fusion's and
risk's command lines (they read no settings file) and compare's settings give the
CLI the same fused table, risk and comparison; each results page shows its family's
measures; a bad parameter is the one-line error page; no token, no page.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from anonlab.ui.app import create_app
from anonlab.ui.jobs import Job
from anonlab.ui.security import allowed_hosts
from anonlab.ui.templating import render_text
from anonlab.ui.workspace import Workspace

TOKEN = "t0ken-for-tests"
ROOT = Path(__file__).resolve().parents[1]
SDC = ROOT / "data" / "sdc"
TARRAGONA = SDC / "Tarragona.csv"
TESTDATA = SDC / "testdata.csv"
FUSION = ROOT / "examples" / "fusion" / "fusion.toml"

# a risky release draws a ReleaseRiskWarning in the run's thread (the report and the run page
# show it): under the suite's "error" filter it would fail the run
pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    (tmp_path / "workspace").mkdir()
    workspace = Workspace(tmp_path / "workspace")
    app = create_app(workspace, token=TOKEN, hosts=allowed_hosts("127.0.0.1", 8765))
    with TestClient(app, base_url="http://127.0.0.1:8765", headers={"X-Anonlab-Token": TOKEN}) as c:
        yield c


def header(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()[0].split(",")


def load(client: TestClient, path: Path, roles: dict[str, str], rest: str) -> str:
    """Load ``path`` through the Load page and give its columns ``roles`` (``rest`` for the
    others) on the Roles page; the table's id."""
    reply = client.post("/load/path", data={"path": str(path)}, follow_redirects=False)
    assert reply.status_code == 303, reply.text
    table = reply.headers["location"].split("table=")[1]
    form = {"table": table}
    for i, column in enumerate(header(path)):
        form[f"role_{i}"] = roles.get(column, rest)
    reply = client.post("/roles", data=form, follow_redirects=False)
    assert reply.status_code == 303, reply.text
    return table


def job_of(client: TestClient, reply: Any, timeout: float = 180.0) -> Job:
    """The run a form started (its reply redirects to ``/runs/ID``), once it ended well."""
    assert reply.status_code == 303, reply.text
    location = reply.headers["location"]
    assert location.startswith("/runs/")
    job: Job = client.app.state.jobs.get(location.rsplit("/", 1)[-1])  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    while job.status in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job.status == "done", (job.status, job.error, job.trace)
    return job


def results(client: TestClient, job: Job) -> str:
    """The run's results as the run page shows them (the family's own template)."""
    assert job.result is not None
    page = client.get(f"/runs/{job.id}")
    if page.status_code == 200 and f'data-command="{job.command}"' in page.text:
        return page.text
    return render_text(f"results/{job.command}.html", job=job, report=job.result.report)


def cli(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "anonlab", *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def same_as_cli(job: Job, command: str, tmp_path: Path, *more: str) -> None:
    """The CLI, given the run's settings.toml, writes the app's release byte for byte."""
    settings = job.folder / "settings.toml"
    assert tomllib.loads(settings.read_text(encoding="utf-8"))["output"] == str(
        job.folder / "release.csv"
    )
    out = tmp_path / "cli"
    out.mkdir()
    cli(
        command,
        "--config",
        str(settings),
        "--output",
        str(out / "release.csv"),
        "--report",
        str(out / "report.json"),
        "--html",
        str(out / "report.html"),
        *(str(out / m) if m.endswith(".json") else m for m in more),
    )
    app_release = (job.folder / "release.csv").read_bytes()
    assert app_release == (out / "release.csv").read_bytes()
    assert len(app_release.splitlines()) > 100


def tarragona(client: TestClient) -> str:
    return load(client, TARRAGONA, {}, "qi")


def load_testdata(client: TestClient, qi: list[str]) -> str:
    return load(client, TESTDATA, dict.fromkeys(qi, "qi"), "insensitive")


# ---------------------------------------------------------------------------
# Microaggregation and masking: the release is the CLI's
# ---------------------------------------------------------------------------


def test_the_microaggregation_page_is_built_from_the_settings_model(client: TestClient) -> None:
    table = tarragona(client)
    page = client.get(f"/method/microaggregate?table={table}")
    assert page.status_code == 200
    for name in ("k", "variant", "block_size", "nominal", "max_risk", "fail_on_risk"):
        assert f'name="{name}"' in page.text
    # every column is a quasi-identifier: each is chosen to be masked
    assert page.text.count("selected>") >= len(header(TARRAGONA))
    assert 'name="input"' not in page.text and 'name="output"' not in page.text


@pytest.mark.parametrize("method", [{}, {"method": "onedims", "aggr": "median"}])
def test_microaggregation_from_the_app_is_the_clis_release(
    client: TestClient, tmp_path: Path, method: dict[str, str]
) -> None:
    table = tarragona(client)
    form = {"table": table, "columns": header(TARRAGONA), "k": "5", "verify": "true", **method}
    job = job_of(client, client.post("/method/microaggregate", data=form, follow_redirects=False))
    assert job.values["k"] == 5 and job.values["columns"] == header(TARRAGONA)
    assert {k: job.values[k] for k in method} == method
    same_as_cli(job, "microaggregate", tmp_path)
    shown = results(client, job)
    report = json.loads((job.folder / "report.json").read_text(encoding="utf-8"))
    assert f'<td class="num">{report["groups"]}</td>' in shown
    assert "ILh" in shown and "records at risk above 0.2" in shown


def test_microaggregation_starts_from_the_numeric_and_the_text_quasi_identifiers(
    client: TestClient,
) -> None:
    from anonlab.ui.pages.families import family_groups

    table_id = load(
        client, TESTDATA, {"sex": "qi", "age": "qi", "relat": "sensitive"}, "insensitive"
    )
    table = client.app.state.workspace.table(table_id)  # type: ignore[attr-defined]
    for column in table.columns:  # the Load page's types: sex as text (a code list, say)
        if column["name"] == "sex":
            column["type"] = "text"
    shown = {f.key: f.value for g in family_groups("microaggregate", table) for f in g.fields}
    assert shown["columns"] == ["age"] and shown["nominal"] == ["sex"]
    # a sensitive column without a hierarchy file (relat) leaves sensitive_hierarchies empty
    assert shown["sensitive_hierarchies"] is None
    for command in ("microaggregate", "perturb", "mask", "suppress"):
        assert client.get(f"/method/{command}?table={table_id}").status_code == 200


def test_microaggregation_offers_the_models_methods_when_it_has_them(client: TestClient) -> None:
    from anonlab.runs.microaggregate import MicroaggregateSettings

    page = client.get(f"/method/microaggregate?table={tarragona(client)}").text
    for name in ("method", "aggr"):
        field = MicroaggregateSettings.model_fields.get(name)
        if field is None:
            continue
        assert f'name="{name}"' in page
        for choice in field.annotation.__args__:  # type: ignore[union-attr]
            assert f'<option value="{choice}"' in page


def test_masking_from_the_app_is_the_clis_release(client: TestClient, tmp_path: Path) -> None:
    table = load_testdata(client, ["expend", "income"])
    form = {
        "table": table,
        "method": "noise",
        "columns": ["expend", "income"],
        "seed": "11",
        "verify": "true",
        "parameters.noise.noise": "30",
        "parameters.noise.noise_method": "additive",
        # another method's fields are sent too (no script): only the chosen one's count
        "parameters.topbot.top": "5",
    }
    job = job_of(client, client.post("/method/mask", data=form, follow_redirects=False))
    assert job.values["parameters"] == {"noise": 30.0}
    same_as_cli(job, "mask", tmp_path)
    shown = results(client, job)
    assert "noise_sd" in shown and "<td>DR</td>" in shown and "seed given" in shown


def test_a_masking_method_with_sdcmicros_parameters_runs(client: TestClient) -> None:
    table = load_testdata(client, ["roof", "walls"])
    form = {
        "table": table,
        "method": "pram",
        "columns": ["roof", "walls"],
        "seed": "3",
        "verify": "true",
        "parameters.pram.pd": "0.7",
        "parameters.pram.alpha": "0.4",
    }
    job = job_of(client, client.post("/method/mask", data=form, follow_redirects=False))
    assert job.values["parameters"] == {"pd": [0.7], "alpha": [0.4]}
    assert "Risk accounting for PRAM" in results(client, job)


def test_the_settings_toml_download_is_what_the_cli_reads(
    client: TestClient, tmp_path: Path
) -> None:
    from anonlab.runs.mask import MaskSettings

    table = load_testdata(client, ["expend"])
    form = {
        "table": table,
        "method": "topbot",
        "columns": ["expend"],
        "verify": "true",
        "parameters.topbot.top": "100000000",
        "action": "toml",
    }
    reply = client.post("/method/mask", data=form)
    assert reply.status_code == 200
    assert "attachment" in reply.headers["content-disposition"]
    path = tmp_path / "mask.toml"
    path.write_text(reply.text, encoding="utf-8")
    assert reply.text.startswith("# anonlab mask --config mask.toml")
    settings = MaskSettings.load(path)
    assert settings.method == "topbot" and settings.parameters["top"] == 1e8
    assert settings.output == str(tmp_path / "release.csv")
    assert client.app.state.jobs.jobs == {}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("method", "fields", "parameters"),
    [
        ("pram", {"pd": "0.8,0.7", "strata": ["urbrur"]}, {"pd": [0.8, 0.7], "strata": ["urbrur"]}),
        ("topbot", {"top": "5e7", "kind": "top"}, {"top": 5e7}),
        (
            "recode",
            {"breaks": "3", "recode_method": "equalamount", "labels": "low, mid, high"},
            {"breaks": [3.0], "recode_method": "equalamount", "labels": ["low", "mid", "high"]},
        ),
        (
            "noise",
            {"noise_method": "correlated2", "delta": "0.2"},
            {"noise_method": "correlated2", "delta": 0.2},
        ),
        ("rankswap", {"p": "5", "extremes": "mean"}, {"p": 5.0, "extremes": "mean"}),
        (
            "shuffle",
            {"shuffle_method": "mvn", "predictors": ["savings"]},
            {"shuffle_method": "mvn", "predictors": ["savings"]},
        ),
    ],
)
def test_each_masking_methods_parameters_are_sdcmicros_names_in_the_toml(
    client: TestClient,
    tmp_path: Path,
    method: str,
    fields: dict[str, Any],
    parameters: dict[str, Any],
) -> None:
    from anonlab.runs.mask import MaskSettings

    table = load_testdata(client, ["expend", "income"])
    form = {"table": table, "method": method, "columns": ["expend", "income"], "seed": "1"}
    form |= {f"parameters.{method}.{k}": v for k, v in fields.items()}
    reply = client.post("/method/mask", data={**form, "verify": "true", "action": "toml"})
    assert reply.status_code == 200, reply.text
    written = tomllib.loads(reply.text)
    assert written["method"] == method and written["parameters"] == parameters
    path = tmp_path / "mask.toml"
    path.write_text(reply.text, encoding="utf-8")
    settings = MaskSettings.load(path)
    assert {k: settings.parameters[k] for k in parameters} == parameters


def test_table_parameters_take_toml_or_the_command_lines_text(
    client: TestClient, tmp_path: Path
) -> None:
    from anonlab.runs.suppress import SuppressSettings

    table = load_testdata(client, ["roof", "walls"])
    forms = [
        {"combs": "2", "importance": "roof=2,walls=1"},
        {"combs": "[[2, 3]]", "importance": "{roof = 2, walls = 1}"},
    ]
    got = []
    for given in forms:
        form = {"table": table, "qi": ["roof", "walls"], "verify": "true", "action": "toml"}
        reply = client.post("/method/suppress", data={**form, **given})
        assert reply.status_code == 200, reply.text
        path = tmp_path / "suppress.toml"
        path.write_text(reply.text, encoding="utf-8")
        settings = SuppressSettings.load(path)
        got.append((settings.combs, settings.importance))
    assert got == [([(2, None)], {"roof": 2, "walls": 1}), ([(2, 3)], {"roof": 2, "walls": 1})]


def test_paths_typed_on_a_page_are_made_absolute(monkeypatch: pytest.MonkeyPatch) -> None:
    from anonlab.ui.pages.families import absolute_paths

    monkeypatch.chdir(ROOT)
    values = {
        "input": "data/sdc/testdata.csv",
        "library": "out/lib.json",
        "sensitive_hierarchies": {"relat": "~/h.csv"},
        "parameters": {"matrix": {"roof": "m.csv"}, "pd": [0.8]},
        "seed": 3,
    }
    got = absolute_paths(values, ("input", "library", "sensitive_hierarchies"))
    assert got["input"] == "data/sdc/testdata.csv"  # the loaded table's, as the Load page read it
    assert got["library"] == str(ROOT / "out" / "lib.json")
    assert got["sensitive_hierarchies"] == {"relat": str(Path.home() / "h.csv")}
    assert got["parameters"] == {"matrix": {"roof": str(ROOT / "m.csv")}, "pd": [0.8]}
    assert got["seed"] == 3


# ---------------------------------------------------------------------------
# The other families run and show their measures
# ---------------------------------------------------------------------------


def test_cell_suppression_runs_and_shows_its_measures(client: TestClient, tmp_path: Path) -> None:
    keys = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
    table = load_testdata(client, keys)
    form = {"table": table, "qi": keys, "k": "3", "verify": "true"}
    job = job_of(client, client.post("/method/suppress", data=form, follow_redirects=False))
    report = job.result.report if job.result else {}
    assert report["k"] == 3 and report["cells_suppressed"] > 0
    same_as_cli(job, "suppress", tmp_path)
    shown = results(client, job)
    assert f'<td class="num">{report["cells_suppressed"]}</td>' in shown
    assert "Per key" in shown and "GCP" in shown


def test_perturbation_runs_writes_its_key_and_shows_the_attacks(
    client: TestClient, tmp_path: Path
) -> None:
    table = tarragona(client)
    form = {
        "table": table,
        "method": "gdp",
        "noise": "0.2",
        "seed": "7",
        "columns": header(TARRAGONA),
        "verify": "true",
    }
    job = job_of(client, client.post("/method/perturb", data=form, follow_redirects=False))
    assert (job.folder / "key.json").is_file()
    assert job.values["noise"] == 0.2 and job.values["method"] == "gdp"
    same_as_cli(job, "perturb", tmp_path, "--key", "key.json")
    shown = results(client, job)
    assert "Attacks that would undo it" in shown and "least_squares" in shown
    assert "can never be inverted" not in shown


def test_the_risk_of_a_table_runs_as_a_job_and_shows_the_risk_section(
    client: TestClient, tmp_path: Path
) -> None:
    table = load(
        client,
        TESTDATA,
        {"urbrur": "qi", "water": "qi", "sex": "qi", "age": "qi", "relat": "sensitive"},
        "insensitive",
    )
    page = client.get(f"/method/risk?table={table}")
    assert page.status_code == 200 and 'name="qi"' in page.text
    form = {"table": table, "qi": ["urbrur", "water", "sex", "age"], "risk_threshold": "0.09"}
    job = job_of(client, client.post("/method/risk", data=form, follow_redirects=False))
    assert job.command == "risk"
    report = json.loads((job.folder / "report.json").read_text(encoding="utf-8"))
    assert report["risk"]["prosecutor"]["records_at_risk"].keys() >= {"0.2", "0.09"}
    words = shlex.split((job.folder / "command.sh").read_text(encoding="utf-8"))
    assert words[words.index("--risk-threshold") + 1] == "0.09"
    words[words.index("--report") + 1] = str(tmp_path / "risk.json")
    cli(*words[1:])
    again = json.loads((tmp_path / "risk.json").read_text(encoding="utf-8"))
    assert again["risk"] == report["risk"] and again["roles"] == report["roles"]
    shown = results(client, job)
    assert "records at risk above 0.09" in shown
    assert "Sensitive attributes" in shown and "<td>relat</td>" in shown


def test_fusion_runs_from_its_configuration_and_its_report_is_shown(
    client: TestClient, tmp_path: Path
) -> None:
    page = client.get("/method/fuse")
    assert page.status_code == 200 and 'name="config"' in page.text
    form = {"config": str(FUSION), "verify": "true", "score": "tds", "max_risk": "0.5"}
    job = job_of(client, client.post("/method/fuse", data=form, follow_redirects=False))
    report = json.loads((job.folder / "report.json").read_text(encoding="utf-8"))
    assert report["records"] == 30162 and report["score"] == "tds"
    # the command line the run's folder holds writes the same fused table
    words = shlex.split((job.folder / "command.sh").read_text(encoding="utf-8"))
    assert words[:3] == ["anonlab", "fuse", str(FUSION)]
    assert "--score" in words and "--max-risk" in words
    for flag, name in (("--output", "fused.csv"), ("--report", "r.json"), ("--html", "r.html")):
        words[words.index(flag) + 1] = str(tmp_path / name)
    cli(*words[1:])
    assert (tmp_path / "fused.csv").read_bytes() == (job.folder / "release.csv").read_bytes()
    download = client.post("/method/fuse", data={**form, "action": "toml"})
    assert download.text.startswith(f"anonlab fuse {FUSION} --output fused.csv")
    parties = client.post("/method/fuse", data={**form, "action": "party"}).text
    commands = [shlex.split(line) for line in parties.splitlines() if line.startswith("anonlab")]
    certs = str((FUSION.parent / "certs").resolve())
    assert commands[0] == ["anonlab", "party", str(FUSION), "--make-certs", certs]
    assert [c[c.index("--party") + 1] for c in commands[1:]] == [
        "provider-a",
        "provider-b",
        "recipient",
    ]
    assert all(c[c.index("--max-risk") + 1] == "0.5" for c in commands[1:])
    assert "--output" not in commands[-1]  # the helper writes its report only
    assert "score: a party takes them from the configuration only" in parties
    shown = results(client, job)
    assert "Anonymity templates" in shown and "provider-a" in shown
    again = client.get("/method/fuse/report", params={"path": str(job.folder / "report.json")})
    assert again.status_code == 200 and "Anonymity templates" in again.text


def test_the_risk_utility_map_compares_the_sessions_runs(
    client: TestClient, tmp_path: Path
) -> None:
    table = tarragona(client)
    columns = header(TARRAGONA)
    form = {"table": table, "columns": columns, "k": "3", "verify": "true"}
    mdav = job_of(client, client.post("/method/microaggregate", data=form, follow_redirects=False))
    page = client.get(f"/compare?table={table}")
    assert page.status_code == 200 and f'value="{mdav.id}"' in page.text
    more = '[[method]]\nname = "gdp"\ncommand = "perturb"\nmethod = "gdp"\nseed = 7\n'
    form = {"table": table, "attacker": columns, "runs": [mdav.id], "more": more}
    job = job_of(client, client.post("/compare", data=form, follow_redirects=False))
    names = [row["name"] for row in job.result.report["comparison"]] if job.result else []
    assert names == [f"microaggregate-{mdav.id}", "gdp"]
    shown = results(client, job)
    assert f"/compare/{job.id}/map.png" in shown and "utility loss" in shown
    image = client.get(f"/compare/{job.id}/map.png")
    assert image.status_code == 200 and image.content.startswith(b"\x89PNG")
    # the CLI, given the run's settings.toml, measures the same
    out = tmp_path / "cli"
    out.mkdir()
    outputs = [
        f"--{name}={out / name}.{ext}" for name, ext in (("report", "json"), ("html", "html"))
    ]
    cli(
        "compare",
        "--config",
        str(job.folder / "settings.toml"),
        *outputs,
        f"--plot={out / 'p.png'}",
    )
    again = json.loads((out / "report.json").read_text(encoding="utf-8"))

    def figures(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in row.items() if k != "cpu_seconds"} for row in rows]

    assert job.result is not None
    assert figures(again["comparison"]) == figures(job.result.report["comparison"])


# ---------------------------------------------------------------------------
# Errors and the token
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "form", "message"),
    [
        ("/method/microaggregate", {"k": "1"}, "k"),
        ("/method/microaggregate", {"k": "three"}, "is not a whole number"),
        ("/method/mask", {"method": "recode", "columns": ["roof", "expend"]}, "breaks"),
        ("/method/mask", {"method": "pram", "columns": ["roof"]}, "expend: quasi-identifier"),
        ("/method/suppress", {"qi": ["roof", "expend"], "alpha": "2"}, "alpha"),
        ("/method/risk", {"qi": ["roof"], "risk_threshold": "3"}, "risk_threshold"),
        ("/method/risk", {"qi": ["roof"]}, "expend: quasi-identifier(s) on the Roles page"),
        ("/method/fuse", {"config": "/no/such/fusion.toml"}, "config: no file"),
        ("/method/fuse", {"config": str(ROOT / "examples" / "tarragona.toml")}, "fusion is"),
        ("/compare", {"attacker": ["roof"], "more": "[[method]\n"}, "not TOML"),
    ],
)
def test_a_bad_parameter_is_the_one_line_error_page(
    client: TestClient, path: str, form: dict[str, Any], message: str
) -> None:
    table = load_testdata(client, ["roof", "expend"])
    reply = client.post(path, data={"table": table, **form}, follow_redirects=False)
    assert reply.status_code == 400
    assert message in reply.text
    errors = [line for line in reply.text.splitlines() if "Error:" in line]
    assert len(errors) == 1
    assert client.app.state.jobs.jobs == {}  # type: ignore[attr-defined]


def test_a_family_page_without_a_table_says_to_load_one(client: TestClient) -> None:
    reply = client.get("/method/mask")
    assert reply.status_code == 400 and "load one on the Load page" in reply.text


@pytest.mark.parametrize(
    "path",
    [
        "/method/microaggregate",
        "/method/mask",
        "/method/suppress",
        "/method/perturb",
        "/method/risk",
        "/method/fuse",
        "/compare",
    ],
)
def test_no_page_without_the_token(tmp_path: Path, path: str) -> None:
    app = create_app(Workspace(tmp_path), token=TOKEN, hosts=allowed_hosts("127.0.0.1", 8765))
    with TestClient(app, base_url="http://127.0.0.1:8765") as bare:
        assert bare.get(path).status_code == 403
        reply = bare.post(path, data={"k": "3"})
        assert reply.status_code == 403 and "Error" not in reply.text
        assert app.state.jobs.jobs == {}
