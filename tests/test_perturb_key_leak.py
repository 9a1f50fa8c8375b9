"""The perturbation report must not give the key away (issue 12, section 5).

The attack measured on the former report: each block of the report listed its
column pairing (part of the key) and ``S_trace``, which for a 2 x 2 rotation
by ``t`` is ``tr((E - A)^T (E - A)) / 2 = 2 (1 - cos t)`` (docs/formulas.md §4,
src/anonlab/perturbation/measures.py). So ``cos t = 1 - S_trace / 2`` and the
pair's matrix is known up to the sign of ``t``; inverting the released pair
with both signs recovers both columns' z-scores, i.e. the columns up to their
mean and scale (correlation 1 with the originals).

Here that attack runs on what a run writes: on the shareable report it must
recover no column (|correlation| <= 0.99 for every column), and on the
custodian's secret report (``internal``), which still lists the blocks, it
must recover the paired columns, so that the test can fail.
"""

from __future__ import annotations

import json
import math
import os
import stat
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray

from anonlab.errors import ReleaseRiskWarning
from anonlab.perturbation import IrreversibleReleaseWarning
from anonlab.runs.perturb import PerturbSettings, run_perturb

RECOVERED = 0.99  # |correlation| above which a column counts as recovered


def _rotation(cos_t: float, sign: float) -> NDArray[np.float64]:
    """The 2 x 2 rotation by ``sign * t`` with ``cos t = cos_t``."""
    sin_t = sign * math.sqrt(max(0.0, 1.0 - cos_t * cos_t))
    return np.array([[cos_t, -sin_t], [sin_t, cos_t]])


def pairing_attack(
    report: dict[str, Any], release: pd.DataFrame, original: pd.DataFrame
) -> dict[str, float]:
    """For each column the attack reaches: its best |correlation| with the original.

    Uses only the report's per-block ``columns`` and ``S_trace`` and the
    release. The release holds ``z @ A.T`` for the z-scores ``z`` of the
    original (docs/perturbation.md), so ``A``'s inverse, ``A.T``, gives
    ``z_hat = y @ A``. Both signs of the angle are tried (the attacker cannot
    tell them apart); the original serves only to score the guesses.
    """
    best: dict[str, float] = {}
    for block in report.get("blocks") or []:
        columns = block.get("columns") or []
        if len(columns) != 2 or "S_trace" not in block:
            continue
        cos_t = 1.0 - float(block["S_trace"]) / 2.0
        y = release[columns].to_numpy(dtype=np.float64)
        for sign in (1.0, -1.0):
            z_hat = y @ _rotation(cos_t, sign)
            for j, name in enumerate(columns):
                r = abs(float(np.corrcoef(z_hat[:, j], original[name])[0, 1]))
                best[name] = max(best.get(name, 0.0), r)
    return best


@pytest.fixture(scope="module", params=["obt", "rbt"])
def runs(
    request: pytest.FixtureRequest, data_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The same Tarragona perturbation (seed 7) with a shareable and a secret report."""
    method = str(request.param)
    out = tmp_path_factory.mktemp(f"leak_{method}")
    data = data_dir / "sdc" / "Tarragona.csv"
    found: dict[str, Any] = {"original": pd.read_csv(data), "out": out}
    for kind in ("shareable", "internal"):
        settings = PerturbSettings.model_validate(
            dict(
                input=str(data),
                method=method,
                seed=7,
                known=[2],
                attack_records=200,
                output=str(out / f"{kind}.csv"),
                report=str(out / f"{kind}.json"),
                html=str(out / f"{kind}.html"),
                internal=kind == "internal",
            )
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ReleaseRiskWarning)  # recoverable: not tested here
            warnings.simplefilter("ignore", IrreversibleReleaseWarning)  # no key file: nor this
            run_perturb(settings)
        found[kind] = (
            json.loads((out / f"{kind}.json").read_text()),
            pd.read_csv(out / f"{kind}.csv"),
            (out / f"{kind}.html").read_text(),
        )
    return found


def test_the_shareable_report_recovers_no_column(runs: dict[str, Any]) -> None:
    report, release, _ = runs["shareable"]
    recovered = {
        c: r for c, r in pairing_attack(report, release, runs["original"]).items() if r > RECOVERED
    }
    assert recovered == {}
    assert "blocks" not in report and "overall" not in report
    text = json.dumps(report)
    assert "S_trace" not in text and "P_trace" not in text


def test_the_secret_report_still_gives_the_pairs_away(runs: dict[str, Any]) -> None:
    """The same attack on the internal report recovers every column of every pair."""
    report, release, _ = runs["internal"]
    assert release.equals(runs["shareable"][1])  # the same perturbation
    pairs = [b["columns"] for b in report["blocks"] if len(b["columns"]) == 2]
    assert pairs
    scores = pairing_attack(report, release, runs["original"])
    recovered = sorted(c for c, r in scores.items() if r > RECOVERED)
    assert recovered == sorted(c for pair in pairs for c in pair)


def test_the_secret_report_is_marked_and_owner_only(runs: dict[str, Any]) -> None:
    report, _, html = runs["internal"]
    assert report["secret"] is True
    assert "SECRET: this report lists each block" in html
    assert html.index("SECRET") < html.index("What an attacker recovers")  # the first section
    if os.name == "posix":
        for name in ("internal.json", "internal.html"):
            mode = stat.S_IMODE((runs["out"] / name).stat().st_mode)
            assert mode == 0o600, (name, oct(mode))
        assert stat.S_IMODE((runs["out"] / "shareable.json").stat().st_mode) != 0o600
    shared_report, _, shared_html = runs["shareable"]
    assert "secret" not in shared_report and "SECRET" not in shared_html


def test_the_shareable_summary_names_no_block(runs: dict[str, Any]) -> None:
    """Only figures over all blocks: their count and sizes, the smallest S and P."""
    shared, internal = runs["shareable"][0], runs["internal"][0]
    summary = shared["privacy_summary"]
    blocks = internal["blocks"]
    assert summary["blocks"] == len(blocks) == shared["blocks_count"]
    assert summary["min_S"] == min(b["S"] for b in blocks)
    assert summary["min_P"] == min(b["P"] for b in blocks)
    sizes = {str(n): sum(len(b["columns"]) == n for b in blocks) for n in (2, 3)}
    assert summary["block_sizes"] == {k: v for k, v in sizes.items() if v}
    assert not any(name in json.dumps(summary) for name in runs["original"].columns)


def test_a_single_pair_withholds_its_figures(tmp_path: Path) -> None:
    """Two columns make one block whose pairing is known: its S would give its angle."""
    rng = np.random.default_rng(3)
    pd.DataFrame(rng.normal(size=(60, 2)), columns=["a", "b"]).to_csv(
        tmp_path / "t.csv", index=False
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        report = run_perturb(
            PerturbSettings(
                input=str(tmp_path / "t.csv"),
                method="rotation",
                seed=1,
                known=[2],
                report=str(tmp_path / "r.json"),
            )
        ).report
    summary = report["privacy_summary"]
    assert summary["min_S"] is None and summary["min_P"] is None
    assert "rotation angle" in summary["withheld"]
