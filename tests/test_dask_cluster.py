"""The Dask engine on a cluster of its own: ``dask scheduler`` and ``dask worker`` processes.

The workers run in a folder of their own, as workers on other machines would: the
driver resolves relative input and output paths before it hands pieces out, and a
worker that cannot read a piece says which piece and which worker.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.engine import open_engine, open_table
from anonlab.errors import AnonlabError
from anonlab.io import read_table

pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO / "data" / "adult"
TARRAGONA = REPO / "data" / "sdc" / "Tarragona.csv"
QIS = ("age", "sex", "race")
runner = CliRunner()


def _dask_command() -> list[str]:
    script = Path(sys.executable).with_name("dask")
    if not script.exists():
        pytest.skip("the dask command is not installed beside this Python")
    return [str(script)]


def _wait_for(path: Path, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists() or not path.read_text(encoding="utf-8").strip():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not start within {seconds:.0f} s")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A scheduler and two single-thread workers on localhost, each process in a folder of
    its own; the scheduler's address."""
    root = tmp_path_factory.mktemp("cluster")
    info = root / "scheduler.json"
    dask = _dask_command()
    processes = [
        subprocess.Popen(
            [
                *dask,
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--dashboard-address",
                ":0",
                "--scheduler-file",
                str(info),
            ],
            cwd=root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    ]
    try:
        _wait_for(info, "the scheduler")
        address: str = json.loads(info.read_text(encoding="utf-8"))["address"]
        for name in ("a", "b"):
            folder = root / f"worker-{name}"
            folder.mkdir()
            processes.append(
                subprocess.Popen(
                    [
                        *dask,
                        "worker",
                        address,
                        "--host",
                        "127.0.0.1",
                        "--nthreads",
                        "1",
                        "--memory-limit",
                        "1GB",
                        "--name",
                        name,
                        "--no-dashboard",
                    ],
                    cwd=folder,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
        distributed = pytest.importorskip("distributed")
        client = distributed.Client(address, timeout=60)
        with client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for process in reversed(processes):
            with_group = os.getpgid(process.pid) if process.poll() is None else None
            if with_group is not None:
                os.killpg(with_group, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of the driver's own, the current folder, with the inputs copied in."""
    shutil.copy(ADULT / "adult.csv", tmp_path / "adult.csv")
    shutil.copy(TARRAGONA, tmp_path / "tarragona.csv")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(args: list[str]) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(list(frame.columns)).reset_index(drop=True)


def _generalize(engine: list[str], output: str, report: str) -> list[str]:
    qi = [arg for q in QIS for arg in ("--qi", f"{q}={ADULT / f'hierarchy_{q}.csv'}")]
    return [
        "generalize",
        "adult.csv",
        "--delimiter",
        ";",
        *qi,
        "--other",
        "insensitive",
        "--k",
        "10",
        "--suppression",
        "1%",
        "--output",
        output,
        "--report",
        report,
        "--quiet",
        *engine,
    ]


def test_generalize_and_risk_with_relative_paths(cluster: str, here: Path) -> None:
    _run(_generalize(["--engine", "numpy"], "numpy/", "numpy.json"))
    _run(_generalize(["--engine", "dask", "--scheduler", cluster], "dask/", "dask.json"))
    report = json.loads((here / "dask.json").read_text(encoding="utf-8"))
    assert report["verified"] is True
    expected = json.loads((here / "numpy.json").read_text(encoding="utf-8"))
    assert report["transformation"] == expected["transformation"]
    pd.testing.assert_frame_equal(
        _sorted(read_table(here / "dask")), _sorted(read_table(here / "numpy"))
    )
    risks = {}
    for name, flags in (
        ("numpy", ["--engine", "numpy"]),
        ("dask", ["--engine", "dask", "--scheduler", cluster]),
    ):
        _run(
            [
                "risk",
                "dask/",
                "--qi",
                ",".join(QIS),
                "--other",
                "insensitive",
                "--report",
                f"risk-{name}.json",
                "--quiet",
                *flags,
            ]
        )
        risks[name] = json.loads((here / f"risk-{name}.json").read_text(encoding="utf-8"))
    assert risks["dask"]["risk"] == risks["numpy"]["risk"]


def test_perturb_with_relative_paths(cluster: str, here: Path) -> None:
    for name, flags in (
        ("numpy", ["--engine", "numpy"]),
        ("dask", ["--engine", "dask", "--scheduler", cluster]),
    ):
        _run(
            [
                "perturb",
                "tarragona.csv",
                "--columns",
                "all-numeric",
                "--other",
                "insensitive",
                "--seed",
                "7",
                "--output",
                f"{name}/",
                "--key",
                f"{name}-key.json",
                "--quiet",
                *flags,
            ]
        )
    pd.testing.assert_frame_equal(read_table(here / "dask"), read_table(here / "numpy"))


def test_a_piece_no_worker_can_read_names_the_piece_and_the_worker(
    cluster: str, here: Path
) -> None:
    from anonlab.engine.kernels import piece_moments

    table = open_table("adult.csv", csv_block=400_000)
    (here / "adult.csv").unlink()  # gone after the driver planned the pieces
    engine: Any = open_engine("dask", scheduler=cluster)
    with engine, pytest.raises(AnonlabError) as caught:
        engine.map_pieces(table, piece_moments, ["age"], 1000)
    message = str(caught.value)
    assert caught.value.parameter == "input"
    assert message.startswith("input: worker tcp://127.0.0.1:")
    assert f"of '{here / 'adult.csv'}'" in message and "cannot read piece" in message
