"""The fusion channel's codec, fuzzed: whatever the bytes, a frame, a message or a ProtocolError.

Properties (hypothesis): random bytes, truncated frames, oversized length
prefixes, a wrong version and bit flips in valid frames never raise anything
but :class:`ProtocolError` (an :class:`AnonlabError`), and the decoder never
holds more than one header and one frame's payload. The codec is pure (no
socket, no clock), so "never a hang" is a property of its loops, which each
consume at least one byte per turn; hypothesis runs without a deadline here,
as the machine is shared.
"""

from __future__ import annotations

import itertools
import json
import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonlab.errors import AnonlabError
from anonlab.fusion import codec
from anonlab.fusion.codec import (
    DATA,
    HEADER,
    HELLO,
    KIND_NAMES,
    MAX_CONTROL,
    Frame,
    FrameDecoder,
    ProtocolError,
    decode_frames,
    decode_hello,
    decode_json,
    encode_frame,
    encode_json,
)
from anonlab.fusion.messages import (
    Columns,
    Instructions,
    decode_columns,
    decode_instructions,
    encode_columns,
    encode_instructions,
)

FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ_JSON = settings(FUZZ, max_examples=80)  # nested JSON values are slow to generate
SMALL_LIMIT = 4096  # a decoder limit small enough to test the cap without big buffers

kinds = st.sampled_from(sorted(KIND_NAMES))
frames = st.builds(Frame, kinds, st.binary(max_size=300))


def encoded(items: list[Frame]) -> bytes:
    return b"".join(encode_frame(f.kind, f.payload) for f in items)


def feed_in_chunks(decoder: FrameDecoder, data: bytes, cuts: list[int]) -> list[Frame]:
    """Feed ``data`` cut at ``cuts``; check the buffer bound after every chunk."""
    out: list[Frame] = []
    points = sorted({0, len(data), *[c % (len(data) + 1) for c in cuts]})
    for start, end in itertools.pairwise(points):
        out.extend(decoder.feed(data[start:end]))
        assert decoder.pending <= HEADER.size + max(decoder.max_frame, MAX_CONTROL)
    return out


def only_protocol_errors(action: Callable[[], Any]) -> Any:
    """Run ``action``; a ProtocolError is a clean refusal, anything else fails the test."""
    try:
        return action()
    except ProtocolError as exc:
        assert isinstance(exc, AnonlabError)
        assert str(exc) and "\n" not in str(exc)  # one line
        return None


# -- frames ----------------------------------------------------------------------------------------


@FUZZ
@given(st.lists(frames, max_size=8), st.lists(st.integers(min_value=0), max_size=12))
def test_valid_frames_round_trip_in_any_chunking(items: list[Frame], cuts: list[int]) -> None:
    data = encoded(items)
    decoder = FrameDecoder()
    assert feed_in_chunks(decoder, data, cuts) == items
    decoder.finish()
    assert decode_frames(data) == items


@FUZZ
@given(st.binary(max_size=2000), st.lists(st.integers(min_value=0), max_size=8))
def test_random_bytes_give_frames_or_a_protocol_error(data: bytes, cuts: list[int]) -> None:
    decoder = FrameDecoder(max_frame=SMALL_LIMIT)

    def decode() -> list[Frame]:
        got = feed_in_chunks(decoder, data, cuts)
        decoder.finish()
        return got

    got = only_protocol_errors(decode)
    if got is not None:  # accepted: the bytes were exactly these frames
        assert encoded(got) == data


@FUZZ
@given(st.lists(frames, min_size=1, max_size=4), st.data())
def test_truncated_frames_are_refused(items: list[Frame], data: st.DataObject) -> None:
    whole = encoded(items)
    ends = set()
    position = 0
    for f in items:  # frame boundaries: a cut there is not a truncation
        position += HEADER.size + len(f.payload)
        ends.add(position)
    cut = data.draw(
        st.integers(min_value=1, max_value=len(whole) - 1).filter(lambda c: c not in ends),
        label="cut",
    )
    with pytest.raises(ProtocolError, match="stream ended inside a frame"):
        decode_frames(whole[:cut])


@FUZZ
@given(kinds, st.integers(min_value=0, max_value=2**32 - 1))
def test_oversized_length_prefix_is_refused_at_the_header(kind: int, length: int) -> None:
    """An over-limit length is refused from the 5 header bytes alone: nothing is buffered."""
    limit = codec.frame_limit(kind, SMALL_LIMIT)
    decoder = FrameDecoder(max_frame=SMALL_LIMIT)
    header = HEADER.pack(kind, length)
    if length <= limit:
        assert list(decoder.feed(header)) == ([] if length else [Frame(kind, b"")])
        return
    with pytest.raises(ProtocolError, match="over the"):
        list(decoder.feed(header))
    assert decoder.pending == 0
    with pytest.raises(ProtocolError):  # a decoder that failed stays failed
        list(decoder.feed(b"\x00" * 10))


@FUZZ
@given(
    st.integers(min_value=0, max_value=255).filter(lambda k: k not in KIND_NAMES),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_unknown_kind_is_refused(kind: int, length: int) -> None:
    with pytest.raises(ProtocolError, match=f"unknown kind {kind}"):
        decode_frames(HEADER.pack(kind, length))


def test_real_limits_hold_for_control_and_data_frames() -> None:
    decoder = FrameDecoder()
    with pytest.raises(ProtocolError, match="HELLO frame of"):
        list(decoder.feed(HEADER.pack(HELLO, MAX_CONTROL + 1)))
    assert list(FrameDecoder().feed(HEADER.pack(DATA, MAX_CONTROL + 1))) == []  # not yet whole
    with pytest.raises(ProtocolError, match="DATA frame of"):
        list(FrameDecoder().feed(HEADER.pack(DATA, codec.MAX_FRAME + 1)))
    with pytest.raises(ProtocolError, match="exceeds"):
        encode_frame(HELLO, b"x" * (MAX_CONTROL + 1))
    with pytest.raises(ValueError, match="unknown frame kind"):
        encode_frame(9, b"")


def test_frames_before_a_malformed_header_are_delivered() -> None:
    good = encode_frame(DATA, b"abc")
    decoder = FrameDecoder()
    got: list[Frame] = []
    with pytest.raises(ProtocolError, match="unknown kind 255"):
        for frame in decoder.feed(good + b"\xff\x00\x00\x00\x01!"):
            got.append(frame)
    assert got == [Frame(DATA, b"abc")]


# -- control messages --------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@FUZZ_JSON
@given(st.dictionaries(st.text(max_size=10), json_values, max_size=6))
def test_json_messages_round_trip(obj: dict[str, Any]) -> None:
    assert decode_json(encode_json(obj), HELLO) == obj


@FUZZ_JSON
@given(st.binary(max_size=500) | json_values.map(lambda v: json.dumps(v).encode()))
def test_any_control_payload_is_an_object_or_a_protocol_error(payload: bytes) -> None:
    got = only_protocol_errors(lambda: decode_json(payload, HELLO, "party 'x'"))
    assert got is None or isinstance(got, dict)


@pytest.mark.parametrize(
    "payload",
    [
        b"[" * 100_000 + b"]" * 100_000,  # deeper than the recursion limit
        b'{"a": ' + b"9" * 5000 + b"}",  # more digits than int() converts
        b"\xff\xfe{}",  # not UTF-8
        b"null",
        b"[]",
        b"",
    ],
)
def test_hostile_json_is_refused_cleanly(payload: bytes) -> None:
    with pytest.raises(ProtocolError, match="malformed HELLO message"):
        decode_json(payload, HELLO, "party 'x'")


@FUZZ
@given(st.one_of(st.integers(), st.text(max_size=5), st.none()), st.text(max_size=12))
def test_hello_of_another_version_or_protocol_is_refused(version: Any, protocol: str) -> None:
    hello = codec.hello_message("a", "d" * 64, "0.1.0")
    hello.update(version=version, protocol=protocol)
    payload = encode_json(hello)
    if (
        version == codec.PROTOCOL_VERSION
        and not isinstance(version, bool)
        and protocol == codec.PROTOCOL_NAME
    ):
        assert decode_hello(payload, "a", "0.1.0")["party"] == "a"
        return
    with pytest.raises(ProtocolError, match="speaks"):
        decode_hello(payload, "a", "0.1.0")


# -- DATA payloads (messages) under bit flips -------------------------------------------------


def sample_messages() -> list[tuple[bytes, Callable[[bytes], Any]]]:
    instr = Instructions(
        "age", 3, "[1, 9]", ("[1, 5)", "[5, 9]"), (np.array([4, 1]), np.array([0, 7, 9]))
    )
    cols = Columns(1, {"race": ["*", "*", "x"], "sex": ["Male", "Female", "Male"]})
    return [
        (encode_instructions(instr), decode_instructions),
        (encode_columns(cols), decode_columns),
        (encode_json(codec.hello_message("a", "d" * 64, "0.1.0")), lambda p: decode_json(p, HELLO)),
    ]


MESSAGES = sample_messages()


@FUZZ
@given(st.sampled_from(range(len(MESSAGES))), st.data())
def test_bit_flips_in_valid_frames_give_a_message_or_a_protocol_error(
    which: int, data: st.DataObject
) -> None:
    payload, decode = MESSAGES[which]
    kind = HELLO if which == 2 else DATA
    frame = bytearray(encode_frame(kind, payload))
    flips = data.draw(
        st.lists(st.integers(0, 8 * len(frame) - 1), min_size=1, max_size=3), label="bits"
    )
    for bit in flips:
        frame[bit // 8] ^= 1 << (bit % 8)

    def decode_all() -> list[Any]:
        return [decode(f.payload) for f in decode_frames(bytes(frame), max_frame=SMALL_LIMIT)]

    only_protocol_errors(decode_all)


@FUZZ
@given(st.binary(max_size=400), st.sampled_from([decode_instructions, decode_columns]))
def test_random_message_bytes_are_refused_cleanly(
    body: bytes, decode: Callable[[bytes], Any]
) -> None:
    only_protocol_errors(lambda: decode(body))
    only_protocol_errors(lambda: decode(b"ANLF" + struct.pack("<HB", 1, 1) + body))


@FUZZ
@given(st.integers(min_value=0, max_value=2**16 - 1).filter(lambda v: v != 1))
def test_message_of_another_version_is_refused(version: int) -> None:
    payload = bytearray(MESSAGES[0][0])
    payload[4:6] = struct.pack("<H", version)
    with pytest.raises(ProtocolError, match=f"version {version}"):
        decode_instructions(bytes(payload))


@FUZZ_JSON
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "attribute",
                "parent",
                "parent_label",
                "children",
                "counts",
                "provider",
                "columns",
                "rows",
                "labels",
            ]
        ),
        json_values,
        max_size=9,
    ),
    st.sampled_from([1, 3]),
    st.binary(max_size=64),
)
def test_headers_of_any_shape_are_refused_cleanly(
    header: dict[str, Any], kind: int, body: bytes
) -> None:
    head = json.dumps(header).encode()
    blob = struct.pack("<4sHBI", b"ANLF", 1, kind, len(head)) + head + body
    only_protocol_errors(lambda: decode_instructions(blob))
    only_protocol_errors(lambda: decode_columns(blob))


@pytest.mark.parametrize(
    "header",
    [
        {"provider": 0, "columns": [], "rows": 10**30, "labels": []},
        {"provider": 0, "columns": ["a"], "rows": 2**40, "labels": [["x"]]},
        {"attribute": "a", "parent": 10**20, "parent_label": "*", "children": ["x"], "counts": [0]},
        {"attribute": "a", "parent": 0, "parent_label": "*", "children": ["x"], "counts": [2**63]},
    ],
)
def test_huge_numbers_in_headers_are_refused(header: dict[str, Any]) -> None:
    head = json.dumps(header).encode()
    kind = 3 if "provider" in header else 1
    blob = struct.pack("<4sHBI", b"ANLF", 1, kind, len(head)) + head
    decode = decode_columns if kind == 3 else decode_instructions
    with pytest.raises(ProtocolError, match=r"outside|counts are not"):
        decode(blob)
