"""How the fusion engine talks to the other parties: the ``Network`` protocol.

Contract (binding for every ``Network`` implementation; changes are listed
here, newest first):

Change 2: :func:`quantize` works on a logarithmic scale. A linear scale kept
only a few significant digits of the small normalized scores the loose
bounds give (a score of 1e-7 became an integer near 1e5), so distinct
scores could tie; on the log scale every positive score keeps a relative
precision of about 1e-9. The integers still lie in [0, SCORE_SCALE].

Change 1: there is no gains exchange at the start any more. As the paper
does per data table, each provider computes g(attribute) over its own
columns only, so nothing but instructions and the final table parts travel;
the ``gains`` message kind is gone (kind 2 is left unused).

* Scores: the engine normalizes each score to [0, 1] by a bound that every
  party derives from the shared config and the record count, then quantizes it
  with :func:`quantize` (a fixed-point logarithm, order-preserving); a provider
  with no valid candidate enters :data:`NO_CANDIDATE` (-1).
* ``argmax(scores)``: one quantized score per LOCAL provider index; every
  process gets the same answer: the provider index with the highest score
  (ties: lowest index), ``None`` when every provider entered ``NO_CANDIDATE``.
  A helper process calls it with an empty mapping.
* ``send(sender, payload)`` delivers ``payload`` from local provider ``sender``
  to every other PROVIDER process (helpers take part in ``argmax`` only);
  ``receive(sender)`` waits for the next payload of provider ``sender``.
  Payloads from one sender arrive in the order sent; ``send`` must not block
  on the receivers (buffer it), because the engine uses it in these steps:
  1. each round: ``argmax``; the winner sends its instructions
     (messages.encode_instructions), every other provider receives them;
  2. end (after ``argmax`` returned ``None``): every provider, in index order,
     sends its part of the fused table (messages.encode_columns); the others
     receive them in index order.
* ``bytes_sent()``: party id -> payload bytes sent so far (all parties).
* ``close()``: release sockets/tasks; called once by whoever made the network.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from anonlab.errors import AnonlabError

SCORE_SCALE = 2**40
"""The largest quantized score (that of a normalized score of 1)."""

LOG2_FLOOR = -1100.0
"""log2 of the smallest positive score told apart from 0 (below every positive double)."""

NO_CANDIDATE = -1
"""The quantized score of a provider that has no valid specialization left."""


def quantize(score: float | None) -> int:
    """Quantize a normalized score in [0, 1]; ``None`` gives :data:`NO_CANDIDATE`.

    ``q = 1 + round((log2(score) - LOG2_FLOOR) / -LOG2_FLOOR * (SCORE_SCALE - 1))``
    for a positive score and 0 for a score of 0: strictly order-preserving up to
    a relative difference of about 2**-30 (7e-10) at any magnitude, with 1
    giving ``SCORE_SCALE``. Every party computes the same integer from the same
    score, so the plain and the secure maximum pick the same winner.
    """
    if score is None:
        return NO_CANDIDATE
    if not 0.0 <= score <= 1.0 + 1e-9:
        raise ValueError(f"score {score!r} is not normalized to [0, 1]")
    if score == 0.0:
        return 0
    position = (math.log2(min(score, 1.0)) - LOG2_FLOOR) / -LOG2_FLOOR
    return 1 + round(position * (SCORE_SCALE - 1))


def plain_argmax(scores: Mapping[int, int]) -> int | None:
    """The index with the highest quantized score (ties: lowest index), or ``None``."""
    best: int | None = None
    for index in sorted(scores):
        value = scores[index]
        if value == NO_CANDIDATE:
            continue
        if value < 0 or value > SCORE_SCALE:
            raise AnonlabError(
                f"provider {index} entered score {value}, outside 0..{SCORE_SCALE}"
                f" and not the sentinel {NO_CANDIDATE}: a party misbehaves"
            )
        if best is None or value > scores[best]:
            best = index
    return best


@runtime_checkable
class Network(Protocol):
    """What the engine needs from the parties around it (see the module docstring)."""

    local_providers: tuple[int, ...]
    private: bool

    def argmax(self, scores: Mapping[int, int]) -> int | None:
        """The winning provider index this round, or ``None`` to stop."""
        ...

    def send(self, sender: int, payload: bytes) -> None:
        """Deliver ``payload`` from local provider ``sender`` to every other provider."""
        ...

    def receive(self, sender: int) -> bytes:
        """The next payload sent by provider ``sender``."""
        ...

    def bytes_sent(self) -> dict[str, int]:
        """Payload bytes sent so far, per party id."""
        ...

    def close(self) -> None:
        """Release resources."""
        ...


class LocalNetwork:
    """All providers in one process: a plain (not private) max and no wire.

    ``bytes_sent`` counts what the same run would put on the wire between
    real provider processes: each payload once per other provider.
    """

    private = False

    def __init__(self, party_ids: Sequence[str], n_providers: int | None = None) -> None:
        """``party_ids`` are the providers' ids in index order (then any helpers)."""
        count = len(party_ids) if n_providers is None else n_providers
        if count < 1:
            raise AnonlabError("a network needs at least one provider")
        self.party_ids = tuple(party_ids)
        self.local_providers: tuple[int, ...] = tuple(range(count))
        self._sent: dict[str, int] = dict.fromkeys(self.party_ids, 0)
        self.rounds = 0

    def argmax(self, scores: Mapping[int, int]) -> int | None:
        """Plain maximum over every provider's score (all are local)."""
        if set(scores) != set(self.local_providers):
            raise AnonlabError("the in-process network needs one score per provider")
        self.rounds += 1
        return plain_argmax(scores)

    def send(self, sender: int, payload: bytes) -> None:
        """Count the bytes: every other provider is in this process already."""
        others = len(self.local_providers) - 1
        self._sent[self.party_ids[sender]] += len(payload) * others

    def receive(self, sender: int) -> bytes:
        """Never needed: every provider is local, so nothing arrives from outside."""
        raise AnonlabError(
            f"provider {sender} is local: the in-process network has nothing to receive"
        )

    def bytes_sent(self) -> dict[str, int]:
        """Bytes the run would send per party."""
        return dict(self._sent)

    def close(self) -> None:
        """Nothing to release."""
