"""The block variant of MDAV against exact MDAV: SSE/SST gap and CPU time as n grows.

Target (issue 14): the block variant's SSE/SST within 5 % (relative) of exact
MDAV's at every size where exact MDAV runs, up to at least 400,000 rows, and
the variant far cheaper than exact (1,000,000 x 10 within about 2x of the
30 s it took before the face repair).

Data: standard normal, 10 attributes, k = 5, drawn with ``default_rng(1)``
afresh for each size. Exact MDAV runs once per size (its time grows as n^2:
about 3 minutes of CPU at 400,000); the block variant runs ``--repeats`` times
(median CPU and wall time, the labels are the same every time), and once more
with the face repair switched off (``REPAIR_ROUNDS = 0``), which is the
variant as it was before, to show what the repair recovers. 1,000,000 rows:
block variant only. Results: benchmarks/results/mdav_blocks.json.

    python benchmarks/mdav_blocks.py                 # full run (about 10 minutes)
    python benchmarks/mdav_blocks.py --quick         # 25,000 to 100,000, one repeat
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.microaggregation import mdav_labels, scalable_mdav_labels
from anonlab.microaggregation import scalable as blocks
from anonlab.microaggregation.mdav import group_means, sse_sst
from mdav import timed  # benchmarks/mdav.py

OUT = Path(__file__).resolve().parent / "results" / "mdav_blocks.json"
SIZES = (25_000, 50_000, 100_000, 200_000, 400_000)
BIG = 1_000_000
P, K = 10, 5


def unrepaired(z: NDArray[Any], block_size: int) -> NDArray[Any]:
    """Block-variant labels with the face repair switched off (the variant before it)."""
    saved = blocks.REPAIR_ROUNDS
    blocks.REPAIR_ROUNDS = 0
    try:
        return scalable_mdav_labels(z, K, block_size)
    finally:
        blocks.REPAIR_ROUNDS = saved


def measure(n: int, repeats: int, block_size: int, with_exact: bool) -> dict[str, Any]:
    """One size: exact MDAV (once), the block variant (median of ``repeats``), no repair (once)."""
    z = np.random.default_rng(1).standard_normal((n, P))
    row: dict[str, Any] = {
        "rows": n,
        "cols": P,
        "k": K,
        "block_size": block_size,
        "blocks": len(blocks.kd_blocks(z, K, block_size)),
    }
    wall, cpu, labels = timed(lambda: scalable_mdav_labels(z, K, block_size), repeats)
    row.update(
        scalable_wall_s=wall,
        scalable_cpu_s=cpu,
        scalable_sse_sst_percent=100 * sse_sst(z, group_means(z, labels)),
    )
    sizes = np.bincount(labels)
    row.update(min_group=int(sizes.min()), max_group=int(sizes.max()))
    wall, cpu, labels = timed(lambda: unrepaired(z, block_size), 1)
    row.update(
        unrepaired_cpu_s=cpu, unrepaired_sse_sst_percent=100 * sse_sst(z, group_means(z, labels))
    )
    if with_exact:
        wall, cpu, labels = timed(lambda: mdav_labels(z, K), 1)
        exact = 100 * sse_sst(z, group_means(z, labels))
        row.update(
            exact_wall_s=wall,
            exact_cpu_s=cpu,
            exact_sse_sst_percent=exact,
            gap_percent=100 * (row["scalable_sse_sst_percent"] / exact - 1),
            unrepaired_gap_percent=100 * (row["unrepaired_sse_sst_percent"] / exact - 1),
        )
    return row


def show(row: dict[str, Any]) -> None:
    """One line of the table."""
    exact = (
        f"exact {row['exact_sse_sst_percent']:8.4f} % cpu {row['exact_cpu_s']:7.1f} s  "
        f"gap {row['gap_percent']:+6.2f} % (no repair {row['unrepaired_gap_percent']:+6.2f} %)"
        if "gap_percent" in row
        else "exact not run"
    )
    print(
        f"{row['rows']:>9,} x {row['cols']} ({row['blocks']:3} blocks)  blocks "
        f"{row['scalable_sse_sst_percent']:8.4f} % cpu {row['scalable_cpu_s']:6.1f} s "
        f"wall {row['scalable_wall_s']:6.1f} s  "
        f"(no repair {row['unrepaired_sse_sst_percent']:8.4f} % "
        f"cpu {row['unrepaired_cpu_s']:6.1f} s)  {exact}  groups {row['min_group']}.."
        f"{row['max_group']}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="25,000 to 100,000 rows, 1 repeat")
    parser.add_argument("--repeats", type=int, default=3, help="runs of the block variant")
    parser.add_argument("--big-repeats", type=int, default=1, help="runs at 1,000,000 rows")
    parser.add_argument("--block-size", type=int, default=blocks.DEFAULT_BLOCK_SIZE)
    args = parser.parse_args()
    sizes = SIZES[:3] if args.quick else SIZES
    repeats = 1 if args.quick else args.repeats
    rows = []
    for n in sizes:
        rows.append(measure(n, repeats, args.block_size, with_exact=True))
        show(rows[-1])
    if not args.quick:
        rows.append(measure(BIG, args.big_repeats, args.block_size, with_exact=False))
        show(rows[-1])
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps({"repeats": repeats, "big_repeats": args.big_repeats, "rows": rows}, indent=2)
        + "\n"
    )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
