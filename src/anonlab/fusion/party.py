"""One real party process: handshake, the networked ``Network``, and the run.

``run_party(config, party_id)`` is what ``anonlab party`` calls on each host:

1. connect the TLS channel to every other party and exchange HELLOs (protocol
   name and version, party id, :meth:`FusionConfig.shared_digest`); any
   mismatch stops every party before a single record is read;
2. read this party's own file only (a provider) and start the MPyC runtime;
3. run the engine's one loop (:func:`anonlab.fusion.engine.run_parties` for a
   provider, :func:`anonlab.fusion.engine.run_helper` for a helper) over
   :class:`PartyNetwork`: the secure max picks each round's winner, whose
   instructions travel on the channel;
4. exchange DONE messages (each party's byte counts) so that nobody writes an
   output unless every party finished, then shut MPyC and the channel down.

Any error (a party that stops, hangs past the timeout, aborts or sends
something malformed) is raised as :class:`AnonlabError` after an ABORT with
the reason went to every reachable peer, so all parties stop with a clear
message and none writes a table.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from anonlab import __version__
from anonlab.errors import AnonlabError, present
from anonlab.fusion import codec
from anonlab.fusion.certs import check_party_id
from anonlab.fusion.codec import DATA, KIND_NAMES, READY
from anonlab.fusion.config import FusionConfig
from anonlab.fusion.secure_max import MIN_PARTIES, SecureMax, party_loop
from anonlab.fusion.transport import Channel, Endpoint, TlsFiles, check_timeout
from anonlab.progress import ProgressFn

if TYPE_CHECKING:
    from anonlab.fusion.engine import FusionResult
    from anonlab.fusion.provider import ProviderState

DEFAULT_TIMEOUT = 120.0
"""Seconds a party waits for any one step of another party during the run before it gives up."""

DEFAULT_CONNECT_TIMEOUT = 300.0
"""Seconds a party waits for the others to start, connect and load their data."""


def check_party_setup(config: FusionConfig, party_id: str) -> None:
    """Refuse settings a networked run cannot use, before touching the network."""
    config.party(party_id)
    for p in config.parties:
        check_party_id(p.id)
    if len(config.parties) < MIN_PARTIES:
        raise AnonlabError(
            f"{config.source} lists {len(config.parties)} parties: the secure max needs at least "
            f"{MIN_PARTIES} (MPyC with 2 parties gives no secrecy, a share equals the secret); "
            'add an input-less [[parties]] entry with role = "helper" (e.g. the data recipient)'
        )
    for p in config.parties:
        if p.port is None or p.mpc_port is None:
            raise AnonlabError(
                f"party '{p.id}' has no port or mpc_port: give both (two free TCP ports) for "
                "every party"
            )
    addresses: dict[tuple[str, int], str] = {}
    for p in config.parties:
        for port in (p.port, p.mpc_port):
            key = (p.host, present(port, f"party {p.id}'s port"))
            if key in addresses:
                raise AnonlabError(
                    f"{p.host}:{port} is used twice (parties '{addresses[key]}' and '{p.id}'): "
                    "give every party its own port and mpc_port"
                )
            addresses[key] = p.id
    tls_files(config, party_id)


def tls_files(config: FusionConfig, party_id: str) -> TlsFiles:
    """This party's CA, certificate and key from ``[tls]`` (``{party}`` is the party id)."""
    tls = config.tls
    if not tls:
        raise AnonlabError(
            f"{config.source} has no [tls] table: give ca, cert and key (e.g. ca = "
            '"certs/ca.crt", cert = "certs/{party}.crt", key = "certs/{party}.key"); '
            "anonlab.fusion.certs.make_certificates creates test certificates"
        )
    unknown = sorted(set(tls) - {"ca", "cert", "key"})
    if unknown:
        raise AnonlabError(
            f"{config.source}: unknown setting 'tls.{unknown[0]}': use ca, cert and key"
        )
    missing = [k for k in ("ca", "cert", "key") if not isinstance(tls.get(k), str)]
    if missing:
        raise AnonlabError(f"{config.source}: setting 'tls.{missing[0]}' is missing: add it")
    party = config.party(party_id)
    own = {k: party.model_extra.get(k) for k in ("cert", "key")} if party.model_extra else {}
    cert = own.get("cert") if isinstance(own.get("cert"), str) else tls["cert"]
    key = own.get("key") if isinstance(own.get("key"), str) else tls["key"]
    return TlsFiles.for_party(tls["ca"], str(cert), str(key), party_id)


@dataclass
class PartyStats:
    """What one party measured about its own run."""

    connect_seconds: float = 0.0
    run_seconds: float = 0.0
    rounds: int = 0
    mpc_seconds: float = 0.0
    bytes_sent: dict[str, dict[str, int]] = field(default_factory=dict)


class PartyNetwork:
    """The networked :class:`anonlab.fusion.channel.Network` of one party process.

    ``argmax`` is MPyC's secure argmax over one score per provider; ``send``
    and ``receive`` move the engine's payloads as DATA frames on the TLS
    channel between provider processes. Helpers join the secure max and the
    handshakes only.
    """

    private = True

    def __init__(
        self,
        config: FusionConfig,
        party_id: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    ) -> None:
        timeout = check_timeout(timeout, "timeout")
        connect_timeout = check_timeout(connect_timeout, "connect_timeout")
        check_party_setup(config, party_id)
        self.config = config
        self.me = party_id
        self.timeout = timeout
        self.provider_ids = [p.id for p in config.providers]
        index = config.provider_index(party_id)
        self.index = index
        self.local_providers: tuple[int, ...] = () if index is None else (index,)
        tls = tls_files(config, party_id)
        channel_ends = [Endpoint(p.id, p.host, int(p.port or 0)) for p in config.parties]
        mpc_ends = [Endpoint(p.id, p.host, int(p.mpc_port or 0)) for p in config.parties]
        self.loop = party_loop(mpc_ends, party_id, tls)
        self.loop.set_exception_handler(lambda loop, context: None)
        self.channel = Channel(self.loop, channel_ends, party_id, tls, timeout, connect_timeout)
        self.secure_max = SecureMax(
            mpc_ends,
            party_id,
            self.provider_ids,
            tls=tls,
            timeout=timeout,
            connect_timeout=connect_timeout,
            loop=self.loop,
            watch=self.channel.check,
        )
        self.stats = PartyStats()
        self.winners: list[str | None] = []
        self._closed = False

    # -- start-up ---------------------------------------------------------------------------
    def hello(self) -> dict[str, Any]:
        """What this party announces: protocol, version, its id and the shared digest."""
        return codec.hello_message(self.me, self.config.shared_digest(), __version__)

    def connect(self) -> None:
        """Open the channel, check every peer's HELLO, then start the secure max."""
        began = time.perf_counter()
        asyncio.set_event_loop(self.loop)
        mine = self.hello()
        hellos = self.channel.open(mine)
        for party, theirs in hellos.items():
            check_hello(mine, theirs, party)
        self.stats.connect_seconds = time.perf_counter() - began

    def check_data(self, state: ProviderState | None) -> None:
        """Check that every provider holds the same records and class values.

        Providers exchange the record count and SHA-256 digests of the sorted
        record ids and of the class column in id order: both are known to
        every provider already, so the digests reveal nothing new.
        """
        mine = data_summary(state)
        theirs = self.channel.exchange(READY, mine, "the data check", starting=True)
        if state is None:
            return
        for party, other in theirs.items():
            if other.get("records") is None:  # a helper
                continue
            for key, what in (
                ("records", "record count"),
                ("ids", "record ids"),
                ("classes", f"class column '{self.config.class_column}'"),
            ):
                if other.get(key) != mine[key]:
                    raise AnonlabError(
                        f"party '{party}' holds a different {what} than '{self.me}' (records: "
                        f"{other.get('records')} vs {mine['records']}): every provider needs the "
                        "same record ids and class values"
                    )

    def start_secure_max(self) -> None:
        """Connect the MPyC runtimes (after this party's own data loaded)."""
        began = time.perf_counter()
        self.secure_max.start()
        self.stats.connect_seconds += time.perf_counter() - began

    # -- the Network protocol ---------------------------------------------------------------
    def argmax(self, scores: Mapping[int, int]) -> int | None:
        """Secure argmax: this party's score in, the winning provider index (or None) out."""
        if set(scores) != set(self.local_providers):
            raise AnonlabError(
                f"party '{self.me}' must enter exactly its own score (provider "
                f"{list(self.local_providers)}), got {sorted(scores)}"
            )
        score = scores[self.index] if self.index is not None else None
        winner = self.secure_max.argmax(score)
        self.winners.append(None if winner is None else self.provider_ids[winner])
        return winner

    def send(self, sender: int, payload: bytes) -> None:
        """Send ``payload`` from this provider to every other provider process."""
        if sender != self.index:
            raise AnonlabError(f"party '{self.me}' cannot send for provider {sender}")
        for party in self.provider_ids:
            if party != self.me:
                self.channel.send(party, DATA, payload)

    def receive(self, sender: int) -> bytes:
        """The next payload of provider ``sender`` (waits up to the timeout)."""
        party = self.provider_ids[sender]
        if party == self.me:
            raise AnonlabError(f"party '{self.me}' cannot receive from itself")
        kind, payload = self.channel.receive(party, "a fusion round")
        if kind != DATA:
            raise AnonlabError(
                f"party '{party}' sent {KIND_NAMES[kind]} in the middle of the run: check that "
                "every party runs the same anonlab version; nothing was written"
            )
        return payload

    def own_bytes(self) -> dict[str, int]:
        """Bytes this party sent: on the channel, in MPyC, and their total."""
        channel, mpc = self.channel.bytes_sent(), self.secure_max.bytes_sent()
        return {"channel": channel, "mpc": mpc, "total": channel + mpc}

    def bytes_sent(self) -> dict[str, int]:
        """Total bytes sent per party id (other parties' counts arrive with their DONE)."""
        out = {p.id: 0 for p in self.config.parties}
        for party, counts in self.stats.bytes_sent.items():
            out[party] = int(counts.get("total", 0))
        out[self.me] = self.own_bytes()["total"]
        return out

    # -- the end ----------------------------------------------------------------------------
    def finish(self) -> None:
        """Exchange DONE (with byte counts) with every party, then shut everything down."""
        self.stats.rounds = self.secure_max.rounds
        self.stats.mpc_seconds = self.secure_max.seconds
        own = self.own_bytes()
        done = self.channel.finish(
            {"party": self.me, "bytes_sent": own, "rounds": self.secure_max.rounds}
        )
        rounds = {party: info.get("rounds") for party, info in done.items()}
        if any(r != self.secure_max.rounds for r in rounds.values()):
            raise AnonlabError(
                f"parties ran different numbers of rounds ({rounds}, here "
                f"{self.secure_max.rounds}): they disagree; nothing was written"
            )
        counts = {party: _byte_counts(info) for party, info in done.items()}
        counts[self.me] = own
        self.stats.bytes_sent = counts
        self.secure_max.close(synchronized=True)
        self.close()

    def abort(self, reason: str) -> None:
        """Tell every peer why this party stops, and drop all connections."""
        if self._closed:
            return
        with contextlib.suppress(Exception):
            self.channel.abort(reason)
        with contextlib.suppress(Exception):
            self.secure_max.abort()
        self.close()

    def close(self) -> None:
        """Release sockets and the event loop (idempotent)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self.channel.close()
        loop = self.loop
        if not loop.is_closed():
            with contextlib.suppress(Exception):
                for task in asyncio.all_tasks(loop):
                    task.cancel()
                loop.run_until_complete(asyncio.sleep(0))
            loop.close()
        asyncio.set_event_loop(None)


def data_summary(state: ProviderState | None) -> dict[str, Any]:
    """Record count and digests of the record ids and class values (None for a helper)."""
    if state is None:
        return {"records": None, "ids": None, "classes": None}
    ids = hashlib.sha256("\n".join(map(str, state.ids)).encode("utf-8")).hexdigest()
    labels = [state.class_labels[c] for c in state.classes]
    classes = hashlib.sha256("\n".join(labels).encode("utf-8")).hexdigest()
    return {"records": int(state.n), "ids": ids, "classes": classes}


@dataclass
class PartyOutcome:
    """What one party ends with: the fused table (providers only) and its own measurements.

    ``time_seconds`` is the fusion loop (first round to the end of the table
    exchange), as in ``fuse``; ``total_seconds`` also counts connecting,
    reading the own file and the closing handshake.
    """

    party: str
    role: str
    result: FusionResult | None
    rounds: int
    winners: list[str]
    time_seconds: float
    total_seconds: float
    connect_seconds: float
    mpc_seconds: float
    bytes_sent: dict[str, dict[str, int]]

    def report(self) -> dict[str, Any]:
        """The report keys of a ``party`` run (add :func:`anonlab.report.report_header`)."""
        out: dict[str, Any] = {"party": self.party, "role": self.role}
        if self.result is not None:
            out.update(self.result.report())
        out.update(
            {
                "private": True,
                "rounds": self.rounds,
                "time_seconds": round(self.time_seconds, 4),
                "rounds_per_second": round(self.rounds / self.time_seconds, 2)
                if self.time_seconds > 0
                else None,
                "connect_seconds": round(self.connect_seconds, 4),
                "total_seconds": round(self.total_seconds, 4),
                "secure_max_calls": self.rounds + 1,
                "secure_max_ms_per_call": round(1000 * self.mpc_seconds / (self.rounds + 1), 3),
                "winners": self.winners,
                "bytes_sent": {p: c.get("total", 0) for p, c in self.bytes_sent.items()},
                "bytes_sent_detail": self.bytes_sent,
            }
        )
        return out


def run_party(
    config: FusionConfig,
    party_id: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    progress: ProgressFn | None = None,
) -> PartyOutcome:
    """Run one party of a networked fusion to the end (see the module docstring).

    A provider reads only its own file and returns the fused table in
    ``result``; a helper returns ``result=None``. Raises :class:`AnonlabError`
    (after telling the other parties) when anything goes wrong. ``progress``
    hears ``("fusion rounds", rounds done, None)`` once per round.
    """
    from anonlab.fusion.engine import run_helper, run_parties
    from anonlab.fusion.provider import load_provider

    began = time.perf_counter()
    network = PartyNetwork(config, party_id, timeout=timeout, connect_timeout=connect_timeout)
    index = network.index
    try:
        network.connect()
        state = load_provider(config, index) if index is not None else None
        network.check_data(state)
        network.start_secure_max()
        loop_began = time.perf_counter()
        result = run_parties([state], network, progress=progress) if state is not None else None
        if state is None:
            run_helper(network, progress=progress)
        loop_seconds = time.perf_counter() - loop_began
        network.finish()
    except AnonlabError as exc:
        network.abort(str(exc))
        raise
    except KeyboardInterrupt:
        network.abort(f"party '{party_id}' was interrupted")
        raise
    except BaseException as exc:
        network.abort(f"party '{party_id}' failed with an internal error ({type(exc).__name__})")
        raise
    if result is not None:
        result.bytes_sent = network.bytes_sent()
    stats = network.stats
    return PartyOutcome(
        party=party_id,
        role="provider" if index is not None else "helper",
        result=result,
        rounds=max(stats.rounds - 1, 0),
        winners=[w for w in network.winners if w is not None],
        time_seconds=loop_seconds,
        total_seconds=time.perf_counter() - began,
        connect_seconds=stats.connect_seconds,
        mpc_seconds=stats.mpc_seconds,
        bytes_sent=stats.bytes_sent,
    )


def _byte_counts(info: Mapping[str, Any]) -> dict[str, int]:
    counts = info.get("bytes_sent")
    if not isinstance(counts, Mapping):
        return {"channel": 0, "mpc": 0, "total": 0}
    return {k: int(v) for k, v in counts.items() if isinstance(v, int)}


def check_hello(mine: Mapping[str, Any], theirs: Mapping[str, Any], party: str) -> None:
    """Refuse a peer that speaks another protocol version or runs another configuration."""
    codec.check_hello(theirs, party, str(mine.get("anonlab")))
    if theirs.get("party") != party:
        raise AnonlabError(
            f"the party with the certificate of '{party}' calls itself {theirs.get('party')!r}: "
            "check that each party uses its own certificate and its own party id"
        )
    if theirs.get("digest") != mine.get("digest"):
        raise AnonlabError(
            f"party '{party}' runs a different configuration (shared digest "
            f"{str(theirs.get('digest'))[:12]} vs {str(mine.get('digest'))[:12]} here): every "
            "party needs the same templates, k, taxonomies, class, score, sensitivity and party "
            "list"
        )
