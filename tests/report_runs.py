"""The real runs whose reports several modules check, made once per test process.

``generalize`` on Adult, ``microaggregate``/``evaluate``/``tradeoff`` on
Tarragona, ``perturb``/``attack`` (and the custodian's internal copy), ``fuse``
and a three-process ``party`` run, each with ``--report`` and ``--html``. The
HTML report tests (``test_htmlreport*``) check the pages against the JSON and
``test_report_plots`` checks every figure of the same reports: session-scoped
here (imported by ``conftest``), each run is made once per test process, not
once per module. The tests only read what these runs wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from netutil import free_ports

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def generalize_run(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("htmlreport")
    config = data_dir.parent / "examples" / "adult.toml"
    result = runner.invoke(
        app,
        [
            "generalize",
            "--config",
            str(config),
            "--output",
            str(out / "a.csv"),
            "--report",
            str(out / "a.json"),
            "--html",
            str(out / "a.html"),
            "--plot",
            str(out / "a.png"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((out / "a.json").read_text())
    return {"dir": out, "report": report, "html": (out / "a.html").read_text()}


@pytest.fixture(scope="session")
def micro_runs(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("micro")
    data = data_dir / "sdc" / "Tarragona.csv"
    examples = data_dir.parent / "examples"
    # the bundled examples (k = 3; the paper's k = 3..10 and weights), outputs moved to out
    commands = {
        "microaggregate": [
            "microaggregate",
            "--config",
            str(examples / "tarragona.toml"),
            "--output",
            str(out / "t3.csv"),
        ],
        "evaluate": ["evaluate", str(data), str(out / "t3.csv")],
        "tradeoff": [
            "tradeoff",
            "--config",
            str(examples / "tarragona_tradeoff.toml"),
            "--plot",
            str(out / "ru.png"),
        ],
    }
    found: dict[str, Any] = {"dir": out, "data": pd.read_csv(data)}
    for name, args in commands.items():
        result = runner.invoke(
            app,
            [
                *args,
                "--report",
                str(out / f"{name}.json"),
                "--html",
                str(out / f"{name}.html"),
                "--quiet",
            ],
        )
        assert result.exit_code == 0, (name, result.output)
        found[name] = (
            json.loads((out / f"{name}.json").read_text()),
            (out / f"{name}.html").read_text(),
        )
    found["masked"] = pd.read_csv(out / "t3.csv")
    return found


@pytest.fixture(scope="session")
def perturb_runs(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("perturb")
    data = data_dir / "sdc" / "Tarragona.csv"
    commands = {
        # the bundled example (obt, seed 7, min privacy 0.5), its outputs moved to out
        "perturb": [
            "perturb",
            "--config",
            str(data_dir.parent / "examples" / "perturb_tarragona.toml"),
            "--library",
            str(out / "lib.json"),
            "--output",
            str(out / "rel.csv"),
            "--key",
            str(out / "key.json"),
            "--attack-records",
            "400",
        ],
        "attack": [
            "attack",
            str(data),
            str(out / "rel.csv"),
            "--known",
            "2,5",
            "--max-records",
            "400",
        ],
        # the custodian's secret copy of the same run
        "internal": [
            "perturb",
            "--config",
            str(data_dir.parent / "examples" / "perturb_tarragona.toml"),
            "--library",
            str(out / "lib.json"),
            "--output",
            str(out / "rel2.csv"),
            "--key",
            str(out / "key2.json"),
            "--attack-records",
            "400",
            "--internal",
        ],
    }
    found: dict[str, Any] = {"dir": out}
    for name, args in commands.items():
        result = runner.invoke(
            app,
            [
                *args,
                "--report",
                str(out / f"{name}.json"),
                "--html",
                str(out / f"{name}.html"),
                "--quiet",
            ],
        )
        assert result.exit_code == 0, (name, result.output)
        found[name] = (
            json.loads((out / f"{name}.json").read_text()),
            (out / f"{name}.html").read_text(),
        )
    found["data"] = pd.read_csv(data)
    found["release"] = pd.read_csv(out / "rel.csv")
    found["key"] = json.loads((out / "key.json").read_text())
    return found


@pytest.fixture(scope="session")
def fuse_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("fuse")
    result = runner.invoke(
        app,
        [
            "fuse",
            str(REPO / "examples" / "fusion" / "fusion.toml"),
            "--output",
            str(out / "fused.csv"),
            "--report",
            str(out / "fused.json"),
            "--html",
            str(out / "fused.html"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    return {
        "dir": out,
        "report": json.loads((out / "fused.json").read_text()),
        "html": (out / "fused.html").read_text(),
    }


def _party_setup(folder: Path, data_dir: Path) -> Path:
    """Two providers (300 Adult records, split by columns) and a helper, with certificates."""
    adult = data_dir / "adult"
    frame = pd.read_csv(adult / "adult.csv", sep=";", dtype=str).head(300)
    frame.insert(0, "id", [f"r{i}" for i in range(len(frame))])
    split = {
        "provider-a": ["age", "workclass", "education"],
        "provider-b": ["marital-status", "race", "sex"],
    }
    ports = free_ports(6)
    lines = [
        "[fusion]",
        'class = "salary-class"',
        'id = "id"',
        'score = "tds"',
        'insensitive = ["education"]',
        "",
        "[[templates]]",
        'qid = ["age", "workclass", "marital-status", "race", "sex"]',
        "k = 15",
        "",
        "[taxonomies]",
        'age = "continuous"',
    ]
    for a in ("workclass", "education", "marital-status", "race", "sex"):
        lines.append(f'"{a}" = {json.dumps(str(adult / f"hierarchy_{a}.csv"))}')
    lines += [
        "",
        "[tls]",
        'ca = "certs/ca.crt"',
        'cert = "certs/{party}.crt"',
        'key = "certs/{party}.key"',
    ]
    parties = [("provider-a", "provider"), ("provider-b", "provider"), ("recipient", "helper")]
    for i, (name, role) in enumerate(parties):
        lines += [
            "",
            "[[parties]]",
            f'id = "{name}"',
            f'role = "{role}"',
            'host = "127.0.0.1"',
            f"port = {ports[2 * i]}",
            f"mpc_port = {ports[2 * i + 1]}",
        ]
        if role == "provider":
            frame[["id", *split[name], "salary-class"]].to_csv(folder / f"{name}.csv", index=False)
            lines += [f'file = "{name}.csv"', f"columns = {json.dumps(split[name])}"]
    config = folder / "fusion.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["party", str(config), "--make-certs", str(folder / "certs")])
    assert result.exit_code == 0, result.output
    return config


@pytest.fixture(scope="session")
def party_runs(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("party")
    config = _party_setup(folder, data_dir)
    procs = {}
    for name in ("provider-a", "provider-b", "recipient"):
        args = [
            sys.executable,
            "-m",
            "anonlab",
            "party",
            str(config),
            "--party",
            name,
            "--report",
            str(folder / f"{name}.json"),
            "--html",
            str(folder / f"{name}.html"),
            "--timeout",
            "60",
            "--quiet",
        ]
        if name != "recipient":
            args += ["--output", str(folder / f"fused_{name}.csv")]
        procs[name] = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)
        )
    runs: dict[str, Any] = {"dir": folder}
    for name, proc in procs.items():
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, (name, err)
        runs[name] = (
            json.loads((folder / f"{name}.json").read_text()),
            (folder / f"{name}.html").read_text(),
        )
    return runs
