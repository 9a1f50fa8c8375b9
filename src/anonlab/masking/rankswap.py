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
by nature; it runs in one Python loop over plain lists with rejection sampling (a draw
uniform in the window, redrawn while it falls on a swapped value, which leaves the choice
uniform among the values not yet swapped): about 0.15 us a value, the pairs built with
whole-array steps after it (:func:`swap_partners`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
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
"""Pool uniforms turned into Python floats at a time (the redraws need a few thousand)."""


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
        order = rows[descending(column[rows])]
    else:
        order = descending(column)
    n = order.size
    ranked = column[order]
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
    negated = -values
    order = np.argsort(negated)
    ranked = negated[order]
    if np.any(ranked[1:] == ranked[:-1]):
        return np.argsort(negated, kind="stable")
    return order


def swap_partners(size: int, width: int, rng: np.random.Generator) -> NDArray[np.intp]:
    """Moore's greedy pairing on ``size`` ranked values with window ``width`` (``W``).

    Returns ``partner``: position ``j`` of the ranking receives the value of position
    ``partner[j]`` (an involution; ``partner[j] == j`` for a value that stays). Position
    ``j``, when not yet paired, pairs with a position drawn uniformly among those not yet
    paired in ``j + 1 .. min(size, j + width) - 1`` (sdcMicro's ``RankSwap`` loop).

    The draws: every position's first draw ``j + 1 + floor(u_j * span_j)`` at once
    (``u = rng.random(size)``), then a pool of ``size + 64`` uniforms (refilled when used
    up) for the redraws of a first draw that fell on a paired position, at most
    :data:`_REDRAWS` of them, then a uniform choice among the free positions by
    ``rng.integers``. The loop itself only walks the positions once: a paired position
    is skipped, a free one takes its first draw when that is free (most do), and only the
    pairs whose first draw was redrawn are written down; the involution is built from
    them with whole-array steps afterwards.
    """
    if width < 2 or size < 2:
        return np.arange(size, dtype=np.intp)
    positions = np.arange(size)
    span_of = np.minimum(size, positions + width) - positions - 1
    first = (positions + 1 + np.floor(rng.random(size) * span_of)).astype(np.intp)
    chosen: list[int] = first.tolist()
    chunk = size + 64
    pool = rng.random(chunk)
    used = 0  # uniforms of the pool used
    ready: list[float] = []  # pool[used:] as Python floats, converted a block at a time
    taken = bytearray(size)
    near_end = size - width  # from here on the window ends at the last position
    redrawn: dict[int, int] = {}  # position -> its partner when not its first draw
    for j in range(size - 1):
        if taken[j]:
            continue
        k = chosen[j]
        if taken[k]:
            span = width - 1 if j < near_end else size - j - 1
            k = -1
            for _ in range(_REDRAWS):
                if not ready:
                    if used == chunk:
                        pool = rng.random(chunk)
                        used = 0
                    ready = pool[used : used + _BLOCK].tolist()
                    ready.reverse()
                candidate = j + 1 + int(ready.pop() * span)
                used += 1
                if not taken[candidate]:
                    k = candidate
                    break
            if k < 0:
                free = [c for c in range(j + 1, j + 1 + span) if not taken[c]]
                if not free:
                    redrawn[j] = j  # no free partner: the value stays
                    continue
                k = free[int(rng.integers(len(free)))]
            redrawn[j] = k
        taken[k] = 1
    # the pairs: every position not taken (but the last) chose a partner, ``first`` or
    # its redraw; a taken position is its chooser's partner
    chooser = np.flatnonzero(np.frombuffer(taken, dtype=np.uint8)[: size - 1] == 0)
    if redrawn:
        fixed = np.fromiter(redrawn.keys(), dtype=np.intp, count=len(redrawn))
        first[fixed] = np.fromiter(redrawn.values(), dtype=np.intp, count=len(redrawn))
    chooser = chooser[first[chooser] != chooser]
    partner = np.arange(size, dtype=np.intp)
    partner[chooser] = first[chooser]
    partner[first[chooser]] = chooser
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
