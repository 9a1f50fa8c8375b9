"""The parties' connections: TLS over TCP, the accept loop, deadlines (the connection layer).

What travels on a connection, and how it is checked, is the codec's business
(:mod:`anonlab.fusion.codec` for frames and control messages,
:mod:`anonlab.fusion.messages` for DATA payloads); this module moves the
bytes and keeps time.

Every pair of parties holds one TLS connection (a full mesh); the party that
comes earlier in the configuration's party list connects, the later one
listens, as MPyC does for its own connections. Both sides present a
certificate signed by the configured CA. The connecting side checks that the
listener's certificate names the party it dialled (the certificate's DNS name
is the party id); the listening side identifies the caller by the party id in
its certificate.

The listener is open to anyone who can reach its port, so it never lets a
caller end the run: a connection whose TLS handshake fails (a port scan's
connect-and-close, a client that does not speak TLS, a certificate of
another CA, a caller that rejects our certificate) or whose certificate names
no party expected here is dropped and logged (``logging`` warning, logger
``anonlab.fusion.transport``), and the listener keeps accepting until every
expected party called or the connect timeout passed. The timeout's error then
lists the connections that were dropped, which tells a party with a wrong
certificate from a party that never started.

The connecting side knows whom it dials, so a TLS failure there is final and
named at once:

* it checks the listener's certificate during the handshake
  (``SSLCertVerificationError``);
* with TLS 1.3 its handshake ends *before* the listener has checked the
  caller's certificate, and a rejection arrives later as a closed connection.
  The listener therefore speaks first (its HELLO right after the handshake)
  and the connecting side counts the connection as made only once that first
  frame arrived; a connection that closes before it is a refusal of our
  certificate.

Only "nobody listens there yet" (a refused or reset TCP connection) is
retried. A party that fails while connecting keeps its listener and dials up
for a short grace period (:data:`START_GRACE` seconds at most) until every
peer has either connected (and gets an ABORT with the reason) or failed its
handshake too, so the parties it can reach stop promptly with a reason.

The channel runs on the same asyncio event loop as the MPyC runtime
(:class:`anonlab.fusion.secure_max.PartyLoop`), so sending never blocks on a
receiver (frames are buffered by the transport) and every wait has a finite
deadline and notices a peer that stopped, aborted or sent something
malformed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import math
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anonlab.errors import AnonlabError, expect_type
from anonlab.fusion.codec import (
    ABORT,
    DATA,
    DONE,
    HELLO,
    KIND_NAMES,
    PROTOCOL_NAME,
    PROTOCOL_VERSION,
    READY,
    FrameDecoder,
    ProtocolError,
    abort_reason,
    decode_json,
    encode_frame,
    encode_json,
)

__all__ = [
    "ABORT",
    "DATA",
    "DONE",
    "HELLO",
    "KIND_NAMES",
    "PROTOCOL_NAME",
    "PROTOCOL_VERSION",
    "READY",
    "Channel",
    "Endpoint",
    "FrameProtocol",
    "TlsFiles",
    "check_timeout",
    "client_context",
    "server_context",
]

logger = logging.getLogger(__name__)

_POLL = 0.05
START_GRACE = 10.0
"""Seconds a party that failed while connecting still waits for its peers to connect or fail,
so that each of them learns why (bounded by the connect timeout)."""
HANDSHAKE_LIMIT = 30.0
"""Seconds an accepted connection may take for its TLS handshake (at most the connect timeout)."""
_CERT_ADVICE = "every party needs a certificate for its id signed by the configured CA"
TIMEOUT_RULE = "must be a finite number of seconds above 0"


def check_timeout(value: float, name: str) -> float:
    """``value`` as a float when it is a finite, positive number of seconds; else one error."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise AnonlabError(f"{name} {TIMEOUT_RULE} (got {value!r})", parameter=name)
    return float(value)


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
        for label, path in (
            ("CA certificate", files.ca),
            ("certificate", files.cert),
            ("private key", files.key),
        ):
            if not path.is_file():
                raise AnonlabError(
                    f"TLS {label} '{path}' for party '{party}' does not exist: fix [tls] in the "
                    "config, or create test certificates with "
                    "anonlab.fusion.certs.make_certificates"
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


def _ssl_reason(exc: ssl.SSLError) -> str:
    """A short reason of a TLS failure, e.g. ``tlsv1 alert unknown ca``."""
    reason = getattr(exc, "reason", None)
    return str(reason).replace("_", " ").lower() if reason else str(exc)


def _address(peer: Any) -> str:
    """``host:port`` of a ``peername`` extra."""
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else str(peer)


def handshake_failure(exc: BaseException) -> str:
    """Why the TLS handshake of an accepted connection failed, in a few words."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"its certificate is not trusted ({exc.verify_message})"
    if isinstance(exc, ssl.SSLError):
        return f"the TLS handshake failed ({_ssl_reason(exc)})"
    return "it closed the connection during the TLS handshake"


class _Acceptor(asyncio.Protocol):
    """An accepted TCP connection before TLS: hands it to :meth:`Channel.accept`."""

    def __init__(self, channel: Channel, context: ssl.SSLContext) -> None:
        self.channel = channel
        self.context = context

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = expect_type(transport, asyncio.Transport, "the connection's transport")
        transport.pause_reading()  # the TLS layer reads the client's first bytes
        task = self.channel.loop.create_task(self.channel.accept(transport, self.context))
        self.channel.handshakes.add(task)  # keep a reference until the handshake ends
        task.add_done_callback(self.channel.handshakes.discard)


class FrameProtocol(asyncio.Protocol):
    """One TLS connection to one peer: feeds the byte stream to a :class:`FrameDecoder`."""

    def __init__(self, channel: Channel, party: str | None) -> None:
        self.channel = channel
        self.party = party
        self.dialed = party is not None
        self.confirmed = False
        """A dialled connection counts once the listener's first frame arrived (see above)."""
        self.transport: asyncio.Transport | None = None
        self.decoder = FrameDecoder()
        self.bytes_sent = 0
        self.broken = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = expect_type(transport, asyncio.Transport, "the connection's transport")
        self.transport = transport
        self.channel.protocols.append(self)
        if self.party is None:  # we listened: the caller is named by its certificate
            names = certificate_names(transport.get_extra_info("peercert"))
            self.channel.identify(self, names)

    def data_received(self, data: bytes) -> None:
        if self.broken:
            return
        if self.dialed and not self.confirmed and self.party is not None:
            # the listener accepted our certificate: it spoke first
            self.confirmed = True
            self.channel.register(self.party, self)
        if self.party is None:  # a caller we did not accept: ignore what it says
            return
        try:
            for frame in self.decoder.feed(data):
                self.channel.deliver(self.party, frame.kind, frame.payload)
        except ProtocolError as exc:
            # ignore the rest of the stream; the link stays open for our ABORT to the sender
            self.broken = True
            self.channel.fail(
                f"party '{self.party}' sent a {exc}: check that every party runs the same "
                "anonlab version; nothing was written"
            )

    def connection_lost(self, exc: Exception | None) -> None:
        if self.party is None:
            return
        if self.dialed and not self.confirmed:
            self.channel.refused(self.party, exc)
        else:
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
    after an error call :meth:`abort` to tell the others why. ``timeout``
    bounds every wait during the run, ``connect_timeout`` (default: the same)
    the start-up; both must be finite and positive.
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
        self.timeout = check_timeout(timeout, "timeout")
        self.connect_timeout = check_timeout(
            self.timeout if connect_timeout is None else connect_timeout, "connect_timeout"
        )
        self.links: dict[str, FrameProtocol] = {}
        self.queues: dict[str, collections.deque[tuple[int, bytes]]] = {
            n: collections.deque() for n in self.peers
        }
        self.done: dict[str, dict[str, Any]] = {}
        self.failure: str | None = None
        self.closing = False
        self.protocols: list[FrameProtocol] = []
        self.handshakes: set[asyncio.Task[None]] = set()
        self.dial_failed: set[str] = set()
        """Peers we dial whose handshake failed (they cannot be told anything)."""
        self.refused_calls = 0
        """Incoming connections dropped (failed handshake, or not a party expected here)."""
        self.dropped_calls: list[str] = []
        """``address (reason)`` of every incoming connection that was dropped."""
        self._hello: bytes | None = None
        self._relayed = False
        self._server: asyncio.Server | None = None
        self._changed = asyncio.Event()

    # -- callbacks from the protocols -------------------------------------------------------
    def identify(self, protocol: FrameProtocol, names: set[str]) -> None:
        """Bind an accepted connection to the one waiting party its certificate names."""
        candidates = [n for n in self.before if n in names and n not in self.links]
        if len(candidates) != 1:  # not one of the parties that should call us: say why
            with contextlib.suppress(AnonlabError):
                protocol.send(
                    ABORT,
                    encode_json(
                        {
                            "error": (
                                f"party '{self.me}' expects a call from "
                                + (
                                    ", ".join(f"'{n}'" for n in self.before if n not in self.links)
                                    or "nobody"
                                )
                                + f", not from a certificate naming {sorted(names)}: check "
                                "that every party uses the same party list and the certificate "
                                "of its own id"
                            )
                        }
                    ),
                )
            address = "?"
            if protocol.transport is not None:
                address = _address(protocol.transport.get_extra_info("peername"))
                protocol.transport.close()
            self.drop_call(
                address, f"its certificate names {sorted(names)}, not a party expected to call here"
            )
            return
        protocol.party = candidates[0]
        self.register(candidates[0], protocol)
        if self._hello is not None and self.failure is None:
            protocol.send(HELLO, self._hello)  # the listener speaks first

    def register(self, party: str, protocol: FrameProtocol) -> None:
        """Count ``protocol`` as the connection to ``party``."""
        self.links[party] = protocol
        self._changed.set()

    def peer_endpoint(self, party: str) -> str:
        """``host:port`` where ``party`` listens."""
        peer = next(p for p in self.parties if p.party == party)
        return f"{peer.host}:{peer.port}"

    def waiting_for(self) -> list[str]:
        """Peers not connected yet."""
        return [n for n in self.peers if n not in self.links]

    def refused(self, party: str, exc: BaseException | None) -> None:
        """A connection we dialled closed before the listener's first frame: it refused us."""
        self.dial_failed.add(party)
        if self.closing:  # we dropped it ourselves (abort after a failure)
            return
        if isinstance(exc, ssl.SSLError):
            self.fail(
                f"TLS certificate of party '{self.me}' is not trusted by party '{party}' at "
                f"{self.peer_endpoint(party)} ({_ssl_reason(exc)}): {_CERT_ADVICE}",
                certificate=True,
            )
        else:  # TLS 1.3: our handshake ended before the listener checked our certificate
            cause = f", {exc}" if exc else ""
            self.fail(
                f"TLS certificate of party '{self.me}' is not trusted by party '{party}' at "
                f"{self.peer_endpoint(party)} (it closed the connection right after the TLS "
                f"handshake{cause}): {_CERT_ADVICE}",
                certificate=True,
            )
        self._changed.set()

    def drop_call(self, address: str, reason: str) -> None:
        """Drop an incoming connection without ending the run: note it and log a warning."""
        self.refused_calls += 1
        self.dropped_calls.append(f"{address} ({reason})")
        waiting = ", ".join(f"'{n}'" for n in self.before if n not in self.links) or "nobody"
        logger.warning(
            "party '%s' dropped a connection from %s: %s; it keeps listening for %s (a stray "
            "connection, or a party whose certificate is not from the configured CA)",
            self.me,
            address,
            reason,
            waiting,
        )
        self._changed.set()

    def deliver(self, party: str, kind: int, payload: bytes) -> None:
        """File a frame from ``party``: ABORT and DONE at once, the others in its queue."""
        if kind == ABORT:
            self.fail(f"party '{party}' stopped: {abort_reason(payload, party)}", relayed=True)
        elif kind == DONE:
            try:
                self.done[party] = decode_json(payload, kind, f"party '{party}'")
            except ProtocolError as exc:
                self.fail(str(exc))
        else:
            self.queues[party].append((kind, payload))
        self._changed.set()

    def lost(self, party: str, exc: Exception | None) -> None:
        """A connection closed; a failure unless we close or ``party`` said DONE."""
        if not self.closing and party not in self.done:
            cause = f" ({exc})" if exc else ""
            self.fail(
                f"party '{party}' closed the connection{cause}: it stopped or failed; "
                "nothing was written"
            )
        self._changed.set()

    def fail(self, message: str, *, relayed: bool = False, certificate: bool = False) -> None:
        """Record the first failure; every later wait raises it.

        A ``certificate`` failure this party found itself, naming the party whose
        certificate is not trusted, replaces a ``relayed`` one (another party's
        ABORT): so each party that checks a certificate reports its own finding.
        """
        if self.failure is None or (certificate and self._relayed):
            self.failure = message
            self._relayed = relayed
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
        name = "connect_timeout" if starting else "timeout"
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
                        f"unreachable (check hosts, ports, certificates; or raise {name}); "
                        "nothing was written"
                    )
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), min(_POLL, remaining))

        self.loop.run_until_complete(poll())

    # -- life cycle -------------------------------------------------------------------------
    def open(self, hello: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        """Connect to every peer, send our HELLO and return every peer's HELLO (JSON objects).

        On every connection the listener sends its HELLO first (right after
        the TLS handshake) and the connecting side answers once it got it.
        """
        self._hello = encode_json(hello)
        if self.before:
            self._listen()
        context = client_context(self.tls)
        tasks = [self.loop.create_task(self._dial(peer, context)) for peer in self.after]
        try:
            self._wait_connected()
        finally:
            for task in tasks:
                task.cancel()
            if self._server is not None:
                self._server.close()
        for peer in self.after:
            self.send(peer.party, HELLO, self._hello)
        received: dict[str, dict[str, Any]] = {}
        for party in self.peers:
            got, payload = self.receive(party, "the start-up handshake", starting=True)
            if got != HELLO:
                raise ProtocolError(
                    f"party '{party}' sent {KIND_NAMES[got]} instead of HELLO during the "
                    "start-up handshake: check that every party runs the same anonlab version"
                )
            received[party] = decode_json(payload, HELLO, f"party '{party}'")
        return received

    def _listen(self) -> None:
        """Start accepting the parties listed before us (each TLS handshake runs in accept)."""
        me = next(p for p in self.parties if p.party == self.me)
        accept_context = server_context(self.tls)
        try:
            self._server = self.loop.run_until_complete(
                self.loop.create_server(
                    lambda: _Acceptor(self, accept_context),
                    me.host,
                    me.port,
                )
            )
        except OSError as exc:
            raise AnonlabError(
                f"party '{self.me}' cannot listen on {me.host}:{me.port} ({exc}): choose a "
                "free port or this host's own address in the config"
            ) from exc

    def connected(self) -> bool:
        """Every peer is connected."""
        return all(n in self.links for n in self.peers)

    def settled(self) -> bool:
        """After a failure: every peer connected, or a handshake with it failed."""
        callers = sum(1 for n in self.before if n in self.links)
        return callers + self.refused_calls >= len(self.before) and all(
            p.party in self.links or p.party in self.dial_failed for p in self.after
        )

    def _wait_connected(self) -> None:
        """Wait until every peer is connected; after a failure, until every peer could learn it.

        Dropped incoming connections do not end the wait. A recorded failure
        does not stop it at once either: the listener and the dials stay up
        (at most :data:`START_GRACE` seconds more, within the connect timeout)
        so that each peer either connects, to receive our ABORT, or fails its
        own handshake with us; then the failure is raised.
        """
        deadline = self.loop.time() + self.connect_timeout

        async def poll() -> None:
            grace_end: float | None = None
            while True:
                now = self.loop.time()
                if self.failure is None:
                    if self.connected():
                        return
                    if now >= deadline:
                        raise self._connect_timeout_error()
                    end = deadline
                else:
                    if grace_end is None:
                        grace_end = min(deadline, now + START_GRACE)
                    if self.settled() or now >= grace_end:
                        return
                    end = grace_end
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), max(min(_POLL, end - now), 0))

        self.loop.run_until_complete(poll())
        self.check()

    def _connect_timeout_error(self) -> AnonlabError:
        waiting = ", ".join(f"'{n}'" for n in self.waiting_for())
        dropped = ""
        if self.dropped_calls:
            shown = "; ".join(self.dropped_calls[:3])
            more = f" and {len(self.dropped_calls) - 3} more" if len(self.dropped_calls) > 3 else ""
            dropped = f" (connections dropped here: {shown}{more})"
        return AnonlabError(
            f"connecting party '{self.me}' to {waiting} did not happen within "
            f"{self.connect_timeout:g} s{dropped}: a party stopped, hung, is unreachable or has "
            "a certificate that is not from the configured CA (check hosts, ports, "
            "certificates; or raise connect_timeout); nothing was written"
        )

    async def accept(self, transport: asyncio.Transport, context: ssl.SSLContext) -> None:
        """Run the TLS handshake of an accepted TCP connection; drop it when that fails."""
        address = _address(transport.get_extra_info("peername"))
        protocol = FrameProtocol(self, None)
        try:
            tls = await self.loop.start_tls(
                transport,
                protocol,
                context,
                server_side=True,
                ssl_handshake_timeout=min(HANDSHAKE_LIMIT, self.connect_timeout),
            )
        except (OSError, EOFError) as exc:  # ssl.SSLError is an OSError
            transport.abort()
            self.drop_call(address, handshake_failure(exc))
            return
        protocol.connection_made(expect_type(tls, asyncio.Transport, "the TLS transport"))

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
                raise ProtocolError(
                    f"party '{party}' sent {KIND_NAMES[got]} instead of {KIND_NAMES[kind]} during "
                    f"{what}: check that every party runs the same anonlab version"
                )
            received[party] = decode_json(payload, kind, f"party '{party}'")
        return received

    async def _dial(self, peer: Endpoint, context: ssl.SSLContext) -> None:
        """Connect to a peer that may not be listening yet, retrying until cancelled.

        Only a TCP connection that is refused, reset or times out is retried
        (nobody listens there yet); a failed TLS handshake is final.
        """
        while True:
            try:
                await self.loop.create_connection(
                    lambda: FrameProtocol(self, peer.party),
                    peer.host,
                    peer.port,
                    ssl=context,
                    server_hostname=peer.party,
                )
                return
            except ssl.SSLCertVerificationError as exc:
                self.dial_failed.add(peer.party)
                self.fail(
                    f"TLS certificate of party '{peer.party}' at {peer.host}:{peer.port} is not "
                    f"trusted ({exc.verify_message}): {_CERT_ADVICE}",
                    certificate=True,
                )
                return
            except ssl.SSLError as exc:  # the listener refused our certificate (TLS 1.2)
                self.refused(peer.party, exc)
                return
            except (OSError, EOFError):
                await asyncio.sleep(0.1)

    def send(self, party: str, kind: int, payload: bytes) -> None:
        """Queue one frame to ``party``."""
        self.check()
        self.links[party].send(kind, payload)

    def receive(self, party: str, what: str, *, starting: bool = False) -> tuple[int, bytes]:
        """The next HELLO, READY or DATA frame from ``party`` (waits up to the timeout)."""
        queue = self.queues[party]
        self.wait_until(
            lambda: bool(queue), f"{what}: a message from party '{party}'", starting=starting
        )
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
                p.transport is not None
                and not p.transport.is_closing()
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
        for protocol in self.protocols:
            protocol.abort()

    def close(self) -> None:
        """Close every connection (after :meth:`finish`)."""
        self.closing = True
        for protocol in self.protocols:
            if protocol.transport is not None:
                protocol.transport.close()
        with contextlib.suppress(Exception):
            self.loop.run_until_complete(asyncio.sleep(0.05))

    def bytes_sent(self) -> int:
        """Frame bytes this party put on its channel connections so far."""
        return sum(link.bytes_sent for link in self.links.values())
