"""Multi-party fusion on Adult: the paper's experiment (figures 3 and 4) and plain TDS.

Two providers split Adult's training file 7 + 7 (examples/fusion/provider_a.csv
and provider_b.csv: provider A age .. occupation, provider B relationship ..
native-country, salary-class shared). For each setting and k in {25, 50, 75,
100, 150, 200}: the in-process ``fuse`` time (median of ``--repeats`` runs,
from reading the providers' files to the fused table) and the accuracy of a
decision tree (entropy, min_samples_leaf=20, categorical columns one-hot,
numeric ones as numbers) trained on the fused training table and tested on
Adult's test file generalized to the same cut; against BE (all attributes
raw) and UE (the QIDs removed). Settings: the paper's factors with fig. 3
leaf levels (3/4) and fig. 4 levels (1/5), fig. 3 with s(v) the mean
instead of the sum of the leaf levels, and plain TDS; each with the
paper's QIDs and with the classic TDS QID "Top5".

Part 2 (scale): Adult's training file repeated 10 times (301,620 records,
ids made unique), the paper's QIDs with k = 1,000, both scores: fuse time.

    python benchmarks/fusion.py              # full run (about 5 minutes)
    python benchmarks/fusion.py --quick      # 1 repeat, k in {50, 100, 200}
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
import tomllib
from pathlib import Path
from typing import Any

import pandas as pd
from sklearn.tree import DecisionTreeClassifier

from anonlab.fusion.config import config_from_dict
from anonlab.fusion.engine import FusionResult, fuse

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "fusion"
TEST = REPO / "data" / "adult" / "adult_full_test.csv"
TRAIN = REPO / "data" / "adult" / "adult_full_train.csv"
RESULTS = REPO / "benchmarks" / "results"
OUT = RESULTS / "fusion.json"
CLASS = "salary-class"
QIDS = {
    "paper": ["age", "workclass", "marital-status", "race", "sex", "native-country"],
    "top5": ["age", "education-num", "marital-status", "relationship", "capital-gain"],
}
SETTINGS = {  # name -> (example config, s(v) over the leaves under v)
    "fig3": ("fusion.toml", "sum"),
    "fig4": ("fusion-fig4.toml", "sum"),
    "fig3-mean": ("fusion.toml", "mean"),
    "tds": ("fusion-tds.toml", "sum"),
}
KS = [25, 50, 75, 100, 150, 200]


def tree_accuracy(train: pd.DataFrame, test: pd.DataFrame) -> float:
    """Decision tree (entropy, min_samples_leaf=20) accuracy; strings one-hot."""
    both = pd.concat([train, test], ignore_index=True)
    y = both.pop(CLASS).astype(str).str.rstrip(".")
    for c in both.columns:
        numeric = pd.to_numeric(both[c], errors="coerce")
        both[c] = numeric if numeric.notna().all() else both[c].astype(str)
    cats = [c for c in both.columns if not pd.api.types.is_numeric_dtype(both[c])]
    x = pd.get_dummies(both, columns=cats)
    n = len(train)
    model = DecisionTreeClassifier(criterion="entropy", min_samples_leaf=20, random_state=0)
    model.fit(x.iloc[:n], y.iloc[:n])
    return float((model.predict(x.iloc[n:]) == y.iloc[n:].to_numpy()).mean())


def config_for(setting: str, qid: str, k: int) -> Any:
    """The example config of ``setting`` with the QID set ``qid`` and ``k``."""
    name, aggregate = SETTINGS[setting]
    with (EXAMPLE / name).open("rb") as fh:
        data = tomllib.load(fh)
    data = copy.deepcopy(data)
    data["templates"] = [{"qid": QIDS[qid], "k": k}]
    data["fusion"]["s_aggregate"] = aggregate
    return config_from_dict(data, EXAMPLE, source=name)


def run(setting: str, qid: str, k: int, repeats: int, test: pd.DataFrame) -> dict[str, Any]:
    """Median fuse time over ``repeats`` runs and the accuracy of the fused table."""
    times = []
    result: FusionResult | None = None
    for _ in range(repeats):
        config = config_for(setting, qid, k)
        started = time.perf_counter()
        result = fuse(config)
        times.append(time.perf_counter() - started)
    assert result is not None
    general = result.generalize(test.drop(columns=[CLASS])).assign(**{CLASS: test[CLASS]})
    train = result.table.drop(columns=[c for c in ("id",) if c in result.table.columns])
    return {
        "setting": setting,
        "qid": qid,
        "k": k,
        "seconds": statistics.median(times),
        "rounds": result.rounds,
        "accuracy": tree_accuracy(train, general[train.columns]),
        "smallest_group": result.templates[0]["smallest_group"],
        "bytes_sent": sum(result.bytes_sent.values()),
    }


def scale_rows(repeats: int, times: int = 10) -> list[dict[str, Any]]:
    """Fuse time on Adult repeated ``times`` times, k = 100 x ``times``, both scores."""
    frames = {}
    for party, name in (("provider-a", "provider_a.csv"), ("provider-b", "provider_b.csv")):
        one = pd.read_csv(EXAMPLE / name, dtype=str)
        frames[party] = pd.concat(
            [one.assign(id=one["id"] + f"-{i}") for i in range(times)], ignore_index=True
        )
    rows = []
    for setting in ("fig3", "tds"):
        config = config_for(setting, "paper", 100 * times)
        seconds, result = [], None
        for _ in range(repeats):
            started = time.perf_counter()
            result = fuse(config, frames)
            seconds.append(time.perf_counter() - started)
        assert result is not None
        rows.append(
            {
                "setting": setting,
                "records": len(result.table),
                "k": 100 * times,
                "rounds": result.rounds,
                "seconds": statistics.median(seconds),
                "loop_seconds": result.time_seconds,
            }
        )
    return rows


def baselines(test: pd.DataFrame) -> dict[str, float]:
    """BE (every attribute raw) and UE (each QID set removed)."""
    train = pd.read_csv(TRAIN, dtype=str)
    out = {"BE": tree_accuracy(train, test[train.columns])}
    for name, qid in QIDS.items():
        keep = [c for c in train.columns if c not in qid]
        out[f"UE_{name}"] = tree_accuracy(train[keep], test[keep])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 repeat, 3 values of k")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    ks = [50, 100, 200] if args.quick else KS
    test = pd.read_csv(TEST, dtype=str)
    base = baselines(test)
    rows = []
    print(
        f"BE {base['BE']:.4f}  UE(paper QIDs) {base['UE_paper']:.4f}  "
        f"UE(Top5) {base['UE_top5']:.4f}"
    )
    print(
        f"{'QID':6} {'setting':8} {'k':>4} {'rounds':>6} {'time s':>7} {'accuracy':>8} "
        f"{'min grp':>7} {'MB sent':>8}"
    )
    for qid in QIDS:
        for setting in SETTINGS:
            for k in ks:
                row = run(setting, qid, k, repeats, test)
                rows.append(row)
                print(
                    f"{qid:6} {setting:8} {k:>4} {row['rounds']:>6} {row['seconds']:>7.2f} "
                    f"{row['accuracy']:>8.4f} {row['smallest_group']:>7} "
                    f"{row['bytes_sent'] / 1e6:>8.2f}",
                    flush=True,
                )
    scale = scale_rows(repeats)
    print(f"{'scale':8} {'records':>8} {'k':>5} {'rounds':>6} {'time s':>7} {'loop s':>7}")
    for row in scale:
        print(
            f"{row['setting']:8} {row['records']:>8} {row['k']:>5} {row['rounds']:>6} "
            f"{row['seconds']:>7.2f} {row['loop_seconds']:>7.2f}"
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps({"repeats": repeats, "baselines": base, "rows": rows, "scale": scale}, indent=2)
        + "\n"
    )
    plot(rows, base)
    print(f"wrote {OUT}")


def plot(rows: list[dict[str, Any]], base: dict[str, float]) -> None:
    """Time and accuracy against k, one panel per QID set (PNG beside the JSON)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for metric, label in (("seconds", "fuse time (s)"), ("accuracy", "accuracy")):
        fig, axes = plt.subplots(1, len(QIDS), figsize=(10, 3.6), sharey=metric == "seconds")
        for ax, qid in zip(axes, QIDS, strict=True):
            styles = zip(SETTINGS, "os^x", ("-", "--", "-.", ":"), strict=True)
            for setting, marker, line in styles:
                pts = [r for r in rows if r["qid"] == qid and r["setting"] == setting]
                ax.plot(
                    [r["k"] for r in pts],
                    [r[metric] for r in pts],
                    marker=marker,
                    linestyle=line,
                    label=setting,
                    markersize=5,
                    fillstyle="none",
                )
            if metric == "accuracy":
                ax.axhline(base["BE"], color="black", linestyle="--", label="BE")
                ax.axhline(base[f"UE_{qid}"], color="grey", linestyle=":", label="UE")
            ax.set_title(f"QID: {qid}")
            ax.set_xlabel("k")
            ax.set_ylabel(label)
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(RESULTS / f"fusion_{metric}.png", dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    main()
