"""Run ARX 3.9.2's profitability models through ProfitRef.java and write the reference files.

Usage (from the repository root, with ARX compiled at /tmp/arx/classes and its jars listed in
/tmp/arx/cp.txt)::

    javac -cp "/tmp/arx/classes:$(cat /tmp/arx/cp.txt)" -d /tmp/profit_build \
        tests/data/arx_profitability/java/ProfitRef.java
    python3 tests/data/arx_profitability/java/make_refs.py /tmp/profit_build [adult|random|all]

Writes ``tests/data/arx_profitability/adult.json`` (ARX's TestAnonymizationProfitability cases
0-5 on Adult, the two practical-monotonicity cases again without it, and further Adult
settings) and ``random.json`` (the random small tables of ``tests/data/arx/random``).
"""

from __future__ import annotations

import datetime
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[4]
OUT = REPO / "tests" / "data" / "arx_profitability"
ADULT_QIS = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "salary-class",
]
#: ARX's TestAnonymizationProfitability.getConfig1..4 as (benefit, loss, gain, cost)
CONFIGS = {
    1: (1200.0, 300.0, 1200.0, 2.0),
    2: (1200.0, 3000.0, 120.0, 20.0),
    3: (120.0, 3000.0, 120.0, 20.0),
    4: (120.0, 3000.0, 1000.0, 20.0),
}
SUBSET = "tests/data/arx/adult_subset.csv"
#: harness metric name -> (anonlab metric, extra anonlab options)
METRICS = {
    "publisher-payout": ("publisher_payout", {}),
    "publisher-payout-journalist": ("publisher_payout_journalist", {}),
    "loss": ("loss", {}),
    "entropy-based": ("entropy_information_loss", {}),
    "entropy_with_suppression": ("entropy_with_suppression", {"aggregate": "sum"}),
    "entropy": ("entropy", {"aggregate": "sum"}),
    "discernibility": ("discernibility", {}),
    "precision": ("precision", {}),
}
MODELS = {
    "prosecutor": "profitability-prosecutor",
    "prosecutor-no-attack": "profitability-prosecutor-no-attack",
    "journalist": "profitability-journalist",
    "journalist-no-attack": "profitability-journalist-no-attack",
}


def case(
    cid: str,
    data: str,
    qis: dict[str, str],
    model: str,
    subset: str | None,
    suppression: float,
    metric: str,
    cfg: int | None,
    pm: bool = False,
    gs: float = 0.5,
    nodes: bool = True,
    expected: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A reference case: the harness's arguments and anonlab's configuration."""
    args = [
        f"data={data}",
        "qis=" + "|".join(f"{k}:{v}" for k, v in qis.items()),
        f"model={model}",
        f"subset={subset or '-'}",
        f"suppression={suppression}",
        f"metric={metric}",
        f"gs={gs}",
        f"pm={str(pm).lower()}",
        "cb=" + (",".join(str(x) for x in CONFIGS[cfg]) if cfg else "-"),
        f"nodes={'all' if nodes else 'none'}",
    ]
    name, options = METRICS[metric]
    criterion: dict[str, Any] = {"model": MODELS[model]}
    if subset:
        criterion["subset"] = subset
    config: dict[str, Any] = {
        "data": data,
        "delimiter": ";",
        "qis": qis,
        "criteria": [criterion],
        "suppression": suppression,
        "metric": name,
        "practical_monotonicity": pm,
        **options,
    }
    if gs != 0.5:
        config["gs_factor"] = gs
    if cfg:
        b, lo, g, c = CONFIGS[cfg]
        config["cost_benefit"] = {
            "publisher_benefit": b,
            "publisher_loss": lo,
            "adversary_gain": g,
            "adversary_cost": c,
        }
    out: dict[str, Any] = {"id": cid, "config": config, "args": args}
    if expected:
        out["arx_test_expected"] = expected
    return out


def adult_cases() -> list[dict[str, Any]]:
    qis = {q: f"data/adult/hierarchy_{q}.csv" for q in ADULT_QIS}
    d = "data/adult/adult.csv"
    t = "TestAnonymizationProfitability#"
    cases = [
        case(
            t + "0",
            d,
            qis,
            "journalist-no-attack",
            SUBSET,
            0.04,
            "publisher-payout",
            1,
            expected={"score": "2974380.2122727702", "transformation": [1, 3, 1, 1, 3, 2, 1, 1]},
        ),
        case(
            t + "1",
            d,
            qis,
            "journalist",
            SUBSET,
            0.04,
            "loss",
            2,
            expected={"score": "0.20171471140567654", "transformation": [0, 4, 0, 0, 2, 1, 0, 0]},
        ),
        case(
            t + "2",
            d,
            qis,
            "prosecutor",
            None,
            0.0,
            "entropy_with_suppression",
            1,
            expected={"score": "0.0", "transformation": [0, 0, 0, 0, 0, 0, 0, 0]},
        ),
        case(
            t + "3",
            d,
            qis,
            "journalist-no-attack",
            SUBSET,
            1.0,
            "publisher-payout",
            3,
            expected={"score": "289703.2817537615", "transformation": [0, 1, 1, 2, 3, 2, 1, 1]},
        ),
        case(
            t + "4",
            d,
            qis,
            "journalist-no-attack",
            SUBSET,
            0.04,
            "publisher-payout",
            2,
            pm=True,
            expected={"score": "2095548.2581994554", "transformation": [1, 3, 0, 1, 3, 0, 0, 1]},
        ),
        case(
            t + "5",
            d,
            qis,
            "journalist",
            SUBSET,
            0.04,
            "entropy-based",
            4,
            pm=True,
            expected={"score": "1982.8859574224414", "transformation": [1, 3, 1, 0, 3, 1, 1, 0]},
        ),
        case(
            t + "4-practical_off",
            d,
            qis,
            "journalist-no-attack",
            SUBSET,
            0.04,
            "publisher-payout",
            2,
            nodes=False,
        ),
        case(
            t + "5-practical_off",
            d,
            qis,
            "journalist",
            SUBSET,
            0.04,
            "entropy-based",
            4,
            nodes=False,
        ),
        case(
            "adult-prosecutor-payout-cfg2",
            d,
            qis,
            "prosecutor",
            None,
            0.04,
            "publisher-payout",
            2,
            nodes=False,
        ),
        case(
            "adult-prosecutor-payout-cfg3",
            d,
            qis,
            "prosecutor",
            None,
            0.0,
            "publisher-payout",
            3,
            nodes=False,
        ),
        case(
            "adult-prosecutor-payout-default",
            d,
            qis,
            "prosecutor",
            None,
            0.1,
            "publisher-payout",
            None,
            nodes=False,
        ),
        case(
            "adult-prosecutor-no-attack-payout-cfg3",
            d,
            qis,
            "prosecutor-no-attack",
            None,
            0.04,
            "publisher-payout",
            3,
            nodes=False,
        ),
        case(
            "adult-prosecutor-no-attack-loss-cfg4",
            d,
            qis,
            "prosecutor-no-attack",
            None,
            0.0,
            "loss",
            4,
            nodes=False,
        ),
        case(
            "adult-journalist-payout-journalist-cfg2",
            d,
            qis,
            "journalist",
            SUBSET,
            0.04,
            "publisher-payout-journalist",
            2,
            nodes=False,
        ),
        case(
            "adult-journalist-payout-journalist-cfg3",
            d,
            qis,
            "journalist",
            SUBSET,
            1.0,
            "publisher-payout-journalist",
            3,
            nodes=False,
        ),
        case(
            "adult-journalist-no-attack-payout-journalist-default",
            d,
            qis,
            "journalist-no-attack",
            SUBSET,
            0.02,
            "publisher-payout-journalist",
            None,
            nodes=False,
        ),
        case(
            "adult-prosecutor-payout-cfg3-gs0.3",
            d,
            qis,
            "prosecutor",
            None,
            0.04,
            "publisher-payout",
            3,
            gs=0.3,
            nodes=False,
        ),
        case(
            "adult-journalist-no-attack-payout-cfg4-gs0.8",
            d,
            qis,
            "journalist-no-attack",
            SUBSET,
            0.04,
            "publisher-payout",
            4,
            gs=0.8,
            nodes=False,
        ),
    ]
    return cases


def random_cases(seed: int = 22) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    base = REPO / "tests" / "data" / "arx" / "random"
    out = []
    for folder in sorted(base.glob("case*")):
        rel = folder.relative_to(REPO)
        header = (folder / "data.csv").read_text().splitlines()[0].split(";")
        qis = {
            q: f"{rel}/hierarchy_{q}.csv"
            for q in header
            if (folder / f"hierarchy_{q}.csv").exists()
        }
        subset = f"{rel}/subset.csv" if (folder / "subset.csv").exists() else None
        models = ["prosecutor", "prosecutor-no-attack"] + (
            ["journalist", "journalist-no-attack"] if subset else []
        )
        for model in models:
            metric = rng.choice(
                ["publisher-payout", "publisher-payout", "loss", "discernibility", "entropy-based"]
                + (["publisher-payout-journalist"] * 2 if subset else [])
            )
            cfg = rng.choice([1, 2, 3, 4, None])
            sup = rng.choice([0.0, 0.05, 0.2, 1.0])
            gs = rng.choice([0.5, 0.5, 0.3, 0.8]) if metric != "discernibility" else 0.5
            out.append(
                case(
                    f"{folder.name}-{model}",
                    str(rel / "data.csv"),
                    qis,
                    model,
                    subset if model.startswith("journalist") else None,
                    sup,
                    metric,
                    cfg,
                    gs=gs,
                )
            )
    return out


def run(build: str, cases: list[dict[str, Any]]) -> None:
    cp = f"{build}:/tmp/arx/classes:" + Path("/tmp/arx/cp.txt").read_text().strip()
    stdin = "".join("\t".join(c["args"]) + "\n" for c in cases)
    proc = subprocess.run(
        ["java", "-cp", cp, "ProfitRef"],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert len(lines) == len(cases), proc.stderr[-2000:]
    for c, line in zip(cases, lines, strict=True):
        c["arx"] = json.loads(line)


def write(name: str, cases: list[dict[str, Any]], note: str) -> None:
    java = subprocess.run(
        ["java", "-version"], capture_output=True, text=True, check=True
    ).stderr.splitlines()[0]
    above = sum(1 for c in cases if c["arx"]["found"] and any(c["arx"]["transformation"]))
    doc = {
        "arx_version": "3.9.2",
        "generated_by": "python3 tests/data/arx_profitability/java/make_refs.py "
        "(harness: tests/data/arx_profitability/java/ProfitRef.java)",
        "generated_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S"),
        "java": java,
        "note": note,
        "share_optimum_above_bottom": round(above / len(cases), 3),
        "cases": cases,
    }
    text = json.dumps(doc, separators=(",", ":"))
    (OUT / f"{name}.json").write_text(text + "\n")


def main() -> None:
    build = sys.argv[1]
    which = sys.argv[2] if len(sys.argv) > 2 else "all"
    if which in ("adult", "all"):
        cases = adult_cases()
        run(build, cases)
        write(
            "adult",
            cases,
            "ARX's TestAnonymizationProfitability cases 0-5 (Adult; "
            "'arx_test_expected' is what ARX's test asserts), cases 4 and 5 again without "
            "practical monotonicity, and further Adult settings; every node's score is "
            "ARXNode.getHighestScore() after ARXResult.getOutput(node).",
        )
    if which in ("random", "all"):
        cases = random_cases()
        run(build, cases)
        write(
            "random",
            cases,
            "The random small tables of tests/data/arx/random with each "
            "profitability model (the journalist ones where the table has a research "
            "subset), random cost-benefit settings, suppression limits and metrics.",
        )


if __name__ == "__main__":
    main()
