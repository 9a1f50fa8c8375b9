"""The MPyC secure argmax between real processes on loopback, against the plain argmax."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonlab.errors import AnonlabError
from anonlab.fusion.certs import make_certificates
from anonlab.fusion.channel import NO_CANDIDATE, SCORE_SCALE, plain_argmax
from anonlab.fusion.secure_max import SecureMax
from anonlab.fusion.transport import Endpoint
from netutil import free_ports

# One party of a secure-max run: argv = party id, JSON spec; prints one JSON line.
PARTY_SCRIPT = r"""
import json, os, sys
from anonlab.errors import AnonlabError
from anonlab.fusion.secure_max import SecureMax
from anonlab.fusion.transport import Endpoint, TlsFiles

me, spec = sys.argv[1], json.loads(sys.argv[2])
parties = [Endpoint(n, "127.0.0.1", port) for n, port in spec["parties"]]
tls = TlsFiles.for_party(spec["certs"] + "/ca.crt", spec["certs"] + "/{party}.crt",
                         spec["certs"] + "/{party}.key", me)
smax = SecureMax(parties, me, spec["providers"], tls=tls, timeout=spec["timeout"])
out = []
try:
    smax.start()
    for r, scores in enumerate(spec["rounds"]):
        if me == spec.get("die") and r == spec.get("die_at"):
            os._exit(3)
        score = scores[spec["providers"].index(me)] if me in spec["providers"] else None
        out.append(smax.argmax(score))
    smax.close()
except AnonlabError as exc:
    print(json.dumps({"party": me, "error": str(exc), "out": out}))
    sys.exit(2)
print(json.dumps({"party": me, "out": out, "bytes": smax.bytes_sent()}))
"""


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("certs")
    make_certificates(folder, [(n, "127.0.0.1") for n in ("a", "b", "c", "h")])
    return folder


def run_parties(
    tmp_path: Path,
    certs: Path,
    names: list[str],
    providers: list[str],
    rounds: list[list[int]],
    **extra: object,
) -> dict[str, dict[str, Any]]:
    script = tmp_path / "smax_party.py"
    script.write_text(PARTY_SCRIPT, encoding="utf-8")
    spec = {
        "parties": list(zip(names, free_ports(len(names)), strict=True)),
        "providers": providers,
        "rounds": rounds,
        "certs": str(certs),
        "timeout": 20,
        **extra,
    }
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), n, json.dumps(spec)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in names
    ]
    results: dict[str, dict[str, Any]] = {}
    for name, proc in zip(names, procs, strict=True):
        stdout, stderr = proc.communicate(timeout=90)
        lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
        if proc.returncode == 3:  # the party told to die
            results[name] = {"code": 3}
            continue
        assert lines, f"party {name} printed nothing; stderr: {stderr[-2000:]}"
        assert len(stdout.splitlines()) == len(lines), f"MPyC printed to stdout: {stdout!r}"
        results[name] = {**json.loads(lines[-1]), "code": proc.returncode}
    return results


def random_rounds(n_providers: int, n_rounds: int, seed: int) -> list[list[int]]:
    """Scores with ties, sentinels, the extremes and near-equal values."""
    rng = random.Random(seed)
    pool = [NO_CANDIDATE, 0, 1, SCORE_SCALE - 1, SCORE_SCALE]
    rounds = [[NO_CANDIDATE] * n_providers, [SCORE_SCALE] * n_providers, [0] * n_providers]
    for _ in range(n_rounds):
        kind = rng.random()
        if kind < 0.3:
            row = [rng.choice(pool) for _ in range(n_providers)]
        elif kind < 0.5:
            base = rng.randrange(SCORE_SCALE)
            row = [base + rng.randrange(2) for _ in range(n_providers)]
        else:
            row = [rng.randrange(-1, SCORE_SCALE + 1) for _ in range(n_providers)]
        rounds.append(row)
    return rounds


@pytest.mark.parametrize(
    ("names", "providers"),
    [(["a", "b", "h"], ["a", "b"]), (["a", "b", "c"], ["a", "b", "c"])],
    ids=["2-providers-helper", "3-providers"],
)
def test_secure_argmax_equals_plain_argmax(
    tmp_path: Path, certs: Path, names: list[str], providers: list[str]
) -> None:
    rounds = random_rounds(len(providers), 25, seed=len(names) * 7 + len(providers))
    expected = [plain_argmax(dict(enumerate(row))) for row in rounds]
    results = run_parties(tmp_path, certs, names, providers, rounds)
    for name in names:
        assert results[name]["code"] == 0, results[name]
        assert results[name]["out"] == expected, name
        assert isinstance(results[name]["bytes"], int) and results[name]["bytes"] > 0


scores = st.one_of(
    st.just(NO_CANDIDATE), st.sampled_from([0, 1, SCORE_SCALE]), st.integers(0, SCORE_SCALE)
)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds=st.lists(st.lists(scores, min_size=3, max_size=3), min_size=1, max_size=12))
def test_secure_argmax_property(certs: Path, rounds: list[list[int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = run_parties(Path(tmp), certs, ["a", "b", "c"], ["a", "b", "c"], rounds)
    expected = [plain_argmax(dict(enumerate(row))) for row in rounds]
    assert all(r["code"] == 0 and r["out"] == expected for r in results.values()), results


def test_a_party_that_dies_stops_the_others(tmp_path: Path, certs: Path) -> None:
    rounds = random_rounds(2, 6, seed=1)
    results: dict[str, dict[str, Any]] = run_parties(
        tmp_path, certs, ["a", "b", "h"], ["a", "b"], rounds, die="b", die_at=3
    )
    assert results["b"]["code"] == 3
    assert "party 'b' left during a secure-max round" in results["a"]["error"]
    for name in ("a", "h"):
        assert results[name]["code"] == 2
        # h may see a's reaction to b's death first; b may die before its last shares left
        assert "left during a secure-max round" in results[name]["error"]
        assert 2 <= len(results[name]["out"]) <= 3


def test_two_parties_are_refused() -> None:
    parties = [Endpoint("a", "127.0.0.1", 1), Endpoint("b", "127.0.0.1", 2)]
    with pytest.raises(AnonlabError, match=r"at least 3 parties.*no secrecy.*helper"):
        SecureMax(parties, "a", ["a", "b"], tls=None)


def test_scores_are_checked_before_any_round() -> None:
    parties = [Endpoint(n, "127.0.0.1", i + 1) for i, n in enumerate("abh")]
    smax = SecureMax(parties, "a", ["a", "b"], tls=None)
    with pytest.raises(RuntimeError, match="start"):
        smax.argmax(5)
    for bad in (None, -2, 2**42):
        with pytest.raises(ValueError, match="outside"):
            smax.argmax(bad)
    helper = SecureMax(parties, "h", ["a", "b"], tls=None)
    with pytest.raises(ValueError, match="helper party inputs no score"):
        helper.argmax(3)
    with pytest.raises(AnonlabError, match="not in the party list"):
        SecureMax(parties, "z", ["a", "b"], tls=None)
