"""Mondrian (generalize --recoding mondrian): against a brute-force reference of the cut rule,
strict vs relaxed, the models accepted and refused, the checker against tampering, and the
command line, TOML and Python faces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anonlab.errors import AnonlabError
from anonlab.generalize import Generalizer
from anonlab.hierarchy import Hierarchy
from anonlab.verify.recoding import check_coverage, check_recoding, covers_in_order

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "data" / "adult"

#: a three-level hierarchy over eight letters: pairs, halves, *
LETTERS = "abcdefgh"
TREE = Hierarchy.from_rows(
    [
        (v, f"{LETTERS[2 * (i // 2)]}{LETTERS[2 * (i // 2) + 1]}", "L" if i < 4 else "R", "*")
        for i, v in enumerate(LETTERS)
    ]
)


def random_table(seed: int, n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(20, 30, n).astype(str),
            "size": rng.integers(0, 5, n).astype(str),
            "kind": rng.choice(list(LETTERS), n, p=[0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05]),
            "s": rng.choice(["x", "y", "z"], n),
        }
    )


# ---------------------------------------------------------------------------
# An independent reference of the strict cut rule, on the records themselves
# ---------------------------------------------------------------------------


def _v(frame: pd.DataFrame, row: int, column: str) -> str:
    """One cell as text."""
    return str(frame.at[row, column])


def _ref_width(frame: pd.DataFrame, rows: list[int], col: str, spans: dict[str, float]) -> float:
    if col == "kind":
        values = {_v(frame, r, col) for r in rows}
        level = next(lv for lv in range(4) if len({TREE.label(v, lv) for v in values}) == 1)
        node = TREE.label(next(iter(values)), level)
        present = set(frame[col])
        leaves = [v for v in present if TREE.label(v, level) == node]
        return (len(leaves) - 1) / (len(present) - 1)
    numbers = [float(_v(frame, r, col)) for r in rows]
    return (max(numbers) - min(numbers)) / spans[col] if spans[col] else 0.0


def _ref_cuts(frame: pd.DataFrame, rows: list[int], col: str) -> list[tuple[list[int], list[int]]]:
    if col == "kind":
        values = {_v(frame, r, col) for r in rows}
        level = next(lv for lv in range(4) if len({TREE.label(v, lv) for v in values}) == 1)
        if level == 0:
            return []
        child = {r: TREE.label(_v(frame, r, col), level - 1) for r in rows}
        order: list[str] = []
        for r in sorted(rows):  # children by first appearance among the rows of the table
            if child[r] not in order:
                order.append(child[r])
        size = {c: sum(1 for r in rows if child[r] == c) for c in order}
        left: set[str] = set()
        load = [0, 0]
        for c in sorted(order, key=lambda c: (-size[c], order.index(c))):
            side = 1 if load[1] < load[0] else 0
            if side == 0:
                left.add(c)
            load[side] += size[c]
        cuts = [([r for r in rows if child[r] in left], [r for r in rows if child[r] not in left])]
        if len(order) > 2:
            for c in sorted(order, key=lambda c: (-size[c], order.index(c))):
                cuts.append(
                    ([r for r in rows if child[r] == c], [r for r in rows if child[r] != c])
                )
        return cuts
    numbers = sorted(float(_v(frame, r, col)) for r in rows)
    if numbers[0] == numbers[-1]:
        return []
    median = numbers[(len(numbers) - 1) // 2]
    if median == numbers[-1]:
        return [
            (
                [r for r in rows if float(_v(frame, r, col)) < median],
                [r for r in rows if float(_v(frame, r, col)) >= median],
            )
        ]
    return [
        (
            [r for r in rows if float(_v(frame, r, col)) <= median],
            [r for r in rows if float(_v(frame, r, col)) > median],
        )
    ]


def reference_partitions(frame: pd.DataFrame, k: int) -> set[frozenset[int]]:
    qis = ["age", "size", "kind"]
    spans = {
        c: float(frame[c].astype(float).max() - frame[c].astype(float).min())
        for c in ("age", "size")
    }
    final: set[frozenset[int]] = set()
    todo = [list(range(len(frame)))]
    while todo:
        rows = todo.pop()
        ranked = sorted(
            (c for c in qis if _ref_width(frame, rows, c, spans) > 0),
            key=lambda c: (-_ref_width(frame, rows, c, spans), qis.index(c)),
        )
        chosen = None
        for col in ranked:
            chosen = next(
                (cut for cut in _ref_cuts(frame, rows, col) if min(map(len, cut)) >= k), None
            )
            if chosen is not None:
                break
        if chosen is None:
            final.add(frozenset(rows))
        else:
            todo.extend(chosen)
    return final


def _partitions_of(release: pd.DataFrame) -> set[frozenset[int]]:
    keys = release[["age", "size", "kind"]].astype(str).agg("|".join, axis=1)
    return {frozenset(np.flatnonzero(keys.to_numpy() == key).tolist()) for key in keys.unique()}


def _fit(
    frame: pd.DataFrame,
    k: int,
    relaxed: bool = False,
    criteria: list[dict[str, object]] | None = None,
) -> pd.DataFrame:
    g = Generalizer(k=k, recoding="mondrian", relaxed=relaxed, criteria=criteria)
    release: pd.DataFrame = g.fit_transform(
        frame, {"age": None, "size": None, "kind": TREE}, sensitive=["s"]
    )
    return release


@pytest.mark.parametrize("seed", range(25))
def test_strict_matches_the_reference(seed: int) -> None:
    frame = random_table(seed)
    k = 2 + seed % 5
    release = _fit(frame, k)
    assert _partitions_of(release) == reference_partitions(frame, k)
    assert not check_recoding(
        frame, release, [{"model": "k-anonymity", "k": k}], {"kind": TREE}, ["age", "size"]
    )


def _gcp(g: Generalizer) -> float:
    return float(g.mondrian_.loss()["gcp"])


@pytest.mark.parametrize("seed", range(40))
def test_relaxed_never_loses_more_than_strict(seed: int) -> None:
    frame = random_table(100 + seed, n=40 + seed)
    k = 2 + seed % 4
    hier = {"age": None, "size": None, "kind": TREE}
    strict = Generalizer(k=k, recoding="mondrian")
    strict.fit(frame, hier, sensitive=["s"])
    relaxed = Generalizer(k=k, recoding="mondrian", relaxed=True)
    release = relaxed.fit_transform(frame, hier, sensitive=["s"])
    assert _gcp(relaxed) <= _gcp(strict) + 1e-12
    sizes = relaxed.mondrian_.sizes()
    assert sizes.min() >= k and sizes.sum() == len(frame)
    assert not check_recoding(
        frame, release, [{"model": "k-anonymity", "k": k}], {"kind": TREE}, ["age", "size"]
    )


def test_diversity_and_closeness_hold_in_every_class() -> None:
    frame = random_table(7, n=200)
    for spec in (
        {"model": "distinct-l-diversity", "attribute": "s", "l": 2},
        {"model": "equal-distance-t-closeness", "attribute": "s", "t": 0.3},
    ):
        release = _fit(frame, 3, criteria=[spec])
        assert not check_recoding(
            frame,
            release,
            [{"model": "k-anonymity", "k": 3}, spec],
            {"kind": TREE},
            ["age", "size"],
        )


@pytest.mark.parametrize(
    "spec, words",
    [
        ({"model": "average-risk", "threshold": 0.2}, "as a whole"),
        ({"model": "sample-uniqueness", "threshold": 0.2}, "as a whole"),
    ],
)
def test_models_judged_as_a_whole_are_refused(spec: dict[str, object], words: str) -> None:
    with pytest.raises(AnonlabError, match=words):
        _fit(random_table(1), 2, criteria=[spec])


def test_a_table_that_fails_the_model_is_refused() -> None:
    with pytest.raises(AnonlabError, match="whole table"):
        _fit(random_table(1, n=5), 6)


def test_checker_catches_tampering() -> None:
    frame = random_table(3)
    release = _fit(frame, 4)
    spec = [{"model": "k-anonymity", "k": 4}]
    assert not check_recoding(frame, release, spec, {"kind": TREE}, ["age", "size"])
    wrong = release.astype(str)
    row = int(np.flatnonzero(frame["age"].to_numpy() != "29")[0])
    wrong.loc[row, "age"] = "[29, 29]" if _v(frame, row, "age") != "29" else "20"
    assert check_coverage(frame, wrong, {"kind": TREE}, ["age", "size"])
    wrong = release.astype(str)
    other = next(v for v in LETTERS if TREE.label(v, 2) != TREE.label(_v(frame, 0, "kind"), 2))
    wrong.loc[0, "kind"] = other
    assert check_coverage(frame, wrong, {"kind": TREE}, ["age", "size"])
    wrong = frame.astype(str).copy()  # the originals released as they are: classes below k
    problems = check_recoding(frame, wrong, spec, {"kind": TREE}, ["age", "size"])
    assert problems and "k-anonymity" in problems[0]
    assert covers_in_order("5", "[3, 10]") and not covers_in_order("11", "[3, 10]")
    assert covers_in_order("b", "[a, c]") and not covers_in_order("3", "[4, 4]")


def test_transform_refused_and_default_unchanged() -> None:
    frame = random_table(2)
    g = Generalizer(k=2, recoding="mondrian")
    g.fit(frame, {"age": None, "size": None, "kind": TREE}, sensitive=["s"])
    with pytest.raises(AnonlabError, match="fitted on"):
        g.transform(frame)
    with pytest.raises(AnonlabError, match="unknown"):
        Generalizer(recoding="local-ish")


ADULT_QIS = ["sex", "race", "marital-status", "education", "native-country", "workclass"]


def _cli(tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    flags = [f"--qi={c}={ADULT / f'hierarchy_{c}.csv'}" for c in ADULT_QIS]
    return subprocess.run(
        [sys.executable, "-m", "anonlab", "generalize", str(ADULT / "adult.csv"), *flags, *extra],
        capture_output=True,
        text=True,
        cwd=tmp,
        check=False,
    )


def test_cli_toml_and_verify(tmp_path: Path) -> None:
    done = _cli(
        tmp_path,
        "--recoding",
        "mondrian",
        "--qi",
        "age",
        "--other",
        "insensitive",
        "--k",
        "10",
        "--output",
        "out.csv",
        "--report",
        "r.json",
        "--html",
        "r.html",
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["command"] == "mondrian" and report["suppressed"] == 0
    assert report["mondrian"]["smallest_class"] >= 10
    assert 0 < report["loss"]["gcp"] < 0.25
    assert report["parameters"]["recoding"] == "mondrian"
    verified = subprocess.run(
        [sys.executable, "-m", "anonlab", "verify", "r.json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert verified.returncode == 0 and "holds" in verified.stdout, verified.stderr
    out = pd.read_csv(tmp_path / "out.csv", dtype=str)
    out.loc[0, "age"] = "[90, 91]"
    out.to_csv(tmp_path / "out.csv", index=False)
    tampered = subprocess.run(
        [sys.executable, "-m", "anonlab", "verify", "r.json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert tampered.returncode != 0
    qi = "\n".join(f'"{c}" = "{ADULT / f"hierarchy_{c}.csv"}"' for c in ADULT_QIS)
    (tmp_path / "m.toml").write_text(
        f'input = "{ADULT / "adult.csv"}"\nrecoding = "mondrian"\nrelaxed = true\nk = 10\n'
        f'other = "insensitive"\noutput = "toml.csv"\nreport = "t.json"\n'
        f'[qi]\n{qi}\nage = ""\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "anonlab", "generalize", "--config", "m.toml", "--quiet"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    relaxed = json.loads((tmp_path / "t.json").read_text())
    assert relaxed["mondrian"]["relaxed"] is True
    assert relaxed["loss"]["gcp"] <= report["loss"]["gcp"] + 1e-12


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--qi", "age", "--k", "5"], "COLUMN=FILE"),
        (
            [
                "--recoding",
                "mondrian",
                "--aggregate-qi",
                "age=mean",
                "--qi",
                "age",
                "--k",
                "5",
                "--output",
                "f/",
            ],
            "in memory",
        ),
        (["--recoding", "mondrian", "--qi", "age", "--suppression", "1%"], "suppresses no"),
        (
            ["--recoding", "mondrian", "--qi", "age", "--criterion", "average-risk:threshold=0.1"],
            "as a whole",
        ),
    ],
)
def test_cli_refusals(tmp_path: Path, extra: list[str], words: str) -> None:
    output = [] if "--output" in extra else ["--output", "o.csv"]
    done = _cli(tmp_path, *extra, "--other", "insensitive", *output)
    assert done.returncode != 0
    assert done.stderr.startswith("Error:") and words in done.stderr, done.stderr
    assert not (tmp_path / "o.csv").exists() and not (tmp_path / "f").exists()


def test_the_documented_example_gives_the_documented_output(tmp_path: Path) -> None:
    """docs/mondrian.md's first bash block, run on the bundled Adult, prints its text block."""
    text = (ROOT / "docs" / "mondrian.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    shown = text.split("```text\n", 1)[1].split("```", 1)[0].strip()
    script = block.replace("data/adult/", f"{ADULT}/").replace("anonlab ", "python -m anonlab ")
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == shown


def test_a_hierarchy_without_a_single_top_is_cut_below_a_root() -> None:
    """A hierarchy whose top level has two labels: a partition spanning both is released
    as ``*`` and cut into the two top groups."""
    two_tops = Hierarchy.from_rows([(v, "L" if v in "abcd" else "R") for v in LETTERS])
    frame = random_table(11, n=80)
    g = Generalizer(k=30, recoding="mondrian")
    release = g.fit_transform(frame, {"age": None, "size": None, "kind": two_tops}, sensitive=["s"])
    assert set(release["kind"].astype(str)) <= {"L", "R", "*", *LETTERS}
    assert not check_recoding(
        frame, release, [{"model": "k-anonymity", "k": 30}], {"kind": two_tops}, ["age", "size"]
    )
    assert g.mondrian_.loss()["ncp"]["kind"] <= 1.0


ACCEPTED = [
    {"model": "distinct-l-diversity", "attribute": "s", "l": 2},
    {"model": "entropy-l-diversity", "attribute": "s", "l": 1.5},
    {"model": "recursive-cl-diversity", "attribute": "s", "c": 3.0, "l": 2},
    {"model": "equal-distance-t-closeness", "attribute": "s", "t": 0.35},
    {"model": "ordered-distance-t-closeness", "attribute": "s", "t": 0.35},
    {"model": "basic-beta-likeness", "attribute": "s", "beta": 1.5},
    {"model": "enhanced-beta-likeness", "attribute": "s", "beta": 1.5},
    {"model": "delta-disclosure", "attribute": "s", "delta": 1.5},
    {
        "model": "k-map",
        "k": 3,
        "estimator": "poisson",
        "significance": 0.1,
        "population_size": 2000,
    },
]


@pytest.mark.parametrize("spec", ACCEPTED, ids=lambda s: str(s["model"]))
def test_every_class_based_model_is_accepted_and_holds(spec: dict[str, object]) -> None:
    """Each model the cuts can judge: the release holds by the independent checker, and the
    partitions are final (each one's cuts would break a model or the size floor)."""
    frame = random_table(21, n=300)
    g = Generalizer(k=2, recoding="mondrian", criteria=[spec])
    release = g.fit_transform(frame, {"age": None, "size": None, "kind": TREE}, sensitive=["s"])
    problems = check_recoding(
        frame,
        release,
        [{"model": "k-anonymity", "k": 2}, spec],
        {"kind": TREE},
        ["age", "size"],
    )
    assert not problems
    assert len(g.mondrian_.partitions) > 1


def test_population_models_are_refused(tmp_path: Path) -> None:
    frame = random_table(4, n=60)
    subset = tmp_path / "subset.csv"
    frame.iloc[:30].to_csv(subset, index=False)
    specs: list[dict[str, object]] = [
        {"model": "delta-presence", "dmin": 0.0, "dmax": 0.9, "subset": str(subset)},
        {"model": "inclusion", "subset": str(subset)},
        {"model": "k-map", "k": 2, "population": str(subset)},
        {"model": "profitability-prosecutor"},
        {"model": "population-uniqueness", "threshold": 0.1, "population_size": 5000},
    ]
    for spec in specs:
        with pytest.raises(AnonlabError, match="Mondrian cannot decide a cut"):
            _fit(frame, 2, criteria=[spec])


def test_cli_numeric_with_a_hierarchy_and_diversity_verified(tmp_path: Path) -> None:
    """``--numeric age`` cuts a column with a hierarchy in order; a sensitive model's report
    entry carries its attribute, and ``anonlab verify`` re-checks the model."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "anonlab",
            "generalize",
            str(ADULT / "adult.csv"),
            "--recoding",
            "mondrian",
            "--numeric",
            "age",
            f"--qi=age={ADULT / 'hierarchy_age.csv'}",
            f"--qi=sex={ADULT / 'hierarchy_sex.csv'}",
            f"--qi=education={ADULT / 'hierarchy_education.csv'}",
            "--sensitive",
            "occupation",
            "--criterion",
            "distinct-l-diversity:attribute=occupation,l=3",
            "--k",
            "5",
            "--other",
            "insensitive",
            "--output",
            "n.csv",
            "--report",
            "n.json",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "n.json").read_text())
    assert report["mondrian"]["columns"]["age"] == "numeric"
    entry = report["criteria"][1]
    assert entry["parameters"]["attribute"] == "occupation" and entry["satisfied"]
    assert entry["achieved"]["l"] >= 3
    verified = subprocess.run(
        [sys.executable, "-m", "anonlab", "verify", "n.json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert verified.returncode == 0, verified.stderr
    assert "distinct-l-diversity on 'occupation'" in verified.stdout


ENGINE_QIS = ["sex", "race", "marital-status", "education", "native-country", "workclass"]


def _engine_run(tmp: Path, name: str, *extra: str) -> dict[str, object]:
    flags = [f"--qi={c}={ADULT / f'hierarchy_{c}.csv'}" for c in ENGINE_QIS]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "anonlab",
            "generalize",
            str(ADULT / "adult.csv"),
            "--recoding",
            "mondrian",
            "--qi",
            "age",
            *flags,
            "--sensitive",
            "occupation",
            "--criterion",
            "distinct-l-diversity:attribute=occupation,l=3",
            "--insensitive",
            "salary-class",
            "--k",
            "10",
            "--report",
            f"{name}.json",
            "--quiet",
            *extra,
        ],
        capture_output=True,
        text=True,
        cwd=tmp,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads((tmp / f"{name}.json").read_text())
    return report


def test_the_engines_give_the_in_memory_release(tmp_path: Path) -> None:
    """NumPy engine (a folder output) and Dask (two workers) write, part by part, the
    release the in-memory run writes, with the same figures; anonlab verify accepts both."""
    memory = _engine_run(tmp_path, "memory", "--output", "memory.csv")
    numpy_run = _engine_run(tmp_path, "numpy", "--output", "numpy/")
    dask_run = _engine_run(
        tmp_path, "dask", "--output", "dask/", "--engine", "dask", "--workers", "2"
    )
    expected = pd.read_csv(tmp_path / "memory.csv", dtype=str, keep_default_na=False)
    for name, report in (("numpy", numpy_run), ("dask", dask_run)):
        got = pd.read_parquet(tmp_path / name).astype(str)
        assert list(got.columns) == list(expected.columns)
        assert (got.to_numpy() == expected.to_numpy()).all(), name
        assert report["loss"] == memory["loss"]
        assert report["mondrian"]["partitions"] == memory["mondrian"]["partitions"]  # type: ignore[index]
        verified = subprocess.run(
            [sys.executable, "-m", "anonlab", "verify", f"{name}.json"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            check=False,
        )
        assert verified.returncode == 0, verified.stderr


def test_two_protected_attributes_are_refused_on_the_engines(tmp_path: Path) -> None:
    done = _cli(
        tmp_path,
        "--recoding",
        "mondrian",
        "--qi",
        "age",
        "--sensitive",
        "occupation,salary-class",
        "--criterion",
        "distinct-l-diversity:attribute=occupation,l=2",
        "--criterion",
        "distinct-l-diversity:attribute=salary-class,l=2",
        "--other",
        "insensitive",
        "--output",
        "two/",
    )
    assert done.returncode != 0 and "one sensitive attribute" in done.stderr, done.stderr
    assert not (tmp_path / "two").exists()
