"""A perturbation key is validated fully on load: its digest, shapes, numbers and structure."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from anonlab.errors import AnonlabError
from anonlab.perturbation import invert, perturb
from anonlab.perturbation.key import PerturbationKey, content_digest

Edit = Callable[[dict[str, Any]], None]
pytestmark = pytest.mark.filterwarnings("ignore::anonlab.perturbation.RecoverableReleaseWarning")


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    values = rng.normal(size=(40, 5)) * [1, 5, 50, 0.1, 3] + [0, 10, -4, 2, 100]
    return pd.DataFrame(values, columns=[f"c{i}" for i in range(5)])


def _key(method: str = "obt") -> dict[str, Any]:
    return perturb(_frame(), method=method, seed=5).key.to_dict()


def _reseal(data: dict[str, Any]) -> None:
    """Recompute the digest after an edit (as a deliberate editor could)."""
    data.pop("sha256", None)
    data["sha256"] = content_digest(data)


def test_written_key_carries_its_digest_and_reads_back(tmp_path: Path) -> None:
    p = perturb(_frame(), method="gdp", seed=5, noise=0.3)
    data = p.key.to_dict()
    assert data["version"] == 3 and data["noise"]["stream"] == "blocked"  # blocked gdp noise
    assert len(data["sha256"]) == 64
    assert perturb(_frame(), method="obt", seed=5).key.to_dict()["version"] == 2
    path = tmp_path / "key.json"
    p.key.save(path)
    loaded = PerturbationKey.load(path)
    assert np.array_equal(loaded.stds, p.key.stds)
    assert np.allclose(
        invert(p.release, loaded).to_numpy(), _frame().to_numpy(), rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d["stds"].__setitem__(0, d["stds"][0] * 1.5),
        lambda d: d["means"].__setitem__(2, d["means"][2] + 4),
        lambda d: d["integer"].__setitem__(1, True),
        lambda d: d.__setitem__("records", d["records"]),  # unchanged: must pass (control below)
    ],
)
def test_an_edited_key_is_refused(tmp_path: Path, edit: Edit) -> None:
    """Editing stds shifted inversions by up to 4 units before: now the load fails."""
    data = _key()
    edited = copy.deepcopy(data)
    edit(edited)
    path = tmp_path / "key.json"
    path.write_text(json.dumps(edited))
    if edited == data:
        PerturbationKey.load(path)
        return
    with pytest.raises(AnonlabError, match="was changed after it was written") as info:
        PerturbationKey.load(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_digest_survives_the_json_round_trip_of_every_method() -> None:
    for method in ("obt", "rbt", "rotation", "gdp"):
        data = json.loads(json.dumps(_key(method)))
        PerturbationKey.from_dict(data)


def test_an_unsealed_version_2_key_is_refused() -> None:
    data = _key()
    del data["sha256"]
    with pytest.raises(AnonlabError, match="has no integrity digest"):
        PerturbationKey.from_dict(data)


def test_an_unknown_version_is_refused() -> None:
    data = _key()
    data["version"] = 7
    with pytest.raises(AnonlabError, match="format version 7"):
        PerturbationKey.from_dict(data)


def _version_1(data: dict[str, Any]) -> dict[str, Any]:
    """The key as anonlab wrote it before keys were sealed."""
    old = {k: v for k, v in data.items() if k != "sha256"}
    old["version"] = 1
    return old


def test_a_version_1_key_is_read_and_validated() -> None:
    """Old keys have no digest: they still undo their release, after every other check."""
    p = perturb(_frame(), method="rotation", seed=5)
    old = _version_1(p.key.to_dict())
    key = PerturbationKey.from_dict(old)
    assert np.allclose(invert(p.release, key).to_numpy(), _frame().to_numpy())
    for bad, message in ((float("nan"), "damaged"), (-1.0, "not positive"), (0.0, "not positive")):
        broken = copy.deepcopy(old)
        broken["stds"][0] = bad
        with pytest.raises(AnonlabError, match=message):
            PerturbationKey.from_dict(broken)


@pytest.mark.parametrize(
    ("method", "edit", "message"),
    [
        (
            "rotation",
            lambda d: d["blocks"][0]["matrix"][0].__setitem__(
                0, d["blocks"][0]["matrix"][0][0] + 1e-7
            ),
            "not orthogonal",
        ),
        (
            "obt",
            lambda d: d["blocks"][0]["matrix"][1].__setitem__(0, float("inf")),
            "damaged|orthogonal",
        ),
        (
            "obt",
            lambda d: d["blocks"].__setitem__(
                slice(None),
                [
                    {"columns": d["columns"][:4], "matrix": np.eye(4).tolist()},
                    {"columns": d["columns"][4:], "matrix": [[1.0]]},
                ],
            ),
            "pairs or triples",
        ),
        ("rotation", lambda d: d.__setitem__("translation", [0.0] * 5), "no translation or noise"),
        (
            "rotation",
            lambda d: d.__setitem__("noise", {"scale": 0.1, "seed": 3}),
            "no translation or noise",
        ),
        ("gdp", lambda d: d.__setitem__("translation", None), "needs its translation"),
        ("gdp", lambda d: d["noise"].__setitem__("seed", None), "noise seed"),
        (
            "rotation",
            lambda d: d["release_fingerprint"]["stds"].__setitem__(0, -1.0),
            "negative deviation",
        ),
        ("obt", lambda d: d.__setitem__("means", d["means"][:3]), "damaged"),
    ],
)
def test_inconsistent_content_is_refused_even_when_resealed(
    method: str, edit: Edit, message: str
) -> None:
    """Structure is checked on its own, so a resealed (or old, unsealed) key cannot pass."""
    data = _key(method)
    edit(data)
    _reseal(data)
    with pytest.raises(AnonlabError, match=message):
        PerturbationKey.from_dict(data)
    with pytest.raises(AnonlabError, match=message):
        PerturbationKey.from_dict(_version_1(data))


def test_invert_command_refuses_an_edited_key(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from anonlab.cli.app import app

    p = perturb(_frame(), method="rbt", seed=5)
    release, key, out = tmp_path / "r.csv", tmp_path / "k.json", tmp_path / "back.csv"
    p.release.to_csv(release, index=False)
    data = p.key.to_dict()
    data["stds"][3] *= 2
    key.write_text(json.dumps(data))
    result = CliRunner().invoke(
        app, ["perturb", "--invert", "--key", str(key), str(release), "--output", str(out)]
    )
    assert result.exit_code == 2
    assert "was changed after it was written" in result.output and not out.exists()


def test_version_and_noise_stream_must_agree() -> None:
    """A version-3 key holds blocked gdp noise (an older anonlab refuses version 3 rather
    than invert with the single stream); a key whose version and stream disagree is
    refused."""
    data = perturb(_frame(), method="gdp", seed=5, noise=0.3).key.to_dict()
    data["version"] = 2
    _reseal(data)
    with pytest.raises(AnonlabError, match="version 2 with noise stream 'blocked'"):
        PerturbationKey.from_dict(data)
