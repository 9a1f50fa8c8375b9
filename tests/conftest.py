"""Shared test fixtures: paths to the bundled data; the engines (:mod:`engines`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engines import (  # noqa: F401  (fixtures: one engine fixture for the core tests)
    dask_client,
    dask_scheduler,
    engine,
    session_dask_engine,
    session_numpy_engine,
)
from report_runs import (  # noqa: F401  (fixtures: the real runs the report tests check)
    fuse_run,
    generalize_run,
    micro_runs,
    party_runs,
    perturb_runs,
)

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The repository's bundled data folder (``data/adult``, ``data/sdc``)."""
    return DATA
