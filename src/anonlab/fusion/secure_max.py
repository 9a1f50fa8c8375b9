"""Secure argmax of one score per provider with MPyC (semi-honest, honest majority).

Each round every provider secret-shares one integer (its local best score,
quantized by ``anonlab.fusion.channel.quantize``, or the sentinel -1 when it
has no valid candidate) among all parties with Shamir's scheme (threshold
t = (m - 1) // 2). The parties evaluate MPyC's tournament argmax, whose
comparison ``max0 < max1`` keeps the earlier index on ties, so ties go to the
lowest provider index. Only one number is opened::

    r = if_else(max < 0, P, argmax)          # P = number of providers

so every party learns the winning provider index, or ``P`` meaning "nobody
has a candidate: stop", and nothing else (not the maximum, not any other
score).

MPyC needs an honest majority: with m = 2 parties the threshold is 0 and a
share equals the secret, so fewer than 3 parties are refused; two providers
run with a third, input-less helper party.

MPyC pitfalls handled here: it parses ``sys.argv`` and configures logging at
import (:func:`load_mpyc` imports it with a private argument list and
silences it); it listens on every interface (:class:`PartyLoop` binds the
listener to the configured host instead and wraps every MPyC connection in
TLS with the parties' certificates); a lost peer leaves its futures pending
forever (every wait here has a deadline and watches the connections).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import io
import logging
import sys
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from anonlab.errors import AnonlabError, present
from anonlab.fusion.transport import (
    Endpoint,
    TlsFiles,
    check_timeout,
    client_context,
    server_context,
)

SCORE_BITS = 44
"""Bit length of the secure integers.

Quantized scores lie in [-1, 2**40] (``channel.SCORE_SCALE`` and the sentinel);
MPyC compares two secure integers through the sign of their difference, which
must lie in [-2**(l-1), 2**(l-1)): differences here are at most 2**40 + 1 in
size, so l = 42 is the least that works and 44 leaves a margin (inputs up to
2**42 are accepted). The comparison's cost grows with l: measured here 44
bits take about half the time per round of 64 bits.
"""

MIN_PARTIES = 3


def load_mpyc() -> ModuleType:
    """Import ``mpyc.runtime`` without letting it read our command line or print to stdout."""
    if "mpyc.runtime" in sys.modules:
        module: ModuleType = sys.modules["mpyc.runtime"]
        return module
    saved_argv = sys.argv
    sys.argv = [saved_argv[0] if saved_argv else "anonlab", "--no-log"]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            importlib.import_module("mpyc.runtime")
    finally:
        sys.argv = saved_argv
    loaded: ModuleType = sys.modules["mpyc.runtime"]
    return loaded


class LossRecorder(asyncio.Protocol):
    """Wraps one MPyC connection's protocol to note which peer's connection closed first."""

    def __init__(self, inner: Any, losses: list[int]) -> None:
        self.inner = inner
        self.losses = losses

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        result: bool | None = self.inner.eof_received()
        return result

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        peer = getattr(self.inner, "peer_pid", None)
        if peer is not None:
            self.losses.append(int(peer))
        self.inner.connection_lost(exc)


class PartyLoop(asyncio.SelectorEventLoop):
    """An event loop that binds MPyC's listener to one host and puts TLS on its connections.

    MPyC calls ``create_server(factory, port=...)`` (every interface, no TLS
    unless its own ``.config`` files exist) and ``create_connection(factory,
    host, port)``; this loop fills in the configured host and the parties'
    TLS contexts, checking each peer's certificate name against its party id.
    A ``create_server`` call that names its host (anonlab's own channel, which
    runs the TLS handshake itself) is passed through unchanged.
    """

    def __init__(
        self, bind_host: str, tls: TlsFiles | None, names: dict[tuple[str, int], str]
    ) -> None:
        super().__init__()
        self.bind_host = bind_host
        self.names = names
        self.server_tls = server_context(tls) if tls is not None else None
        self.client_tls = client_context(tls) if tls is not None else None
        self.losses: list[int] = []
        """MPyC party indices whose connection closed, in the order it happened."""

    def _recording(self, protocol_factory: Any) -> Any:
        return lambda: LossRecorder(protocol_factory(), self.losses)

    async def create_server(
        self, protocol_factory: Any, host: Any = None, port: Any = None, **kwargs: Any
    ) -> asyncio.Server:
        if host is not None:  # not MPyC's listener (anonlab's channel runs its own TLS)
            return await super().create_server(protocol_factory, host, port, **kwargs)
        if kwargs.get("ssl") is None and self.server_tls is not None:
            kwargs["ssl"] = self.server_tls
        return await super().create_server(
            self._recording(protocol_factory), self.bind_host, port, **kwargs
        )

    async def create_connection(
        self, protocol_factory: Any, host: Any = None, port: Any = None, **kwargs: Any
    ) -> Any:
        if kwargs.get("ssl") is None and self.client_tls is not None:
            kwargs["ssl"] = self.client_tls
            kwargs["server_hostname"] = self.names.get((host, port), host)
        return await super().create_connection(
            self._recording(protocol_factory), host, port, **kwargs
        )


def party_loop(parties: Sequence[Endpoint], me: str, tls: TlsFiles | None) -> PartyLoop:
    """The event loop of party ``me`` given every party's MPyC endpoint."""
    own = next(p for p in parties if p.party == me)
    return PartyLoop(own.host, tls, {(p.host, p.port): p.party for p in parties})


class SecureMax:
    """One party's side of the repeated secure argmax (one MPyC runtime, many rounds).

    ``parties`` lists every party's MPyC endpoint in configuration order (the
    MPyC party index is the position in this list), ``providers`` the party ids
    that input a score each round, in provider-index order. Call
    :meth:`start`, then :meth:`argmax` once per round in every process, then
    :meth:`close` (or :meth:`abort` after an error).
    """

    def __init__(
        self,
        parties: Sequence[Endpoint],
        me: str,
        providers: Sequence[str],
        *,
        tls: TlsFiles | None,
        timeout: float = 120.0,
        connect_timeout: float | None = None,
        bits: int = SCORE_BITS,
        loop: PartyLoop | None = None,
        watch: Callable[[], None] | None = None,
    ) -> None:
        if len(parties) < MIN_PARTIES:
            raise AnonlabError(
                f"secure max needs at least {MIN_PARTIES} parties, got {len(parties)}: MPyC with "
                "2 parties gives no secrecy (a share equals the secret); add an input-less party "
                'with role = "helper" (for example the data recipient)'
            )
        names = [p.party for p in parties]
        if me not in names:
            raise AnonlabError(f"party '{me}' is not in the party list: use one of {names}")
        missing = [p for p in providers if p not in names]
        if missing or not providers:
            raise AnonlabError(f"providers {missing or '[]'} are not parties: fix the party list")
        self.parties = list(parties)
        self.me = me
        self.pid = names.index(me)
        self.providers = list(providers)
        self.input_pids = [names.index(p) for p in providers]
        self.is_provider = me in providers
        self.timeout = check_timeout(timeout, "timeout")
        self.connect_timeout = check_timeout(
            self.timeout if connect_timeout is None else connect_timeout, "connect_timeout"
        )
        self.bits = bits
        self.tls = tls
        self.rounds = 0
        self.seconds = 0.0
        self._bytes = 0
        self._failure: BaseException | None = None
        self._rt: Any = None
        self._loop: PartyLoop | None = loop
        self._owns_loop = loop is None
        self._watch = watch
        self._secint: Any = None

    # -- life cycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Connect to every other party's MPyC runtime (waits up to ``connect_timeout``)."""
        runtime = load_mpyc()
        loop = self._loop
        if loop is None:
            loop = self._loop = party_loop(self.parties, self.me, self.tls)
        asyncio.set_event_loop(loop)
        argv = [sys.argv[0] if sys.argv else "anonlab", "--no-log", "-I", str(self.pid)]
        for party in self.parties:
            argv += ["-P", f"{party.host}:{party.port}"]
        saved_argv = sys.argv
        sys.argv = argv
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                rt = runtime.setup()
        finally:
            sys.argv = saved_argv
        rt.logging(False)
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        loop.set_exception_handler(self._record_failure)  # MPyC installed its own
        self._rt = rt
        self._secint = rt.SecInt(self.bits)
        try:
            self._wait(
                rt.start(), "connecting the secure-max runtime (MPyC)", watch=False, starting=True
            )
        except BaseException:
            self.abort()
            raise

    def argmax(self, score: int | None) -> int | None:
        """This round's winner: the provider index with the highest score, None to stop.

        A provider passes its quantized local best (``-1`` for "no valid
        candidate"); a helper passes ``None``. Every party gets the same answer.
        """
        if self.is_provider:
            if score is None or not -1 <= int(score) < 1 << (self.bits - 2):
                raise ValueError(f"provider score {score!r} outside [-1, 2**{self.bits - 2})")
            value = int(score)
        elif score is not None:
            raise ValueError("a helper party inputs no score")
        else:
            value = 0
        if self._rt is None:
            raise RuntimeError("SecureMax.start() was not called")
        began = time.perf_counter()
        rt = self._rt
        shares = rt.input([self._secint(value)], senders=self.input_pids)
        index, best = rt.argmax([s[0] for s in shares])
        stop_or_index = rt.if_else(best < 0, len(self.providers), index)
        try:
            opened = int(self._wait(rt.output(stop_or_index), "a secure-max round"))
        except BaseException:
            self.abort()
            raise
        self.rounds += 1
        self.seconds += time.perf_counter() - began
        self._count_bytes()
        if not 0 <= opened <= len(self.providers):
            self.abort()
            raise AnonlabError(
                f"the secure max opened {opened}, not a provider index: the parties disagree on "
                "the party list; check that all use the same config"
            )
        return None if opened == len(self.providers) else opened

    def bytes_sent(self) -> int:
        """Bytes this party's MPyC runtime sent so far."""
        self._count_bytes()
        return self._bytes

    def close(self, synchronized: bool = False) -> None:
        """Close the runtime's connections.

        Without ``synchronized`` this runs MPyC's own shutdown, which waits
        for every party (and unpickles a small synchronization message from
        each). A caller that has already learned that every party finished its
        last round (``PartyNetwork`` does, with its DONE exchange) passes
        ``synchronized=True``: the connections are then closed after their
        buffered bytes are written, and nothing from a peer is unpickled.
        """
        rt = self._rt
        if rt is None:
            return
        self._count_bytes()
        if synchronized:
            for peer in rt.parties:
                transport = getattr(peer.protocol, "transport", None)
                if peer.pid != rt.pid and transport is not None:
                    transport.close()
            loop = present(self._loop, "the MPC event loop")
            loop.run_until_complete(asyncio.sleep(0.01))
        else:
            try:
                self._wait(rt.shutdown(), "closing the secure-max runtime", watch=False)
            except BaseException:
                self.abort()
                raise
        self._close_loop()

    def abort(self) -> None:
        """Drop every connection at once (after an error), without waiting for anyone."""
        rt = self._rt
        if rt is not None:
            for peer in rt.parties:
                protocol = peer.protocol
                if peer.pid != rt.pid and protocol is not None and hasattr(protocol, "transport"):
                    with contextlib.suppress(Exception):
                        protocol.transport.abort()
        self._close_loop()

    # -- internals --------------------------------------------------------------------------
    def _close_loop(self) -> None:
        loop = self._loop
        self._rt = None
        if not self._owns_loop:
            return
        self._loop = None
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(Exception):
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.sleep(0))
        loop.close()
        asyncio.set_event_loop(None)

    def _count_bytes(self) -> None:
        rt = self._rt
        if rt is None:
            return
        sent = sum(
            getattr(peer.protocol, "nbytes_sent", 0)
            for peer in rt.parties
            if peer.pid != rt.pid and peer.protocol is not None
        )
        self._bytes = max(self._bytes, sent)

    def _record_failure(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, (ConnectionError, OSError, EOFError)) and self._failure is None:
            self._failure = exc

    def _lost_peer(self) -> str | None:
        rt = self._rt
        if self._loop is not None and self._loop.losses:
            return str(self.parties[self._loop.losses[0]].party)
        for peer in rt.parties:
            if peer.pid == rt.pid:
                continue
            protocol = peer.protocol
            transport = getattr(protocol, "transport", None)
            if protocol is None or transport is None or transport.is_closing():
                return str(self.parties[peer.pid].party)
        return None

    def _wait(
        self, awaitable: Any, what: str, *, watch: bool = True, starting: bool = False
    ) -> Any:
        """Run ``awaitable`` on the loop with a deadline, failing fast when a peer is lost."""
        loop = present(self._loop, "the MPC event loop")
        task = asyncio.ensure_future(awaitable, loop=loop)
        limit = self.connect_timeout if starting else self.timeout
        name = "connect_timeout" if starting else "timeout"
        deadline = loop.time() + limit

        async def guard() -> Any:
            while not task.done():
                self._check_parties(what, watch)
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise AnonlabError(
                        f"{what} did not finish within {limit:g} s: a party stopped, hung or is "
                        f"unreachable (check hosts, ports, certificates; or raise {name}); "
                        "nothing was written"
                    )
                await asyncio.wait([task], timeout=min(0.05, remaining))
            return task.result()

        guarded = loop.create_task(guard())
        try:
            return loop.run_until_complete(guarded)
        except RuntimeError as exc:
            # MPyC stops the loop when one of its tasks fails, e.g. sending to a peer whose
            # connection is gone: report the lost peer instead of the bare RuntimeError
            if guarded.done() or "stopped before" not in str(exc):
                raise
            self._watch_once()
            lost = self._lost_peer()
            who = f"party '{lost}'" if lost is not None else "a party"
            raise AnonlabError(
                f"{who} left during {what}: it stopped or failed; nothing was written"
            ) from None
        finally:
            for pending in (guarded, task):
                if not pending.done():
                    pending.cancel()

    def _check_parties(self, what: str, watch: bool) -> None:
        """Raise when the channel failed, a peer left (with ``watch``) or a connection broke."""
        if self._watch is not None:
            self._watch()
        lost = self._lost_peer() if watch else None
        if lost is not None:
            cause = f" ({self._failure})" if self._failure is not None else ""
            raise AnonlabError(
                f"party '{lost}' left during {what}{cause}: it stopped or failed; "
                "nothing was written"
            )
        if self._failure is not None:
            raise AnonlabError(
                f"a party's connection failed during {what} ({self._failure}): it stopped "
                "or the network failed; nothing was written"
            )

    def _watch_once(self) -> None:
        """Raise the channel's recorded failure, if the caller gave a watch."""
        if self._watch is not None:
            self._watch()
