"""The channel's codec: frames and control messages as pure functions over bytes.

Nothing here touches a socket, a clock or an event loop; the connection layer
(:mod:`anonlab.fusion.transport`) feeds the bytes it receives into a
:class:`FrameDecoder` and sends what :func:`encode_frame` returns. The DATA
payloads (a round's instructions, a provider's part of the table) have their
own versioned encoding in :mod:`anonlab.fusion.messages`, which raises the
same :class:`ProtocolError`.

Wire format, version 1 (see docs/fusion-protocol.md). Every frame is::

    kind (1 byte) | length (4 bytes, big-endian, unsigned) | payload (length bytes)

``HELLO``, ``READY``, ``DONE`` and ``ABORT`` carry UTF-8 JSON objects (at most
:data:`MAX_CONTROL` bytes); ``DATA`` carries the bytes the engine hands over
(at most :data:`MAX_FRAME` bytes). Anything else (an unknown kind, a length
over the limit of its kind, a payload that is not a JSON object, a HELLO of
another protocol or version) raises :class:`ProtocolError`, a one-line
:class:`anonlab.errors.AnonlabError`. A decoder holds at most one header and
one frame's payload, so a peer cannot make it buffer more than the limit.
Nothing is unpickled.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from anonlab.errors import AnonlabError

PROTOCOL_NAME = "anonlab-fusion"
PROTOCOL_VERSION = 1
HELLO, DATA, DONE, ABORT, READY = 1, 2, 3, 4, 5
KIND_NAMES = {HELLO: "HELLO", DATA: "DATA", DONE: "DONE", ABORT: "ABORT", READY: "READY"}
MAX_FRAME = 1 << 30
"""The largest DATA payload, in bytes (the length field could say up to 2**32 - 1)."""
MAX_CONTROL = 1 << 20
"""The largest payload of a JSON control frame (HELLO, READY, DONE, ABORT), in bytes."""
HEADER = struct.Struct(">BI")


class ProtocolError(AnonlabError):
    """A frame or message that does not follow the fusion channel's protocol."""


@dataclass(frozen=True)
class Frame:
    """One decoded frame: its kind (a key of :data:`KIND_NAMES`) and payload."""

    kind: int
    payload: bytes


def frame_limit(kind: int, max_frame: int = MAX_FRAME) -> int:
    """The largest payload a frame of ``kind`` may carry (``max_frame`` for DATA)."""
    return max_frame if kind == DATA else min(MAX_CONTROL, max_frame)


def encode_frame(kind: int, payload: bytes, max_frame: int = MAX_FRAME) -> bytes:
    """One frame: kind byte, 4-byte big-endian payload length, payload."""
    if kind not in KIND_NAMES:
        raise ValueError(f"unknown frame kind {kind}")
    limit = frame_limit(kind, max_frame)
    if len(payload) > limit:
        raise ProtocolError(
            f"a {KIND_NAMES[kind]} message of {len(payload)} bytes exceeds the "
            f"{limit}-byte limit of the fusion channel"
        )
    return HEADER.pack(kind, len(payload)) + bytes(payload)


def check_header(kind: int, length: int, max_frame: int = MAX_FRAME) -> None:
    """Refuse a frame header of an unknown kind or over its kind's length limit."""
    if kind not in KIND_NAMES:
        raise ProtocolError(f"malformed frame: unknown kind {kind} (length {length})")
    limit = frame_limit(kind, max_frame)
    if length > limit:
        raise ProtocolError(
            f"malformed frame: a {KIND_NAMES[kind]} frame of {length} bytes, "
            f"over the {limit}-byte limit (kind {kind}, length {length})"
        )


class FrameDecoder:
    """Splits a byte stream into frames, checking each header as soon as it is complete.

    :meth:`feed` takes received bytes and yields every frame completed by
    them; a malformed header raises :class:`ProtocolError`, and the decoder
    then refuses everything after it. :meth:`finish` says whether the stream
    ended between frames. The buffer never holds more than one frame.
    """

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buffer = bytearray()
        self._need: int | None = None  # payload length of the frame whose header was read
        self._kind = 0
        self._failed: ProtocolError | None = None

    @property
    def pending(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return len(self._buffer)

    def feed(self, data: bytes) -> Iterator[Frame]:
        """Add ``data`` and yield, in order, every frame it completes.

        Consume the iterator: the bytes are taken in as it advances. A
        malformed header raises :class:`ProtocolError` after the frames
        before it were yielded.
        """
        if self._failed is not None:
            raise self._failed
        view = memoryview(data)
        while view.nbytes:
            view = self._take(view)
            frame = self._complete()
            if frame is not None:
                yield frame

    def _take(self, view: memoryview) -> memoryview:
        """Move bytes from ``view`` into the buffer, up to the end of the current header or
        payload; return the rest."""
        want = HEADER.size if self._need is None else self._need
        count = min(want - len(self._buffer), view.nbytes)
        self._buffer.extend(view[:count])
        return view[count:]

    def _complete(self) -> Frame | None:
        """Finish a header (checking it) or a frame, if the buffer holds one."""
        if self._need is None:
            if len(self._buffer) < HEADER.size:
                return None
            kind, length = HEADER.unpack(self._buffer)
            try:
                check_header(kind, length, self.max_frame)
            except ProtocolError as exc:
                self._failed = exc
                self._buffer.clear()
                raise
            self._buffer.clear()
            self._need, self._kind = length, kind
        if len(self._buffer) < self._need:
            return None
        frame = Frame(self._kind, bytes(self._buffer))
        self._buffer.clear()
        self._need = None
        return frame

    def finish(self) -> None:
        """Refuse a stream that ended inside a frame (a truncated frame)."""
        if self._failed is not None:
            raise self._failed
        if self._need is not None or self._buffer:
            have = len(self._buffer)
            what = (
                f"{have} of the {self._need} payload bytes of a {KIND_NAMES[self._kind]} frame"
                if self._need is not None
                else f"{have} of the {HEADER.size} header bytes of a frame"
            )
            raise ProtocolError(f"malformed frame: the stream ended inside a frame (got {what})")


def decode_frames(data: bytes, max_frame: int = MAX_FRAME) -> list[Frame]:
    """Every frame of ``data``, which must hold whole frames only."""
    decoder = FrameDecoder(max_frame)
    frames = list(decoder.feed(data))
    decoder.finish()
    return frames


# -- control messages (JSON objects) -----------------------------------------------------------


def encode_json(obj: Mapping[str, Any]) -> bytes:
    """The payload of a control frame: the object as UTF-8 JSON with sorted keys."""
    return json.dumps(dict(obj), sort_keys=True).encode("utf-8")


def decode_json(payload: bytes, kind: int, sender: str = "a party") -> dict[str, Any]:
    """Parse a control payload, refusing anything that is not a JSON object.

    Refuses too: text that is not UTF-8, nesting deeper than Python's
    recursion limit, numbers of more digits than Python converts.
    """
    name = KIND_NAMES.get(kind, f"kind-{kind}")
    try:
        obj = json.loads(bytes(payload).decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError included
        obj = None
    if not isinstance(obj, dict):
        raise ProtocolError(
            f"{sender} sent a malformed {name} message (not a JSON object): check that every "
            "party runs the same anonlab version; nothing was written"
        )
    return obj


def hello_message(party: str, digest: str, anonlab_version: str) -> dict[str, Any]:
    """What a party announces in its HELLO: protocol, version, id, shared digest."""
    return {
        "protocol": PROTOCOL_NAME,
        "version": PROTOCOL_VERSION,
        "party": party,
        "digest": digest,
        "anonlab": anonlab_version,
    }


def check_hello(hello: Mapping[str, Any], sender: str, anonlab_version: str) -> None:
    """Refuse a HELLO of another protocol or protocol version."""
    if hello.get("protocol") != PROTOCOL_NAME or hello.get("version") != PROTOCOL_VERSION:
        raise ProtocolError(
            f"party '{sender}' speaks {hello.get('protocol')!r} version {hello.get('version')!r}"
            f", not {PROTOCOL_NAME!r} version {PROTOCOL_VERSION}: run the same anonlab version "
            f"(here {anonlab_version}, there {hello.get('anonlab')!r}) everywhere"
        )


def decode_hello(payload: bytes, sender: str, anonlab_version: str) -> dict[str, Any]:
    """A peer's HELLO, refused when it is malformed or of another protocol or version."""
    hello = decode_json(payload, HELLO, f"party '{sender}'")
    check_hello(hello, sender, anonlab_version)
    return hello


def abort_reason(payload: bytes, sender: str) -> str:
    """The one-line reason of an ABORT (``no reason given`` when it is malformed)."""
    try:
        reason = decode_json(payload, ABORT, f"party '{sender}'").get("error")
    except ProtocolError:
        reason = None
    return " ".join(str(reason).split()) if reason is not None else "no reason given"
