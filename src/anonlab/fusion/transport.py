"""The parties' own channel: TLS over TCP, length-prefixed frames, a JSON start-up handshake.

Every pair of parties holds one TLS connection (a full mesh); the party that
comes earlier in the configuration's party list connects, the later one
listens, as MPyC does for its own connections. Both sides present a
certificate signed by the configured CA, and each side checks that the peer's
certificate names the party it expects (the certificate's DNS name is the
party id).

Wire format, version 1 (see docs/fusion-protocol.md). Every frame is::

    kind (1 byte) | length (4 bytes, big-endian, unsigned) | payload (length bytes)

``HELLO``, ``DONE`` and ``ABORT`` carry UTF-8 JSON objects; ``DATA`` carries
the bytes the engine hands over (instructions encoded by
``anonlab.fusion.messages``). Frames larger than :data:`MAX_FRAME` or of an
unknown kind are refused as malformed. Nothing is ever unpickled.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import ssl
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anonlab.errors import AnonlabError

PROTOCOL_NAME = "anonlab-fusion"
PROTOCOL_VERSION = 1
HELLO, DATA, DONE, ABORT = 1, 2, 3, 4
KIND_NAMES = {HELLO: "HELLO", DATA: "DATA", DONE: "DONE", ABORT: "ABORT"}
MAX_FRAME = 1 << 30
_HEADER = struct.Struct(">BI")


@dataclass(frozen=True)
class Endpoint:
    """A party's name and where its channel listens."""

    party: str
    host: str
    port: int


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of one party: the CA that signed every party, its own certificate and key."""

    ca: Path
    cert: Path
    key: Path

    @classmethod
    def for_party(cls, ca: str | Path, cert: str | Path, key: str | Path, party: str) -> TlsFiles:
        """Fill the ``{party}`` placeholder of the configured paths with ``party``."""
        files = cls(
            Path(str(ca)),
            Path(str(cert).replace("{party}", party)),
            Path(str(key).replace("{party}", party)),
        )
        for label, path in (("CA certificate", files.ca), ("certificate", files.cert),
                            ("private key", files.key)):
            if not path.is_file():
                raise AnonlabError(
                    f"TLS {label} '{path}' for party '{party}' does not exist: fix [tls] in the "
                    "config or create certificates with `anonlab party --make-certs DIR`"
                )
        return files


def server_context(files: TlsFiles) -> ssl.SSLContext:
    """TLS context for accepting peers: present our certificate, require theirs."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(files.ca))
    _load_chain(context, files)
    context.verify_mode = ssl.CERT_REQUIRED
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def client_context(files: TlsFiles) -> ssl.SSLContext:
    """TLS context for connecting to peers: verify their name, present our certificate."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(files.ca))
    _load_chain(context, files)
    context.check_hostname = True
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def _load_chain(context: ssl.SSLContext, files: TlsFiles) -> None:
    try:
        context.load_cert_chain(str(files.cert), str(files.key))
    except (ssl.SSLError, OSError) as exc:
        raise AnonlabError(
            f"cannot load TLS certificate '{files.cert}' with key '{files.key}' ({exc}): give a "
            "PEM certificate and its unencrypted PEM private key"
        ) from exc


def peer_names(sock: ssl.SSLSocket) -> set[str]:
    """DNS names and common name in the peer's verified certificate."""
    cert: dict[str, Any] = dict(sock.getpeercert() or {})
    names = {str(entry[1]) for entry in cert.get("subjectAltName", ()) if entry[0] == "DNS"}
    for rdn in cert.get("subject", ()):
        names.update(str(pair[1]) for pair in rdn if pair[0] == "commonName")
    return names


def encode_frame(kind: int, payload: bytes) -> bytes:
    """One frame: kind byte, 4-byte big-endian length, payload."""
    if kind not in KIND_NAMES:
        raise ValueError(f"unknown frame kind {kind}")
    if len(payload) > MAX_FRAME:
        raise AnonlabError(f"message of {len(payload)} bytes exceeds the {MAX_FRAME}-byte limit")
    return _HEADER.pack(kind, len(payload)) + payload


def encode_json(obj: Mapping[str, Any]) -> bytes:
    """A JSON payload (HELLO, DONE, ABORT)."""
    return json.dumps(dict(obj), sort_keys=True).encode("utf-8")


def decode_json(payload: bytes, party: str, kind: int) -> dict[str, Any]:
    """Parse a JSON payload, refusing anything that is not a JSON object."""
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        obj = None
    if not isinstance(obj, dict):
        raise AnonlabError(
            f"party '{party}' sent a malformed {KIND_NAMES[kind]} message: it is not a JSON "
            "object; check that every party runs the same anonlab version"
        )
    return obj


class PeerLink:
    """One TLS connection to one peer: framed send and receive with a deadline."""

    def __init__(self, party: str, sock: ssl.SSLSocket, timeout: float) -> None:
        self.party = party
        self.sock = sock
        self.timeout = timeout
        self.bytes_sent = 0
        self.bytes_received = 0
        self._buffer = bytearray()
        self.closed = False

    def send(self, kind: int, payload: bytes) -> None:
        """Send one frame; a broken connection is a clear error naming the peer."""
        frame = encode_frame(kind, payload)
        try:
            self.sock.settimeout(self.timeout)
            self.sock.sendall(frame)
        except (OSError, ssl.SSLError) as exc:
            raise AnonlabError(
                f"cannot send to party '{self.party}' ({exc}): it stopped or the network failed; "
                "nothing was written"
            ) from exc
        self.bytes_sent += len(frame)

    def _read_exact(self, count: int, deadline: float) -> bytes:
        while len(self._buffer) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AnonlabError(
                    f"no message from party '{self.party}' within {self.timeout:g} s: it may have "
                    "stopped or hung; raise --timeout if its rounds are slow; nothing was written"
                )
            try:
                self.sock.settimeout(remaining)
                chunk = self.sock.recv(max(65536, count - len(self._buffer)))
            except TimeoutError:
                continue
            except (OSError, ssl.SSLError) as exc:
                raise AnonlabError(
                    f"connection to party '{self.party}' failed ({exc}): it stopped or the "
                    "network failed; nothing was written"
                ) from exc
            if not chunk:
                self.closed = True
                raise AnonlabError(
                    f"party '{self.party}' closed the connection: it stopped or failed; "
                    "nothing was written"
                )
            self._buffer.extend(chunk)
            self.bytes_received += len(chunk)
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    def receive(self, timeout: float | None = None) -> tuple[int, bytes]:
        """Wait for the next frame; return its kind and payload."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        kind, length = _HEADER.unpack(self._read_exact(_HEADER.size, deadline))
        if kind not in KIND_NAMES or length > MAX_FRAME:
            raise AnonlabError(
                f"party '{self.party}' sent a malformed frame (kind {kind}, length {length}): "
                "check that every party runs the same anonlab version; nothing was written"
            )
        return kind, self._read_exact(length, deadline)

    def readable(self) -> bool:
        """True when a frame (or the end of the connection) can be read without waiting."""
        if self._buffer or self.sock.pending():
            return True
        ready, _, _ = select.select([self.sock], [], [], 0)
        return bool(ready)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with contextlib.suppress(OSError):
            self.sock.close()
        self.closed = True


def _retrying_connect(
    endpoint: Endpoint, context: ssl.SSLContext, deadline: float, timeout: float
) -> ssl.SSLSocket:
    """Connect with TLS to a peer that may not be listening yet."""
    last: Exception | None = None
    while time.monotonic() < deadline:
        raw = None
        try:
            raw = socket.create_connection(
                (endpoint.host, endpoint.port), timeout=min(timeout, 5.0)
            )
            raw.settimeout(timeout)
            return context.wrap_socket(raw, server_hostname=endpoint.party)
        except ssl.SSLCertVerificationError as exc:
            if raw is not None:
                raw.close()
            raise AnonlabError(
                f"TLS certificate of party '{endpoint.party}' at {endpoint.host}:{endpoint.port} "
                f"is not trusted ({exc.verify_message}): every party needs a certificate for its "
                "id signed by the configured CA"
            ) from exc
        except (OSError, ssl.SSLError) as exc:
            if raw is not None:
                raw.close()
            last = exc
            time.sleep(0.1)
    raise AnonlabError(
        f"cannot reach party '{endpoint.party}' at {endpoint.host}:{endpoint.port} ({last}): start "
        "every party within --timeout seconds and check hosts, ports and firewalls"
    )


def connect_mesh(
    parties: Sequence[Endpoint],
    me: str,
    files: TlsFiles,
    hello: Mapping[str, Any],
    timeout: float,
) -> dict[str, PeerLink]:
    """Open one TLS link to every other party and send each our HELLO.

    ``parties`` lists every party in configuration order; the parties before
    ``me`` connect to us, we connect to the parties after. Returns the links
    keyed by party id; read the peers' HELLOs with :func:`read_hellos`.
    """
    names = [p.party for p in parties]
    mine = names.index(me)
    before, after = parties[:mine], parties[mine + 1 :]
    deadline = time.monotonic() + timeout
    links: dict[str, PeerLink] = {}
    server = None
    try:
        if before:
            server = _listen(parties[mine])
            links.update(_accept(server, before, files, deadline, timeout))
        context = client_context(files)
        for peer in after:
            sock = _retrying_connect(peer, context, deadline, timeout)
            links[peer.party] = PeerLink(peer.party, sock, timeout)
        for link in links.values():
            link.send(HELLO, encode_json(hello))
        return links
    except BaseException:
        for link in links.values():
            link.close()
        raise
    finally:
        if server is not None:
            server.close()


def read_hellos(links: Mapping[str, PeerLink]) -> dict[str, dict[str, Any]]:
    """The HELLO object of every peer (the first frame on each link)."""
    hellos: dict[str, dict[str, Any]] = {}
    for party, link in links.items():
        kind, payload = link.receive()
        if kind == ABORT:
            raise AnonlabError(f"party '{party}' refused to start: {abort_reason(payload, party)}")
        if kind != HELLO:
            raise AnonlabError(
                f"party '{party}' sent {KIND_NAMES[kind]} before its HELLO: check that every "
                "party runs the same anonlab version"
            )
        hellos[party] = decode_json(payload, party, kind)
    return hellos


def abort_reason(payload: bytes, party: str) -> str:
    """The message inside an ABORT frame (or a note that it was unreadable)."""
    try:
        obj = decode_json(payload, party, ABORT)
    except AnonlabError:
        return "no reason given"
    return str(obj.get("error", "no reason given"))


def _listen(me: Endpoint) -> socket.socket:
    try:
        server = socket.create_server((me.host, me.port))  # sets SO_REUSEADDR on POSIX
    except OSError as exc:
        raise AnonlabError(
            f"party '{me.party}' cannot listen on {me.host}:{me.port} ({exc}): choose a free "
            "port or the host's own address in the config"
        ) from exc
    return server


def _accept(
    server: socket.socket,
    expected: Sequence[Endpoint],
    files: TlsFiles,
    deadline: float,
    timeout: float,
) -> dict[str, PeerLink]:
    """Accept one TLS connection from each expected peer, identified by its certificate."""
    context = server_context(files)
    waiting = {p.party for p in expected}
    links: dict[str, PeerLink] = {}
    while waiting:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AnonlabError(
                f"parties {sorted(waiting)} did not connect within {timeout:g} s: start every "
                "party within --timeout seconds and check hosts, ports and firewalls"
            )
        server.settimeout(remaining)
        try:
            raw, _ = server.accept()
        except TimeoutError:
            continue
        raw.settimeout(timeout)
        try:
            sock = context.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()  # a stray or untrusted client: keep waiting for the real peers
            continue
        names = peer_names(sock) & waiting
        if len(names) != 1:
            sock.close()
            continue
        party = names.pop()
        waiting.discard(party)
        links[party] = PeerLink(party, sock, timeout)
    return links
