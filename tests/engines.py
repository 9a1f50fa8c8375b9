"""One fixture for every engine: the core tests run on ``numpy`` and on ``dask`` alike.

As narwhals tests each backend through one ``constructor`` fixture, a test
that takes :func:`engine` runs once per engine and gets an
:class:`EngineCase`: the engine's name, the command-line flags and settings
keys that select it, an open :class:`anonlab.engine.Engine` for the Python
API, and helpers that turn a pandas frame into that engine's input (a
Parquet folder of several parts; a Dask DataFrame on ``dask``, the pandas
frame itself on ``numpy``).

Dask runs on one 2-worker ``LocalCluster`` of processes (1 thread and 1 GB
each) per test session (per xdist worker), started the first time a test
needs it (:func:`dask_client`), so a run of numpy-only tests starts none.
The conftest imports these fixtures.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from anonlab.engine import Engine, open_engine

ENGINE_NAMES = ("numpy", "dask")
#: rows a task reads at a time in the suite: small, so that a part is read in several batches
SUITE_BATCH_ROWS = 4096
#: cut points of :meth:`EngineCase.parts`, as shares of the rows (uneven on purpose)
PART_SHARES = (0.1, 0.35, 0.7)


def write_parts(
    frame: pd.DataFrame, folder: Path, bounds: list[int], row_group_size: int | None = None
) -> Path:
    """``frame`` as a new folder of Parquet parts ``part-<i>.parquet``, cut at ``bounds``
    (row positions, first 0 and last ``len(frame)``)."""
    folder.mkdir(parents=True)
    for i, (start, stop) in enumerate(itertools.pairwise(bounds)):
        part = pa.Table.from_pandas(frame.iloc[start:stop], preserve_index=False)
        pq.write_table(part, folder / f"part-{i}.parquet", row_group_size=row_group_size)
    return folder


def assert_refused(args: list[str], tmp_path: Path, needle: str) -> str:
    """``anonlab args`` fails with exit code 2 in one line ``Error: ...`` naming
    ``needle``, and leaves ``tmp_path`` as it was (nothing written, nothing left behind);
    returns that line."""
    from typer.testing import CliRunner

    from anonlab.cli.app import app

    before = sorted(tmp_path.rglob("*"))
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    assert needle in lines[0]
    assert sorted(tmp_path.rglob("*")) == before
    return lines[0]


@dataclass(frozen=True)
class EngineCase:
    """What a test needs to run a command or an API call on one engine.

    ``api`` is open for the whole session: use it, never close it.
    ``scheduler`` is the shared cluster's address on ``dask``, else ``None``.
    ``workdir`` is the test's own folder for inputs and outputs.
    """

    name: str
    api: Engine
    scheduler: str | None
    workdir: Path
    client: Any = None

    @property
    def flags(self) -> list[str]:
        """The command-line flags that run a command on this engine."""
        flags = ["--engine", self.name]
        return [*flags, "--scheduler", self.scheduler] if self.scheduler else flags

    @property
    def settings(self) -> dict[str, Any]:
        """The settings keys (TOML keys, ``*Settings`` fields) that run a command here."""
        return {"engine": self.name, **({"scheduler": self.scheduler} if self.scheduler else {})}

    def output(self, name: str) -> str:
        """A folder output in the work folder (its trailing ``/`` makes it partitioned)."""
        return f"{self.workdir / name}/"

    def parts(self, frame: pd.DataFrame, name: str) -> Path:
        """``frame`` as a Parquet folder of four uneven parts (cut at :data:`PART_SHARES`)."""
        cuts = [0, *(round(share * len(frame)) for share in PART_SHARES), len(frame)]
        return write_parts(frame, self.workdir / name, cuts)

    def frame(self, frame: pd.DataFrame, partitions: int = 4) -> Any:
        """``frame`` as the Python API takes it here: a Dask DataFrame of ``partitions``
        partitions on ``dask``, the pandas frame itself on ``numpy``."""
        if self.name != "dask":
            return frame
        dd = pytest.importorskip("dask.dataframe")
        return dd.from_pandas(frame, npartitions=partitions)

    def compute(self, frame: Any) -> pd.DataFrame:
        """A frame the Python API returned, as pandas (computed on the cluster on ``dask``)."""
        if isinstance(frame, pd.DataFrame):
            return frame
        computed: pd.DataFrame = self.client.compute(frame).result()
        return computed


@pytest.fixture(scope="session")
def dask_client() -> Iterator[Any]:
    """A client of the session's 2-worker ``LocalCluster`` (processes, 1 thread and 1 GB
    each), started on first use and closed when the session ends."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        memory_limit="1GB",
        processes=True,
        dashboard_address=":0",
        silence_logs=logging.CRITICAL,
    )
    client = distributed.Client(cluster, set_as_default=False)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.fixture(scope="session")
def dask_scheduler(dask_client: Any) -> str:
    """The address of the session's cluster (``tcp://127.0.0.1:port``)."""
    address: str = dask_client.scheduler.address
    return address


@pytest.fixture(scope="session")
def session_numpy_engine() -> Iterator[Engine]:
    """The session's NumPy engine (batches of :data:`SUITE_BATCH_ROWS` rows)."""
    opened = open_engine("numpy", batch_rows=SUITE_BATCH_ROWS)
    yield opened
    opened.close()


@pytest.fixture(scope="session")
def session_dask_engine(dask_scheduler: str) -> Iterator[Engine]:
    """The session's Dask engine on the shared cluster (closed before the cluster is)."""
    opened = open_engine("dask", scheduler=dask_scheduler, batch_rows=SUITE_BATCH_ROWS)
    yield opened
    opened.close()


@pytest.fixture(params=ENGINE_NAMES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> EngineCase:
    """The engine a test runs on: once ``numpy``, once ``dask`` (on the shared cluster)."""
    name: str = request.param
    opened: Engine = request.getfixturevalue(f"session_{name}_engine")
    if name == "dask":
        client = request.getfixturevalue("dask_client")
        return EngineCase(name, opened, str(client.scheduler.address), tmp_path, client)
    return EngineCase(name, opened, None, tmp_path)
