"""Real multi-process fusion runs on loopback: `anonlab party` per party, started by the test."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from anonlab.errors import AnonlabError
from anonlab.fusion.certs import make_certificates
from anonlab.fusion.config import load_config
from anonlab.fusion.engine import fuse
from anonlab.fusion.transport import Channel, Endpoint, TlsFiles
from anonlab.htmlreport import render_html
from anonlab.verify.fusion import check_templates
from netutil import free_ports

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "data" / "adult"
RECORDS = 400

# Run the CLI in a subprocess with one engine or transport function replaced (fault injection).
PATCHED_CLI = r"""
import os, sys
fault = os.environ["ANONLAB_TEST_FAULT"]
if fault == "die-in-round":
    import anonlab.fusion.party as party
    original = party.PartyNetwork.argmax
    def argmax(self, scores):
        if len(self.winners) == 2:
            os._exit(5)
        return original(self, scores)
    party.PartyNetwork.argmax = argmax
elif fault == "hang-in-round":
    import time
    import anonlab.fusion.party as party
    original = party.PartyNetwork.argmax
    def argmax(self, scores):
        if len(self.winners) == 2:
            time.sleep(120)
        return original(self, scores)
    party.PartyNetwork.argmax = argmax
elif fault == "garbage-instructions":
    import anonlab.fusion.engine as engine
    engine.encode_instructions = lambda instr: b"these bytes are not instructions"
elif fault == "malformed-frame":
    import anonlab.fusion.transport as transport
    original = transport.FrameProtocol.send
    def send(self, kind, payload):
        if kind == transport.DATA:
            self.transport.write(b"\xff\x00\x00\x00\x01!")
            return
        original(self, kind, payload)
    transport.FrameProtocol.send = send
from anonlab.cli.app import main
sys.argv = ["anonlab", *sys.argv[1:]]
main()
"""


def _quote(value: Any) -> str:
    return json.dumps(value)


def split_hosts(config: Path) -> dict[str, Path]:
    """One folder per party, as on separate hosts: the config, the CA, its own key pair
    and (a provider) its own file only. Returns each party's config path."""
    out = {}
    for entry in tomllib.loads(config.read_text())["parties"]:
        party = entry["id"]
        home = config.parent / "hosts" / party
        (home / "certs").mkdir(parents=True)
        (home / "fusion.toml").write_bytes(config.read_bytes())
        for name in ("ca.crt", f"{party}.crt", f"{party}.key"):
            (home / "certs" / name).write_bytes((config.parent / "certs" / name).read_bytes())
        if "file" in entry:
            (home / entry["file"]).write_bytes((config.parent / entry["file"]).read_bytes())
        out[party] = home / "fusion.toml"
    return out


def write_setup(folder: Path, providers: int, helper: bool, k: int = 20) -> Path:
    """Provider files cut from Adult, taxonomies, certificates and fusion.toml in ``folder``."""
    frame = pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str).head(RECORDS)
    frame.insert(0, "id", [f"r{i:04d}" for i in range(len(frame))])
    splits = {
        2: [
            ["age", "workclass", "education", "occupation"],
            ["marital-status", "race", "sex", "native-country"],
        ],
        3: [
            ["age", "workclass", "education"],
            ["marital-status", "occupation"],
            ["race", "sex", "native-country"],
        ],
    }[providers]
    names = [f"provider-{chr(ord('a') + i)}" for i in range(providers)]
    parties: list[tuple[str, str, list[str]]] = [
        (n, "provider", c) for n, c in zip(names, splits, strict=True)
    ]
    if helper:
        parties.append(("recipient", "helper", []))
    ports = free_ports(2 * len(parties))
    lines = [
        "[fusion]",
        'class = "salary-class"',
        'id = "id"',
        'score = "sensitivity"',
        "keep_id = true",
        "",
        "[[templates]]",
        'qid = ["age", "workclass", "marital-status", "race", "sex", "native-country"]',
        f"k = {k}",
        "",
        "[[templates]]",
        'qid = ["education", "occupation"]',
        f"k = {k}",
        "",
        "[taxonomies]",
        'age = "continuous"',
    ]
    for a in (
        "workclass",
        "education",
        "marital-status",
        "occupation",
        "race",
        "sex",
        "native-country",
    ):
        lines.append(f"{_quote(a)} = {_quote(str(ADULT / f'hierarchy_{a}.csv'))}")
    lines += [
        "",
        "[sensitivity]",
        "default = 4",
        "attributes = { education = 3, occupation = 3, race = 3 }",
        "",
        "[tls]",
        'ca = "certs/ca.crt"',
        'cert = "certs/{party}.crt"',
        'key = "certs/{party}.key"',
    ]
    factor = 1.0 / providers
    for i, (name, role, columns) in enumerate(parties):
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
            frame[["id", *columns, "salary-class"]].sample(frac=1.0, random_state=i).to_csv(
                folder / f"{name}.csv", index=False
            )
            lines += [
                f'file = "{name}.csv"',
                f"columns = {_quote(columns)}",
                f"factor = {factor!r}",
            ]
    (folder / "fusion.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    make_certificates(folder / "certs", [(p[0], "127.0.0.1") for p in parties])
    return folder / "fusion.toml"


def start(
    config: Path,
    party: str,
    out: Path,
    *extra: str,
    fault: str | None = None,
    timeout: float = 30,
    connect_timeout: float = 60,
    quiet: bool = True,
) -> subprocess.Popen[str]:
    role_args = ["--report", str(out / f"{party}.json")]
    if party.startswith("provider"):
        role_args += ["--output", str(out / f"fused_{party}.csv")]
    args = [
        "party",
        str(config),
        "--party",
        party,
        "--timeout",
        str(timeout),
        "--connect-timeout",
        str(connect_timeout),
        *(["--quiet"] if quiet else []),
        *role_args,
        *extra,
    ]
    env = dict(os.environ)
    if fault is None:
        cmd = [sys.executable, "-m", "anonlab", *args]
    else:
        cmd = [sys.executable, "-c", PATCHED_CLI, *args]
        env["ANONLAB_TEST_FAULT"] = fault
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def run_all(
    config: Path,
    out: Path,
    faults: dict[str, str] | None = None,
    timeout: float = 30,
    configs: dict[str, Path] | None = None,
    connect_timeout: float = 60,
) -> dict[str, tuple[int, str]]:
    parties = [p["id"] for p in tomllib.loads(config.read_text())["parties"]]
    faults = faults or {}
    configs = configs or {}
    procs = {
        p: start(
            configs.get(p, config),
            p,
            out,
            fault=faults.get(p),
            timeout=timeout,
            connect_timeout=connect_timeout,
        )
        for p in parties
    }
    results = {}
    for party, proc in procs.items():
        _, stderr = proc.communicate(timeout=180)
        results[party] = (proc.returncode, stderr)
    return results


def provider_names(config: Path) -> Sequence[str]:
    return [p.id for p in load_config(config).providers]


@pytest.mark.parametrize(
    ("providers", "helper"), [(2, True), (3, False)], ids=["2-providers-helper", "3-providers"]
)
def test_party_processes_match_fuse(tmp_path: Path, providers: int, helper: bool) -> None:
    config = write_setup(tmp_path, providers, helper)
    # 2 providers + helper: each party in its own folder with only its own file and key
    results = run_all(config, tmp_path, configs=split_hosts(config) if helper else None)
    for party, (code, stderr) in results.items():
        assert code == 0, f"{party}: {stderr}"
    expected = fuse(load_config(config))
    assert not check_templates(
        expected.table, [(t.qid, t.k) for t in load_config(config).templates]
    )
    assert expected.rounds > 3  # the small setting still specializes
    names = provider_names(config)
    tables = [
        pd.read_csv(tmp_path / f"fused_{n}.csv", dtype=str, keep_default_na=False) for n in names
    ]
    want = expected.table.astype(str).reset_index(drop=True)
    for table in tables:
        pd.testing.assert_frame_equal(table, want, check_dtype=False)
    reports = {p: json.loads((tmp_path / f"{p}.json").read_text()) for p in results}
    for rep in reports.values():
        assert "<html" in render_html(rep).lower()  # --html renders a party report
        assert rep["command"] == "party" and rep["private"] is True
        assert rep["rounds"] == expected.rounds
        assert rep["winners"] == [s["party"] for s in expected.specializations]
        assert set(rep["bytes_sent"]) == set(results)
        assert all(b > 0 for b in rep["bytes_sent"].values())
    want_columns = expected.report()["columns"]
    assert [c["name"] for c in want_columns] == list(want.columns)  # keep_id = true
    for n in names:  # providers see the order of specializations, never a score
        spec = reports[n]["specializations"]
        assert [s["attribute"] for s in spec] == [s["attribute"] for s in expected.specializations]
        assert all("score" not in s for s in spec)
        assert reports[n]["columns"] == want_columns  # the same columns as `fuse` names
    if helper:
        assert "columns" not in reports["recipient"]  # a helper never sees the table
        assert "specializations" not in reports["recipient"]
        assert not (tmp_path / "fused_recipient.csv").exists()


@pytest.fixture(scope="module")
def setup_2h(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_setup(tmp_path_factory.mktemp("party2h"), 2, True)


def _fresh_out(tmp_path: Path, config: Path) -> Path:
    """A run folder beside the shared setup (outputs must not exist before)."""
    for name in (*[p["id"] for p in tomllib.loads(config.read_text())["parties"]],):
        assert not (tmp_path / f"fused_{name}.csv").exists()
    return tmp_path


@pytest.mark.parametrize(
    ("fault", "culprit", "message"),
    [
        ("die-in-round", "provider-b", "party 'provider-b'"),
        ("garbage-instructions", "provider-a", "malformed fusion message"),
        ("malformed-frame", "provider-a", "party 'provider-a' sent a malformed frame"),
    ],
)
def test_failing_party_stops_everyone_without_output(
    tmp_path: Path, setup_2h: Path, fault: str, culprit: str, message: str
) -> None:
    out = _fresh_out(tmp_path, setup_2h)
    results = run_all(setup_2h, out, faults={culprit: fault})
    for party, (code, stderr) in results.items():
        assert not (out / f"fused_{party}.csv").exists(), party
        assert not (out / f"{party}.json").exists(), party
        if party == culprit and fault == "die-in-round":
            assert code == 5
            continue
        assert code == 2, f"{party}: {stderr}"
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), stderr
        if party != culprit:
            assert message in lines[0], f"{party}: {lines[0]}"


def test_hung_party_times_out(tmp_path: Path, setup_2h: Path) -> None:
    procs = {
        p: start(
            setup_2h, p, tmp_path, timeout=4, fault="hang-in-round" if p == "provider-b" else None
        )
        for p in ("provider-a", "provider-b", "recipient")
    }
    try:
        for party in ("provider-a", "recipient"):
            _, stderr = procs[party].communicate(timeout=120)
            assert procs[party].returncode == 2, stderr
            assert "did not finish within 4 s" in stderr, f"{party}: {stderr}"
            assert not (tmp_path / f"fused_{party}.csv").exists()
    finally:
        procs["provider-b"].kill()
        procs["provider-b"].communicate()


def test_untrusted_certificate_is_refused(tmp_path: Path, setup_2h: Path) -> None:
    folder = tmp_path / "setup"
    folder.mkdir()
    for item in setup_2h.parent.iterdir():
        if item.is_file():
            (folder / item.name).write_bytes(item.read_bytes())
    (folder / "certs").mkdir()
    for item in (setup_2h.parent / "certs").iterdir():
        (folder / "certs" / item.name).write_bytes(item.read_bytes())
    make_certificates(tmp_path / "rogue", [("provider-b", "127.0.0.1")])  # another CA
    for ext in ("crt", "key"):
        (folder / "certs" / f"provider-b.{ext}").write_bytes(
            (tmp_path / "rogue" / f"provider-b.{ext}").read_bytes()
        )
    config = folder / "fusion.toml"
    # provider-a dials provider-b and rejects its certificate; the recipient rejects
    # provider-b's certificate when provider-b dials it (after a TLS 1.3 handshake that
    # provider-b believes succeeded). Every party stops at once with a reason: none waits
    # for the start-up limit, which only has to outlast three interpreters starting.
    connect_timeout = 30
    began = time.monotonic()
    results = run_all(config, tmp_path, connect_timeout=connect_timeout)
    elapsed = time.monotonic() - began
    assert elapsed < connect_timeout / 2, (elapsed, results)
    assert any(
        "TLS certificate of party 'provider-b'" in e and "not trusted" in e
        for _, e in results.values()
    ), results
    # both ends of each refused connection name the refusal themselves
    assert "TLS certificate of party 'provider-b' at" in results["provider-a"][1], results
    assert (
        "TLS certificate of party 'provider-b' is not trusted by party 'recipient'"
        in (results["provider-b"][1])
    ), results
    for party, (code, stderr) in results.items():
        assert "did not happen within" not in stderr, f"{party}: {stderr}"
        assert code == 2, f"{party}: {stderr}"
        assert stderr.startswith("Error: ") and len(stderr.strip().splitlines()) == 1, stderr
        assert not (tmp_path / f"fused_{party}.csv").exists()


@pytest.mark.parametrize("change", ["k", "taxonomy", "template"])
def test_mismatched_configs_refuse_to_start(tmp_path: Path, setup_2h: Path, change: str) -> None:
    text = setup_2h.read_text()
    other = setup_2h.with_name(f"fusion_{change}.toml")
    if change == "k":
        text = text.replace("k = 20", "k = 25", 1)
    elif change == "taxonomy":  # same path layout, one more level in the race taxonomy
        race = tmp_path / "hierarchy_race.csv"
        rows = (ADULT / "hierarchy_race.csv").read_text().splitlines()
        race.write_text("\n".join(r.replace(";*", ";Any;*") for r in rows) + "\n")
        text = text.replace(str(ADULT / "hierarchy_race.csv"), str(race))
    else:  # occupation leaves the template and is released as it is (every column a role)
        text = text.replace('qid = ["education", "occupation"]', 'qid = ["education"]')
        text = text.replace("[fusion]\n", '[fusion]\ninsensitive = ["occupation"]\n', 1)
    assert text != setup_2h.read_text()
    other.write_text(text, encoding="utf-8")
    procs = {
        "provider-a": start(setup_2h, "provider-a", tmp_path),
        "provider-b": start(other, "provider-b", tmp_path),
        "recipient": start(setup_2h, "recipient", tmp_path),
    }
    for party, proc in procs.items():
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 2, f"{party}: {stderr}"
        assert "different configuration" in stderr, f"{party}: {stderr}"
        assert not (tmp_path / f"fused_{party}.csv").exists()


def test_two_parties_are_refused(tmp_path: Path) -> None:
    config = write_setup(tmp_path, 2, helper=False)
    proc = start(config, "provider-a", tmp_path)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert stderr.startswith("Error: ") and "at least 3" in stderr and "no secrecy" in stderr
    assert "helper" in stderr


def test_user_errors_before_any_network(tmp_path: Path, setup_2h: Path) -> None:
    from typer.testing import CliRunner

    from anonlab.cli.app import app

    runner = CliRunner()
    cases = [
        (["--party", "nobody", "--report", str(tmp_path / "r.json")], "no party 'nobody'"),
        (["--party", "recipient", "--output", str(tmp_path / "x.csv")], "is a helper"),
        (["--party", "provider-a"], "nothing to write"),
        (["--report", str(tmp_path / "r.json")], "give --party"),
        (
            ["--party", "provider-a", "--output", str(setup_2h.parent / "provider-a.csv")],
            "is also an input",
        ),
    ]
    for args, message in cases:
        result = runner.invoke(app, ["party", str(setup_2h), *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
    no_tls = tmp_path / "no_tls.toml"
    text = setup_2h.read_text()
    no_tls.write_text(
        text[: text.index("[tls]")]
        + text[text.index("[[parties]]") :].replace('file = "', f'file = "{setup_2h.parent}/'),
        encoding="utf-8",
    )
    result = runner.invoke(
        app, ["party", str(no_tls), "--party", "provider-a", "--report", str(tmp_path / "r.json")]
    )
    assert result.exit_code == 2 and "no [tls] table" in result.output, result.output


def test_make_certs(tmp_path: Path, setup_2h: Path) -> None:
    from typer.testing import CliRunner

    from anonlab.cli.app import app

    result = CliRunner().invoke(
        app, ["party", str(setup_2h), "--make-certs", str(tmp_path / "c"), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in (tmp_path / "c").iterdir())
    assert names == sorted(
        [
            "ca.crt",
            "ca.key",
            *[
                f"{p}.{e}"
                for p in ("provider-a", "provider-b", "recipient")
                for e in ("crt", "key")
            ],
        ]
    )


# -- stray and hostile connections to a listening party ----------------------------------------


def channel_port(config: Path, party: str) -> int:
    """The channel port ``party`` listens on (from the config)."""
    return int(next(p.port for p in load_config(config).parties if p.id == party) or 0)


def probe_until_listening(port: int, proc: subprocess.Popen[str], limit: float = 90) -> int:
    """Plain TCP connect-and-close to ``port`` (what a port scan does) until one is accepted.

    Returns how many connections were accepted (one, at the first success).
    """
    deadline = time.monotonic() + limit
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2):
                return 1
        except OSError:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the party never listened"
            time.sleep(0.05)


def foreign_tls_call(port: int, certs: Path, party: str) -> None:
    """A TLS client with a certificate for ``party`` from ``certs`` (another CA) calls ``port``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(str(certs / f"{party}.crt"), str(certs / f"{party}.key"))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        try:
            with context.wrap_socket(raw, server_hostname="recipient") as tls:
                tls.settimeout(10)
                assert tls.recv(1) == b""  # the listener refuses us: alert or close, no data
        except (ssl.SSLError, OSError):
            pass


def run_with_listener_first(
    config: Path, out: Path, disturb: Callable[[int, subprocess.Popen[str]], None]
) -> dict[str, tuple[int, str]]:
    """Start the recipient (it listens for both providers), ``disturb`` its channel port once
    it listens, then start the providers; returns every party's exit code and stderr."""
    first = start(config, "recipient", out, quiet=False)
    try:
        disturb(channel_port(config, "recipient"), first)
    except BaseException:
        first.kill()
        first.communicate()
        raise
    procs = {"recipient": first, **{p: start(config, p, out) for p in ("provider-a", "provider-b")}}
    results = {}
    for party, proc in procs.items():
        _, stderr = proc.communicate(timeout=180)
        results[party] = (proc.returncode, stderr)
    return results


def assert_run_matches_fuse(config: Path, out: Path, results: dict[str, tuple[int, str]]) -> None:
    for party, (code, stderr) in results.items():
        assert code == 0, f"{party}: {stderr}"
    want = fuse(load_config(config)).table.astype(str).reset_index(drop=True)
    for name in provider_names(config):
        table = pd.read_csv(out / f"fused_{name}.csv", dtype=str, keep_default_na=False)
        pd.testing.assert_frame_equal(table, want, check_dtype=False)


def test_stray_connections_do_not_stop_the_run(tmp_path: Path, setup_2h: Path) -> None:
    def port_scan(port: int, proc: subprocess.Popen[str]) -> None:
        probe_until_listening(port, proc)
        for payload in (b"", b"GET / HTTP/1.0\r\n\r\n", b"\x16\x03\x01\x00\x05hello"):
            with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
                sock.sendall(payload)

    results = run_with_listener_first(setup_2h, tmp_path, port_scan)
    assert_run_matches_fuse(setup_2h, tmp_path, results)
    warnings = [ln for ln in results["recipient"][1].splitlines() if ln.startswith("Warning: ")]
    assert len(warnings) >= 4, results["recipient"][1]  # each stray dropped and logged
    assert all("dropped" in w for w in warnings), warnings


def test_client_of_another_ca_is_dropped(tmp_path: Path, setup_2h: Path) -> None:
    rogue = tmp_path / "rogue"
    make_certificates(rogue, [("provider-a", "127.0.0.1")])  # a second CA, same party name

    def impostor(port: int, proc: subprocess.Popen[str]) -> None:
        probe_until_listening(port, proc)
        foreign_tls_call(port, rogue, "provider-a")

    results = run_with_listener_first(setup_2h, tmp_path, impostor)
    assert_run_matches_fuse(setup_2h, tmp_path, results)
    warnings = [ln for ln in results["recipient"][1].splitlines() if ln.startswith("Warning: ")]
    assert any("certificate is not trusted" in w for w in warnings), results["recipient"][1]


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--timeout", "nan"),
        ("--connect-timeout", "inf"),
        ("--timeout", "-1"),
        ("--connect-timeout", "0"),
    ],
)
def test_timeouts_must_be_finite_and_positive(
    tmp_path: Path, setup_2h: Path, flag: str, value: str
) -> None:
    from typer.testing import CliRunner

    from anonlab.cli.app import app

    result = CliRunner().invoke(
        app,
        [
            "party",
            str(setup_2h),
            "--party",
            "provider-a",
            "--report",
            str(tmp_path / "r.json"),
            flag,
            value,
        ],
    )
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {flag}"), result.output
    assert "finite" in lines[0] and not (tmp_path / "r.json").exists()


# -- the connection layer in one process: two channels, strays in between ----------------------


def two_party_channel_setup(tmp_path: Path) -> tuple[list[Endpoint], Callable[[str], TlsFiles]]:
    certs = tmp_path / "certs"
    make_certificates(certs, [("a", "127.0.0.1"), ("b", "127.0.0.1")])
    port_a, port_b = free_ports(2)
    ends = [Endpoint("a", "127.0.0.1", port_a), Endpoint("b", "127.0.0.1", port_b)]

    def tls(party: str) -> TlsFiles:
        return TlsFiles.for_party(
            certs / "ca.crt", certs / "{party}.crt", certs / "{party}.key", party
        )

    return ends, tls


def test_listener_drops_strays_logs_them_and_keeps_listening(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ends, tls = two_party_channel_setup(tmp_path)
    rogue = tmp_path / "rogue"
    make_certificates(rogue, [("a", "127.0.0.1")])  # another CA, the expected party's name
    disturbed = threading.Event()
    got: dict[str, Any] = {}

    def disturb() -> None:  # b listens for a: a port scan and an impostor call first
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", ends[1].port), timeout=2).close()
                    break
                except OSError:
                    time.sleep(0.05)
            foreign_tls_call(ends[1].port, rogue, "a")
        finally:
            disturbed.set()

    def party_a() -> None:  # the real caller, once the strays were dropped
        disturbed.wait(90)
        loop = asyncio.new_event_loop()
        channel = Channel(loop, ends, "a", tls("a"), timeout=30, connect_timeout=60)
        try:
            got["hello"] = channel.open({"party": "a"})
            got["done"] = channel.finish({"bye": "a"})
        finally:
            channel.close()
            loop.close()

    threads = [threading.Thread(target=disturb), threading.Thread(target=party_a)]
    loop_b = asyncio.new_event_loop()
    channel_b = Channel(loop_b, ends, "b", tls("b"), timeout=30, connect_timeout=60)
    for thread in threads:
        thread.start()
    try:
        with caplog.at_level(logging.WARNING, logger="anonlab.fusion"):
            hello = channel_b.open({"party": "b"})
            done = channel_b.finish({"bye": "b"})
    finally:
        channel_b.close()
        loop_b.close()
        for thread in threads:
            thread.join(120)
    assert hello == {"a": {"party": "a"}} and done == {"a": {"bye": "a"}}
    assert got == {"hello": {"b": {"party": "b"}}, "done": {"b": {"bye": "b"}}}
    assert channel_b.failure is None and len(channel_b.dropped_calls) == 2
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.name == "anonlab.fusion.transport"
    ]
    assert len(warnings) == 2, warnings
    assert "closed the connection during the TLS handshake" in warnings[0]
    assert "certificate is not trusted" in warnings[1] and "keeps listening for 'a'" in warnings[1]


def test_connect_deadline_names_the_dropped_connections(tmp_path: Path) -> None:
    ends, tls = two_party_channel_setup(tmp_path)
    loop = asyncio.new_event_loop()
    channel = Channel(loop, ends, "b", tls("b"), timeout=1, connect_timeout=0.5)
    channel.drop_call("192.0.2.7:4242", "its certificate is not trusted (test)")
    try:
        with pytest.raises(
            AnonlabError,
            match=(
                r"connecting party 'b' to 'a' did not happen within 0.5 s \(connections dropped "
                r"here: 192.0.2.7:4242 \(its certificate is not trusted \(test\)\)\).*raise "
                r"connect_timeout"
            ),
        ):
            channel.open({"party": "b"})
    finally:
        channel.close()
        loop.close()
    spare = asyncio.new_event_loop()
    try:
        for bad in (math.nan, math.inf, 0.0):
            with pytest.raises(AnonlabError, match="finite number of seconds"):
                Channel(spare, ends, "b", tls("b"), timeout=bad)
            with pytest.raises(AnonlabError, match=r"^connect_timeout must be a finite"):
                Channel(spare, ends, "b", tls("b"), timeout=1, connect_timeout=bad)
    finally:
        spare.close()


def test_party_output_folder_is_one_line_and_nothing_starts(tmp_path: Path, setup_2h: Path) -> None:
    from typer.testing import CliRunner

    from anonlab.cli.app import app

    folder = tmp_path / "taken"
    folder.mkdir()
    result = CliRunner().invoke(
        app,
        [
            "party",
            str(setup_2h),
            "--party",
            "provider-a",
            "--output",
            str(folder),
            "--connect-timeout",
            "1",
        ],
    )
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: --output ") and "folder" in lines[0]
