"""Rank swapping of numeric columns: sdcMicro's ``rankSwap`` (docs/masking.md, Rank swapping).

Moore (1996), "Controlled data-swapping techniques for masking public use microdata sets",
as sdcMicro 5.8.1 implements it (``R/rankSwap.R``, ``src/RankSwapping.h``). Each column on
its own:

1. Sort the values present from the highest to the lowest (missing values stay where they
   are and are never swapped).
2. Top and bottom coding: the ``top = floor(n * top_percent / 100)`` highest values and the
   ``bottom = floor(n * bottom_percent / 100)`` lowest are set aside. With
   ``extremes="mean"`` (sdcMicro) each group is replaced by its mean, so about
   ``top_percent + bottom_percent`` percent of the released values are no original value;
   with ``extremes="permute"`` (anonlab's default) each group's values are given to its own
   records in a uniformly random order, so every released value is an original one.
3. The window: ``n'`` values remain (the middle), with mean ``a`` and variance ``s^2``
   (divisor ``n'``), and ``D = |v_bottom - v_top|`` where ``v_top`` is the lowest of the top
   group and ``v_bottom`` the highest of the bottom group (the highest and the lowest value
   when a group is empty). The window as a share of ``n'`` is
   ``P`` (``p`` percent), or ``sqrt(2 s^2 (1 - R0)) / D`` from ``r0`` (the multivariate
   preservation factor: the correlation of two swapped columns is about ``R0`` times the
   original's), or ``sqrt(8/3) K0 |a| / D`` from ``k0`` (the subset-mean preservation
   factor), Moore's (1996) relations between the three; ``W = floor(n' share)``.
4. The swap: going down the sorted middle, every value not yet swapped picks a partner
   uniformly among the values not yet swapped ``1 .. W - 1`` ranks below it, and the two
   swap; a value with no such partner stays. So no value moves more than ``W - 1`` ranks.

sdcMicro documents ``P`` as a percentage of the records but its C++ code uses it as a share
(``P = 5`` there swaps across 5 times the records, i.e. anywhere); anonlab reads ``p`` as the
documented percentage: sdcMicro's ``P = x`` is anonlab's ``p = 100 x``. When none of ``p``,
``r0``, ``k0`` is given, ``r0 = 0.95`` (sdcMicro's default). The greedy pass is sequential
by nature; it runs in one Python loop with rejection sampling (a draw uniform in the
window, redrawn while it falls on a swapped value, which leaves the choice uniform among
the values not yet swapped), the swapped values skipped in C and the pairs built with
whole-array steps after it (:func:`swap_partners`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import compress
from operator import length_hint
from typing import Any, Final, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pydantic import model_validator

from anonlab.errors import AnonlabError, present
from anonlab.masking.registry import Masked, MaskingMethod, MethodParams

Extremes = Literal["mean", "permute"]
EXTREMES: Final[tuple[str, ...]] = ("mean", "permute")
DEFAULT_R0: Final = 0.95
DEFAULT_TOP_PERCENT: Final = 5.0
DEFAULT_BOTTOM_PERCENT: Final = 5.0
_REDRAWS: Final = 16
_BLOCK: Final = 4096
"""Redraws drawn at a time and turned into Python numbers (a column needs a few thousand)."""


@dataclass(frozen=True)
class SwapColumn:
    """What rank swapping did to one column: the facts a checker needs."""

    present: int
    """Values present (not missing)."""
    top: int
    """Highest values top-coded (``extremes="mean"``) or permuted among themselves."""
    bottom: int
    """Lowest values bottom-coded or permuted among themselves."""
    top_mean: float | None
    """The mean that replaced the top group (``extremes="mean"``), else None."""
    bottom_mean: float | None
    share: float
    """The window as a share of the middle's values (step 3 of the module docstring)."""
    max_distance: int
    """``W - 1``: the most ranks a middle value moved."""
    swapped: int
    """Middle values that changed place (twice the pairs)."""


@dataclass(frozen=True)
class RankSwap:
    """The released columns and, per column, what was done."""

    released: NDArray[np.float64]
    columns: tuple[SwapColumn, ...]


def rank_swap(
    x: NDArray[np.float64],
    rng: np.random.Generator,
    *,
    p: float | None = None,
    r0: float | None = None,
    k0: float | None = None,
    top_percent: float = DEFAULT_TOP_PERCENT,
    bottom_percent: float = DEFAULT_BOTTOM_PERCENT,
    extremes: str = "permute",
) -> RankSwap:
    """Rank-swap every column of ``x`` (``n x m``, or one column) as the module docstring says.

    At most one of ``p`` (percent of the records), ``r0``, ``k0`` may be given; none means
    ``r0 = 0.95``.
    """
    data = np.asarray(x, dtype=np.float64)
    if data.ndim == 1:
        data = data[:, None]
    if data.ndim != 2:
        raise AnonlabError(f"rankswap needs a table of columns (got {data.ndim} axes)")
    _check(p, r0, k0, top_percent, bottom_percent, extremes)
    if p is None and r0 is None and k0 is None:
        r0 = DEFAULT_R0
    columns = np.ascontiguousarray(data.T)  # each column contiguous: sorts, gathers
    swapped = np.empty_like(columns)
    facts = []
    for j in range(data.shape[1]):
        swapped[j], fact = _swap_column(
            columns[j], rng, p, r0, k0, top_percent / 100.0, bottom_percent / 100.0, extremes
        )
        facts.append(fact)
    return RankSwap(np.ascontiguousarray(swapped.T), tuple(facts))


def _check(
    p: float | None,
    r0: float | None,
    k0: float | None,
    top_percent: float,
    bottom_percent: float,
    extremes: str,
) -> None:
    given = [name for name, value in (("p", p), ("r0", r0), ("k0", k0)) if value is not None]
    if len(given) > 1:
        raise AnonlabError(f"give only one of p, r0 and k0 (got {' and '.join(given)})")
    if p is not None and not 0 <= p <= 100:
        raise AnonlabError(f"p must be a percentage in [0, 100] (got {p})", parameter="p")
    if r0 is not None and not 0 <= r0 <= 1:
        raise AnonlabError(f"r0 must lie in [0, 1] (got {r0})", parameter="r0")
    if k0 is not None and not (np.isfinite(k0) and k0 >= 0):
        raise AnonlabError(f"k0 must be a number >= 0 (got {k0})", parameter="k0")
    for name, value in (("top_percent", top_percent), ("bottom_percent", bottom_percent)):
        if not 0 <= value <= 100:
            raise AnonlabError(
                f"{name} must be a percentage in [0, 100] (got {value})", parameter=name
            )
    if top_percent + bottom_percent > 100:
        raise AnonlabError("top_percent and bottom_percent together must not exceed 100")
    if extremes not in EXTREMES:
        raise AnonlabError(
            f"extremes must be one of {', '.join(EXTREMES)} (got {extremes!r})",
            parameter="extremes",
        )


def window_share(
    middle: NDArray[np.float64],
    v_top: float,
    v_bottom: float,
    p: float | None,
    r0: float | None,
    k0: float | None,
) -> float:
    """The window as a share of the middle's values (module docstring, step 3)."""
    if p is not None:
        return p / 100.0
    spread = abs(v_bottom - v_top)
    if spread == 0 or middle.size == 0:
        return 0.0
    if r0 is not None:
        variance = float(np.var(middle))
        return float(np.sqrt(2.0 * variance * (1.0 - r0)) / spread)
    return float(np.sqrt(8.0 / 3.0) * present(k0, "k0") * abs(float(np.mean(middle))) / spread)


def _swap_column(
    column: NDArray[np.float64],
    rng: np.random.Generator,
    p: float | None,
    r0: float | None,
    k0: float | None,
    top_ratio: float,
    bottom_ratio: float,
    extremes: str,
) -> tuple[NDArray[np.float64], SwapColumn]:
    missing = np.isnan(column)
    if missing.any():
        rows = np.flatnonzero(~missing)
        order, ranked = _ranked(column[rows])
        order = rows[order]
    else:
        order, ranked = _ranked(column)
    n = order.size
    top = int(np.floor(n * top_ratio + 1e-9))
    bottom = int(np.floor(n * bottom_ratio + 1e-9))
    out = column.copy()
    if n == 0:
        return out, SwapColumn(0, 0, 0, None, None, 0.0, -1, 0)
    v_top = float(ranked[top - 1] if top else ranked[0])
    v_bottom = float(ranked[n - bottom] if bottom else ranked[n - 1])
    middle = ranked[top : n - bottom]
    share = window_share(middle, v_top, v_bottom, p, r0, k0)
    width = int(np.floor(middle.size * share + 1e-9))
    partner = swap_partners(middle.size, width, rng)
    out[order[top : n - bottom]] = middle[partner]
    top_mean = bottom_mean = None
    if extremes == "mean":
        if top:
            top_mean = float(np.mean(ranked[:top]))
            out[order[:top]] = top_mean
        if bottom:
            bottom_mean = float(np.mean(ranked[n - bottom :]))
            out[order[n - bottom :]] = bottom_mean
    else:
        out[order[:top]] = ranked[:top][rng.permutation(top)]
        out[order[n - bottom :]] = ranked[n - bottom :][rng.permutation(bottom)]
    swapped = int(np.count_nonzero(partner != np.arange(middle.size)))
    fact = SwapColumn(n, top, bottom, top_mean, bottom_mean, share, width - 1, swapped)
    return out, fact


def descending(values: NDArray[np.float64]) -> NDArray[np.intp]:
    """The positions of ``values`` (no NaN) from the highest value to the lowest, equal
    values in their order (a stable sort of ``-values``).

    An unstable sort is about twice as fast and gives the same order when no two values
    are equal; with equal values the stable sort decides.
    """
    return _ranked(values)[0]


def _ranked(values: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
    """:func:`descending`'s positions and the values in that order (``values[order]``,
    as the negation of the sorted negated values: no second gather)."""
    negated = -values
    order = np.argsort(negated)
    ranked = negated[order]
    if np.any(ranked[1:] == ranked[:-1]):
        order = np.argsort(negated, kind="stable")
        ranked = negated[order]
    np.negative(ranked, out=ranked)
    return order, ranked


class _Redraws:
    """The redraws of :func:`swap_partners`: offsets ``floor(u * (W - 1))`` in a full
    window and uniforms for a window cut by the end, drawn :data:`_BLOCK` at a time."""

    def __init__(self, rng: np.random.Generator, full: int) -> None:
        self.rng = rng
        self.full = full
        self.offsets: list[int] = []
        self.uniforms: list[float] = []

    def refill(self) -> None:
        """New offsets, in place (the walk holds the list)."""
        self.offsets.extend((self.rng.random(_BLOCK) * self.full).astype(np.intp).tolist())

    def partner(self, free: bytearray, j: int, span: int, redraws: int) -> int:
        """A free position of ``j + 1 .. j + span`` by up to ``redraws`` draws uniform in
        it, then uniformly among the free ones listed; ``j`` itself when none is free."""
        full = span == self.full
        for _ in range(redraws):
            if full:
                if not self.offsets:
                    self.refill()
                k = j + 1 + self.offsets.pop()
            else:
                if not self.uniforms:
                    self.uniforms = self.rng.random(_BLOCK).tolist()
                k = j + 1 + int(self.uniforms.pop() * span)
            if free[k]:
                return k
        window = np.flatnonzero(np.frombuffer(free[j + 1 : j + 1 + span], dtype=np.uint8))
        return j + 1 + int(window[self.rng.integers(window.size)]) if window.size else j


def swap_partners(size: int, width: int, rng: np.random.Generator) -> NDArray[np.intp]:
    """Moore's greedy pairing on ``size`` ranked values with window ``width`` (``W``).

    Returns ``partner``: position ``j`` of the ranking receives the value of position
    ``partner[j]`` (an involution; ``partner[j] == j`` for a value that stays). Position
    ``j``, when not yet paired, pairs with a position drawn uniformly among those not yet
    paired in ``j + 1 .. min(size, j + width) - 1`` (sdcMicro's ``RankSwap`` loop).

    The draw is rejection sampling: a position uniform over the whole window, drawn again
    while it falls on a paired position, is uniform over the free ones. The first draws of
    all positions come at once, ``j + 1 + floor(u_j * span_j)`` with ``u = rng.random``;
    the redraws come from a pool of integers ``floor(u * (W - 1))`` drawn
    :data:`_BLOCK` at a time (the offsets of a full window; the last ``W`` positions, whose
    window is cut by the end, draw from a pool of uniforms instead). After
    :data:`_REDRAWS` redraws on paired positions the partner is drawn by ``rng.integers``
    among the free positions listed, so a window with no free position ends the search.

    The walk skips the paired positions in C (``itertools.compress`` reads the flags of
    the free positions as it goes, so a position paired by an earlier step is skipped); a
    free position whose first draw is free (seven in ten) only marks it. Only the redrawn
    partners are written down; the involution is built from them with whole-array steps.
    """
    if width < 2 or size < 2:
        return np.arange(size, dtype=np.intp)
    positions = np.arange(size - 1)
    span_of = np.minimum(size - 1 - positions, width - 1)
    first = (rng.random(size - 1) * span_of).astype(np.intp)  # floor: u * span >= 0
    first += positions + 1
    free = bytearray(b"\x01") * size  # 1: not yet paired
    pools = _Redraws(rng, width - 1)
    offsets = pools.offsets
    near_end = size - width  # from here on the window ends at the last position
    redrawn: list[int] = []  # the positions whose partner is not their first draw
    partners: list[int] = []  # their partners (themselves: no free position to pair with)
    flags = iter(free)  # read as the walk goes: a position paired meanwhile is skipped
    for k in compress(first.tolist(), flags):
        if free[k]:
            free[k] = 0
            continue
        j = size - 1 - length_hint(flags)  # the position walked (its flag just read)
        if j < near_end:
            if not offsets:
                pools.refill()
            k = j + 1 + offsets.pop()
            if not free[k]:
                k = pools.partner(free, j, width - 1, _REDRAWS - 1)
        else:
            k = pools.partner(free, j, size - j - 1, _REDRAWS)
        if k != j:
            free[k] = 0
        redrawn.append(j)
        partners.append(k)
    # every free position but the last chose a partner: its first draw, or a redraw
    if redrawn:
        first[np.array(redrawn, dtype=np.intp)] = np.array(partners, dtype=np.intp)
    pairs = np.flatnonzero(np.frombuffer(free, dtype=np.uint8)[: size - 1])
    partner = np.arange(size, dtype=np.intp)
    pairs = pairs[first[pairs] != pairs]  # a position with no free partner stays
    partner[pairs] = first[pairs]
    partner[first[pairs]] = pairs
    return partner


# ---------------------------------------------------------------------------
# The registered method (anonlab mask --method rankswap; docs/masking.md)
# ---------------------------------------------------------------------------


class RankSwapParams(MethodParams):
    """sdcMicro's ``P`` (here percent: ``p``), ``R0`` (``r0``), ``K0`` (``k0``),
    ``TopPercent`` and ``BottomPercent`` (``top_percent``, ``bottom_percent``), and
    ``extremes`` (``permute``, anonlab's default, or sdcMicro's ``mean``)."""

    p: float | None = None
    r0: float | None = None
    k0: float | None = None
    top_percent: float = DEFAULT_TOP_PERCENT
    bottom_percent: float = DEFAULT_BOTTOM_PERCENT
    extremes: Extremes = "permute"

    @model_validator(mode="after")
    def _one_window(self) -> RankSwapParams:
        _check(self.p, self.r0, self.k0, self.top_percent, self.bottom_percent, self.extremes)
        return self


def apply_rank_swap(
    frame: pd.DataFrame, columns: Sequence[str], params: Any, seed: int | None
) -> Masked:
    """:func:`rank_swap` on each column with ``default_rng([seed, column position])``."""
    from anonlab.masking.noise import numeric_block, released_columns

    p: RankSwapParams = params
    if seed is None:
        raise AnonlabError("rankswap draws random numbers: give a seed", parameter="seed")
    x = numeric_block(frame, columns)
    y = np.empty_like(x)
    entries: dict[str, Any] = {}
    for c, name in enumerate(columns):
        result = rank_swap(
            x[:, c],
            np.random.default_rng([seed, c]),
            p=p.p,
            r0=p.r0,
            k0=p.k0,
            top_percent=p.top_percent,
            bottom_percent=p.bottom_percent,
            extremes=p.extremes,
        )
        y[:, c] = result.released[:, 0]
        entries[name] = asdict(result.columns[0])
    window = "p" if p.p is not None else "k0" if p.k0 is not None else "r0"
    section = {
        "extremes": p.extremes,
        "window_from": window,
        "r0": DEFAULT_R0 if window == "r0" and p.r0 is None else p.r0,
        "ties": "record order",
        "seed_layout": "default_rng([seed, column position])",
        "columns": entries,
    }
    return Masked(released_columns(frame, columns, y), section)


METHOD = MaskingMethod(
    name="rankswap",
    sdcmicro="rankSwap",
    params=RankSwapParams,
    apply=apply_rank_swap,
    randomized=True,
    kind="numeric",
    summary="rank swapping (Moore 1996): --p, --r0 or --k0; --top-percent, --bottom-percent",
)
