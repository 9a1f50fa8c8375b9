"""The EM4ADOM paper's experiments: CASC sets and Adult, k = 3..10, MDAV + every measure.

Part 1: Tarragona (834 x 13), Census = CASCrefmicrodata (1,080 x 13) and EIA
(4,092 x 11: UTILITYID + the 10 revenue/sales columns), exact MDAV for k = 3..10,
lambda = (0.5, 0, 0.5), tau = (0.5, 0.5), gamma = (0.5, 0.5), ID averaged over
p = 1..10: table of ILh, ILs, IL, DLD, DLD_expected, ID, DR, score and the R-U map
of each set (benchmarks/results/em4adom_ru_<set>.png).

Part 2: Adult, 1,000 records drawn with seed 1 (``DataFrame.sample(random_state=1)``),
QIs age (numeric), workclass, education, native-country, marital-status, race, sex
(nominal), occupation sensitive (kept as is), mixed MDAV for k = 3..10: ZIL,
ZIL in percent, ILR, DLD (R-U maps em4adom_ru_adult_zil.png / _ilr.png).

    python benchmarks/em4adom.py          # about a minute; writes benchmarks/results/em4adom.json
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from anonlab.htmlreport.plots import ru_map_figure, save_png
from anonlab.metrics import evaluate
from anonlab.metrics.tradeoff import best_point
from anonlab.microaggregation import microaggregate

REPO = Path(__file__).resolve().parents[1]
SDC = REPO / "data" / "sdc"
RESULTS = REPO / "benchmarks" / "results"
EIA_COLUMNS = [
    "UTILITYID",
    "RESREVENUE",
    "RESSALES",
    "COMREVENUE",
    "COMSALES",
    "INDREVENUE",
    "INDSALES",
    "OTHREVENUE",
    "OTHRSALES",
    "TOTREVENUE",
    "TOTSALES",
]
SETS = {"Tarragona": None, "Census": None, "EIA": EIA_COLUMNS}
FILES = {"Tarragona": "Tarragona.csv", "Census": "CASCrefmicrodata.csv", "EIA": "EIA.csv"}
ADULT_NOMINAL = ["workclass", "education", "native-country", "marital-status", "race", "sex"]
KS = range(3, 11)
SHOWN = ("ILh", "ILs", "IL", "DLD", "DLD_expected", "ID", "DR", "score")


def casc_part() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, cols in SETS.items():
        data = pd.read_csv(SDC / FILES[name])
        columns = cols or [str(c) for c in data.columns]
        points = []
        for k in KS:
            masked = microaggregate(data, columns, k).masked
            m = evaluate(data, masked, columns, lambdas=(0.5, 0, 0.5), tau=(0.5, 0.5)).measures
            points.append({"k": k, **{key: m[key] for key in SHOWN}})
        best = best_point(points)
        out[name] = {"points": points, "best_k": best["k"] if best else None}
        save_png(
            ru_map_figure(
                points,
                "IL",
                "DR",
                "k",
                out[name]["best_k"],
                title=f"R-U map: {name} (MDAV, k = 3..10)",
            ),
            RESULTS / f"em4adom_ru_{name.lower()}.png",
        )
        print(
            f"\n{name}  ({data.shape[0]} x {len(columns)}); lowest score at k = "
            f"{out[name]['best_k']}"
        )
        print("  k " + " ".join(f"{s:>12}" for s in SHOWN))
        for p in points:
            print(f"{p['k']:3d} " + " ".join(f"{p[s]:12.4f}" for s in SHOWN))
    return out


def adult_part() -> dict[str, Any]:
    adult = pd.read_csv(REPO / "data" / "adult" / "adult.csv", sep=";", dtype=str)
    sample = adult.sample(n=1000, random_state=1).reset_index(drop=True)
    points = []
    for k in KS:
        masked = microaggregate(sample, ["age"], k, nominal=ADULT_NOMINAL).masked
        m = evaluate(sample, masked, ["age"], nominal=ADULT_NOMINAL).measures
        points.append(
            {
                "k": k,
                "ZIL": m["ZIL"],
                "ZIL_percent": m["ZIL_percent"],
                "ILR": m["ILR"],
                "DLD": m["DLD"],
                "DLD_expected": m["DLD_expected"],
                "ILh_age": m["ILh"],
            }
        )
    save_png(
        ru_map_figure(
            [{"k": p["k"], "ZIL": p["ZIL_percent"], "DLD": p["DLD"]} for p in points],
            "ZIL",
            "DLD",
            "k",
            title="R-U map: Adult, ZIL % vs DLD",
        ),
        RESULTS / "em4adom_ru_adult_zil.png",
    )
    save_png(
        ru_map_figure(
            [{"k": p["k"], "ILR": p["ILR"], "DLD": p["DLD"]} for p in points],
            "ILR",
            "DLD",
            "k",
            title="R-U map: Adult, ILR vs DLD",
        ),
        RESULTS / "em4adom_ru_adult_ilr.png",
    )
    print("\nAdult (1,000 records, seed 1; 7 QIs)")
    print("  k          ZIL   ZIL %      ILR      DLD  DLD_exp")
    for p in points:
        print(
            f"{p['k']:3d} {p['ZIL']:12.1f} {p['ZIL_percent']:7.2f} {p['ILR']:8.4f} "
            f"{p['DLD']:8.4f} {p['DLD_expected']:8.4f}"
        )
    return {"records": 1000, "seed": 1, "points": points}


def main() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = {
        "parameters": {
            "lambda": [0.5, 0, 0.5],
            "tau": [0.5, 0.5],
            "gamma": [0.5, 0.5],
            "interval_p": list(range(1, 11)),
        },
        "casc": casc_part(),
        "adult": adult_part(),
    }
    out = RESULTS / "em4adom.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
