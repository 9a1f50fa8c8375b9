"""The parties' own channel: TLS over TCP, length-prefixed frames, a JSON start-up handshake.

Every pair of parties holds one TLS connection (a full mesh); the party that
comes earlier in the configuration's party list connects, the later one
listens, as MPyC does for its own connections. Both sides present a
certificate signed by the configured CA. The connecting side checks that the
listener's certificate names the party it dialled (the certificate's DNS name
is the party id); the listening side identifies the caller by the party id in
its certificate.

The channel runs on the same asyncio event loop as the MPyC runtime
(:class:`anonlab.fusion.secure_max.PartyLoop`), so sending never blocks on a
receiver (frames are buffered by the transport) and every wait has a deadline
and notices a peer that stopped, aborted or sent something malformed.

Wire format, version 1 (see docs/fusion-protocol.md). Every frame is::

    kind (1 byte) | length (4 bytes, big-endian, unsigned) | payload (length bytes)

``HELLO``, ``READY``, ``DONE`` and ``ABORT`` carry UTF-8 JSON objects; ``DATA`` carries
the bytes the engine hands over (encoded by ``anonlab.fusion.messages``).
Frames larger than :data:`MAX_FRAME` or of an unknown kind are malformed: the
receiver drops the connection and stops with an error. Nothing is unpickled.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import ssl
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anonlab.errors import AnonlabError

PROTOCOL_NAME = "anonlab-fusion"
PROTOCOL_VERSION = 1
HELLO, DATA, DONE, ABORT, READY = 1, 2, 3, 4, 5
KIND_NAMES = {HELLO: "HELLO", DATA: "DATA", DONE: "DONE", ABORT: "ABORT", READY: "READY"}
MAX_FRAME = 1 << 30
_HEADER = struct.Struct(">BI")
_POLL = 0.05


@dataclass(frozen=True)
class Endpoint:
    """A party's name and an address where it listens."""

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
        """Fill the ``{party}`` placeholder of the configured paths and check the files exist."""
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
                    "config or create certificates with `anonlab party CONFIG --make-certs DIR`"
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


def certificate_names(cert: Mapping[str, Any] | None) -> set[str]:
    """DNS names and common name of a verified peer certificate (``getpeercert()`` form)."""
    cert = dict(cert or {})
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
    """A JSON payload (HELLO, READY, DONE, ABORT)."""
    return json.dumps(dict(obj), sort_keys=True).encode("utf-8")


def decode_json(payload: bytes, party: str, kind: int) -> dict[str, Any]:
    """Parse a JSON payload, refusing anything that is not a JSON object."""
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        obj = None
    if not isinstance(obj, dict):
        raise AnonlabError(
            f"party '{party}' sent a malformed {KIND_NAMES[kind]} message (not a JSON object): "
            "check that every party runs the same anonlab version; nothing was written"
        )
    return obj


class FrameProtocol(asyncio.Protocol):
    """One TLS connection to one peer: splits the byte stream into frames."""

    def __init__(self, channel: Channel, party: str | None) -> None:
        self.channel = channel
        self.party = party
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.bytes_sent = 0
        self.broken = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.party is None:  # we listened: the caller is named by its certificate
            names = certificate_names(transport.get_extra_info("peercert"))
            self.channel.identify(self, names)
        else:
            self.channel.register(self.party, self)

    def data_received(self, data: bytes) -> None:
        if self.broken:
            return
        self.buffer.extend(data)
        while len(self.buffer) >= _HEADER.size and self.party is not None:
            kind, length = _HEADER.unpack_from(self.buffer)
            if kind not in KIND_NAMES or length > MAX_FRAME:
                # ignore the rest of the stream; the link stays open for our ABORT to the sender
                self.broken = True
                self.buffer.clear()
                self.channel.fail(
                    f"party '{self.party}' sent a malformed frame (kind {kind}, length {length}): "
                    "check that every party runs the same anonlab version; nothing was written"
                )
                return
            if len(self.buffer) < _HEADER.size + length:
                break
            payload = bytes(self.buffer[_HEADER.size : _HEADER.size + length])
            del self.buffer[: _HEADER.size + length]
            self.channel.deliver(self.party, kind, payload)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.party is not None:
            self.channel.lost(self.party, exc)

    def send(self, kind: int, payload: bytes) -> None:
        """Queue one frame (the event loop writes it)."""
        if self.transport is None or self.transport.is_closing():
            raise AnonlabError(
                f"cannot send to party '{self.party}': its connection is closed (it stopped or "
                "failed); nothing was written"
            )
        frame = encode_frame(kind, payload)
        self.transport.write(frame)
        self.bytes_sent += len(frame)

    def abort(self) -> None:
        """Drop the connection at once."""
        if self.transport is not None:
            self.transport.abort()


class Channel:
    """The framed TLS mesh between all parties, driven by one asyncio event loop.

    ``parties`` lists every party's channel endpoint in configuration order.
    Call :meth:`open` (connect and exchange HELLOs), then :meth:`send` /
    :meth:`receive`, then :meth:`finish` (exchange DONEs) and :meth:`close`;
    after an error call :meth:`abort` to tell the others why.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        parties: Sequence[Endpoint],
        me: str,
        tls: TlsFiles,
        timeout: float,
        connect_timeout: float | None = None,
    ) -> None:
        names = [p.party for p in parties]
        if len(set(names)) != len(names):
            raise AnonlabError("party ids repeat: give every party its own id")
        self.loop = loop
        self.parties = list(parties)
        self.me = me
        mine = names.index(me)
        self.before = [p.party for p in parties[:mine]]
        self.after = parties[mine + 1 :]
        self.peers = [n for n in names if n != me]
        self.tls = tls
        self.timeout = timeout
        self.connect_timeout = timeout if connect_timeout is None else connect_timeout
        self.links: dict[str, FrameProtocol] = {}
        self.queues: dict[str, collections.deque[tuple[int, bytes]]] = {
            n: collections.deque() for n in self.peers
        }
        self.done: dict[str, dict[str, Any]] = {}
        self.failure: str | None = None
        self.closing = False
        self._server: asyncio.Server | None = None
        self._changed = asyncio.Event()

    # -- callbacks from the protocols -------------------------------------------------------
    def identify(self, protocol: FrameProtocol, names: set[str]) -> None:
        """Bind an accepted connection to the one waiting party its certificate names."""
        candidates = [n for n in self.before if n in names and n not in self.links]
        if len(candidates) != 1:
            protocol.abort()  # not one of the parties that should call us
            return
        protocol.party = candidates[0]
        self.register(candidates[0], protocol)

    def register(self, party: str, protocol: FrameProtocol) -> None:
        self.links[party] = protocol
        self._changed.set()

    def deliver(self, party: str, kind: int, payload: bytes) -> None:
        if kind == ABORT:
            reason = "no reason given"
            with contextlib.suppress(AnonlabError):
                reason = str(decode_json(payload, party, kind).get("error", reason))
            self.fail(f"party '{party}' stopped: {reason}")
        elif kind == DONE:
            try:
                self.done[party] = decode_json(payload, party, kind)
            except AnonlabError as exc:
                self.fail(str(exc))
        else:
            self.queues[party].append((kind, payload))
        self._changed.set()

    def lost(self, party: str, exc: Exception | None) -> None:
        if not self.closing and party not in self.done:
            cause = f" ({exc})" if exc else ""
            self.fail(
                f"party '{party}' closed the connection{cause}: it stopped or failed; "
                "nothing was written"
            )
        self._changed.set()

    def fail(self, message: str) -> None:
        """Record the first failure; every later wait raises it."""
        if self.failure is None:
            self.failure = message
        self._changed.set()

    def check(self) -> None:
        """Raise the recorded failure, if any (used by every wait, also the secure max's)."""
        if self.failure is not None:
            raise AnonlabError(self.failure)

    # -- waiting ----------------------------------------------------------------------------
    def wait_until(self, ready: Callable[[], bool], what: str, *, starting: bool = False) -> None:
        """Run the loop until ``ready()`` holds; fail on a peer's failure or after the timeout.

        ``starting`` waits (connecting, the start-up exchanges) use the
        connect timeout, every later wait the per-step timeout.
        """
        limit = self.connect_timeout if starting else self.timeout
        flag = "--connect-timeout" if starting else "--timeout"
        deadline = self.loop.time() + limit

        async def poll() -> None:
            while True:
                if ready():  # what already arrived is used before a later failure is raised
                    return
                self.check()
                remaining = deadline - self.loop.time()
                if remaining <= 0:
                    raise AnonlabError(
                        f"{what} did not happen within {limit:g} s: a party stopped, hung or is "
                        f"unreachable (check hosts, ports, certificates; raise {flag}); "
                        "nothing was written"
                    )
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), min(_POLL, remaining))

        self.loop.run_until_complete(poll())

    # -- life cycle -------------------------------------------------------------------------
    def open(self, hello: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """Connect to every peer, send our HELLO and return every peer's HELLO."""
        me = next(p for p in self.parties if p.party == self.me)
        if self.before:
            try:
                self._server = self.loop.run_until_complete(
                    self.loop.create_server(
                        lambda: FrameProtocol(self, None), me.host, me.port,
                        ssl=server_context(self.tls),
                    )
                )
            except OSError as exc:
                raise AnonlabError(
                    f"party '{self.me}' cannot listen on {me.host}:{me.port} ({exc}): choose a "
                    "free port or this host's own address in the config"
                ) from exc
        context = client_context(self.tls)
        tasks = [self.loop.create_task(self._dial(peer, context)) for peer in self.after]
        try:
            self.wait_until(
                lambda: len(self.links) == len(self.peers),
                f"connecting party '{self.me}' to "
                + ", ".join(f"'{n}'" for n in self.peers if n not in self.links),
                starting=True,
            )
        finally:
            for task in tasks:
                task.cancel()
            if self._server is not None:
                self._server.close()
        return self.exchange(HELLO, hello, "the start-up handshake", starting=True)

    def exchange(
        self, kind: int, obj: Mapping[str, Any], what: str, *, starting: bool = False
    ) -> dict[str, dict[str, Any]]:
        """Send one JSON frame of ``kind`` to every peer and return each peer's one."""
        for party in self.peers:
            self.send(party, kind, encode_json(obj))
        received: dict[str, dict[str, Any]] = {}
        for party in self.peers:
            got, payload = self.receive(party, what, starting=starting)
            if got != kind:
                raise AnonlabError(
                    f"party '{party}' sent {KIND_NAMES[got]} instead of {KIND_NAMES[kind]} during "
                    f"{what}: check that every party runs the same anonlab version"
                )
            received[party] = decode_json(payload, party, kind)
        return received

    async def _dial(self, peer: Endpoint, context: ssl.SSLContext) -> None:
        """Connect to a peer that may not be listening yet, retrying until cancelled."""
        while True:
            try:
                await self.loop.create_connection(
                    lambda: FrameProtocol(self, peer.party), peer.host, peer.port,
                    ssl=context, server_hostname=peer.party,
                )
                return
            except ssl.SSLCertVerificationError as exc:
                self.fail(
                    f"TLS certificate of party '{peer.party}' at {peer.host}:{peer.port} is not "
                    f"trusted ({exc.verify_message}): every party needs a certificate for its id "
                    "signed by the configured CA"
                )
                return
            except (OSError, ssl.SSLError):
                await asyncio.sleep(0.1)

    def send(self, party: str, kind: int, payload: bytes) -> None:
        """Queue one frame to ``party``."""
        self.check()
        self.links[party].send(kind, payload)

    def receive(self, party: str, what: str, *, starting: bool = False) -> tuple[int, bytes]:
        """The next HELLO, READY or DATA frame from ``party`` (waits up to the timeout)."""
        queue = self.queues[party]
        self.wait_until(lambda: bool(queue), f"{what}: a message from party '{party}'",
                        starting=starting)
        return queue.popleft()

    def finish(self, summary: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """Send DONE with ``summary`` to every peer and wait for every peer's DONE."""
        for party in self.peers:
            self.send(party, DONE, encode_json(summary))
        self.wait_until(lambda: len(self.done) == len(self.peers), "the closing handshake")
        self.flush()
        return dict(self.done)

    def flush(self, limit: float | None = None) -> None:
        """Let the loop write out every queued frame (bounded by ``limit`` seconds)."""
        deadline = self.loop.time() + (self.timeout if limit is None else limit)

        async def drain() -> None:
            while self.loop.time() < deadline and any(
                p.transport is not None and not p.transport.is_closing()
                and p.transport.get_write_buffer_size() > 0
                for p in self.links.values()
            ):
                await asyncio.sleep(0.01)

        self.loop.run_until_complete(drain())

    def abort(self, reason: str) -> None:
        """Tell every reachable peer why we stop (best effort), then drop the connections."""
        self.closing = True
        for link in self.links.values():
            with contextlib.suppress(Exception):
                link.send(ABORT, encode_json({"error": reason}))
        with contextlib.suppress(Exception):
            self.flush(limit=2.0)
        for link in self.links.values():
            link.abort()

    def close(self) -> None:
        """Close every connection (after :meth:`finish`)."""
        self.closing = True
        for link in self.links.values():
            if link.transport is not None:
                link.transport.close()
        with contextlib.suppress(Exception):
            self.loop.run_until_complete(asyncio.sleep(0.05))

    def bytes_sent(self) -> int:
        """Frame bytes this party put on its channel connections so far."""
        return sum(link.bytes_sent for link in self.links.values())
