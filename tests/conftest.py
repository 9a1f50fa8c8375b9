"""Shared test fixtures: paths to the bundled data."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The repository's bundled data folder (``data/adult``, ``data/sdc``)."""
    return DATA
