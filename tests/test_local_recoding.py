"""ARX's local recoding (issue 24): anonlab's release against ARX 3.9's on the cases of ARX's
``TestAnonymizationLocalRecoding``, the whole-lattice evaluation against the search it
replaces, the independent checker against tampered releases, and the settings.

``tests/data/arx_local_recoding/cases.json`` holds ARX's outputs, made by
``python benchmarks/local_recoding.py --reference`` (``benchmarks/arx/ArxLocal.java``): per
case the hash ARX's own test computes over every cell of the output (and asserts), the SHA-256
of the output table as text, its first rows and ARX's steps.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from anonlab.dataset import Roles
from anonlab.errors import AnonlabError
from anonlab.generalize import model_dataset, resolve_criteria
from anonlab.hierarchy import Hierarchy
from anonlab.lattice.lattice import Lattice
from anonlab.lattice.local import (
    _Searcher,
    local_recoding,
    local_release,
    search_once,
    subset_criteria,
    subset_dataset,
)
from anonlab.lattice.local_lattice import LatticeClasses
from anonlab.lattice.metrics import LossContext, metric_by_name
from anonlab.lattice.plan import plan_search
from anonlab.privacy import max_suppressed
from anonlab.runs.generalize_settings import GeneralizeSettings
from anonlab.verify.local import check_local_recoding

REPO = Path(__file__).resolve().parents[1]
CASES = json.loads((REPO / "tests" / "data" / "arx_local_recoding" / "cases.json").read_text())[
    "cases"
]
RUN = [c for c in CASES if "config" in c]
#: the cases with a sensitive-attribute model take 10-30 s of CPU each
SLOW = {0, 3, 4}


def _bench() -> Any:
    """benchmarks/local_recoding.py as a module (its table layout and hashes)."""
    spec = importlib.util.spec_from_file_location(
        "local_recoding_bench", REPO / "benchmarks" / "local_recoding.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


BENCH = _bench()


@lru_cache(maxsize=1)
def _adult() -> tuple[pd.DataFrame, dict[str, Hierarchy]]:
    return BENCH.load_inputs(RUN[0]["config"])  # type: ignore[no-any-return]


def test_reference_covers_arx_test_cases() -> None:
    """All 11 cases of ARX's test are listed; the 7 on Adult carry ARX's output, whose hash is
    the one ARX's test asserts."""
    assert [c["id"] for c in CASES] == list(range(11))
    assert [c["id"] for c in RUN] == [0, 3, 4, 5, 6, 7, 8]
    expected = {0: -998962150, 3: 464405537, 4: -1306447515, 5: 484469846}
    expected.update({6: -1231665634, 7: -715168499, 8: 2130163653})
    assert {c["id"]: c["arx"]["hash"] for c in RUN} == expected


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.slow) if c["id"] in SLOW else c for c in RUN],
    ids=[f"case{c['id']}" for c in RUN],
)
def test_release_is_arx_output_cell_for_cell(case: dict[str, Any]) -> None:
    """anonlab's release, laid out as ARX's output, has ARX's hash, bytes and steps; and the
    independent checker accepts it."""
    frame, hierarchies = _adult()
    config = case["config"]
    result, release = BENCH.anonlab_release(config, frame.copy(), hierarchies)
    table = BENCH.as_arx_table(release, frame, config)
    arx = case["arx"]
    assert table.head(5).to_numpy().tolist() == arx["first_rows"]
    assert BENCH.java_hash(table) == arx["hash"]
    assert BENCH.sha256(BENCH.table_text(table)) == arx["sha256"]
    released = [list(it.levels) if it.levels is not None else None for it in result.iterations]
    arx_steps = [s["transformation"] for s in arx["steps"]]
    assert [s for s in released if s is not None] == arx_steps
    assert [it.released for it in result.iterations if it.levels is not None] == [
        s["records"] for s in arx["steps"]
    ]
    assert result.levels[0] == tuple(arx["optimum"])
    problems = check_local_recoding(
        frame, release, config["criteria"], hierarchies, len(frame), config["identifying"]
    )
    assert problems == []


# ---------------------------------------------------------------------------
# The whole-lattice evaluation finds the search's optimum
# ---------------------------------------------------------------------------


def _random_table(seed: int) -> tuple[pd.DataFrame, dict[str, Hierarchy]]:
    """A random table of three quasi-identifiers with small hierarchies and a sensitive
    column."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    a = rng.integers(0, 8, n)
    b = rng.integers(0, 6, n)
    c = rng.integers(0, 4, n)
    frame = pd.DataFrame(
        {
            "a": [f"a{v}" for v in a],
            "b": [f"b{v}" for v in b],
            "c": [f"c{v}" for v in c],
            "s": [f"s{v}" for v in rng.integers(0, 5, n)],
        }
    )
    hierarchies = {
        "a": Hierarchy.from_rows([(f"a{v}", f"A{v // 2}", f"AA{v // 4}", "*") for v in range(8)]),
        "b": Hierarchy.from_rows([(f"b{v}", f"B{v // 3}", "*") for v in range(6)]),
        "c": Hierarchy.from_rows([(f"c{v}", "*") for v in range(4)]),
    }
    return frame, hierarchies


MODELS = [
    [{"model": "k-anonymity", "k": 2}],
    [{"model": "k-anonymity", "k": 5}],
    [{"model": "distinct-l-diversity", "attribute": "s", "l": 2}],
    [{"model": "entropy-l-diversity", "attribute": "s", "l": 2}],
    [{"model": "equal-distance-t-closeness", "attribute": "s", "t": 0.4}],
]


@pytest.mark.parametrize("seed", range(12))
def test_whole_lattice_equals_search(seed: int) -> None:
    """On random subsets, every node judged at once gives the optimum and suppressed records
    of the optimal search, for several factors and suppression limits."""
    rng = np.random.default_rng(1000 + seed)
    frame, hierarchies = _random_table(seed)
    specs = MODELS[seed % len(MODELS)]
    criteria = resolve_criteria(specs)
    dataset = model_dataset(frame, hierarchies, criteria, roles=Roles.of(sensitive=["s"]))
    rows = np.sort(rng.choice(dataset.n, size=max(5, dataset.n // 2), replace=False))
    sub = subset_dataset(dataset, rows)
    model = subset_criteria(criteria)
    lattice = Lattice([q.height for q in sub.qis], [0] * len(sub.qis))
    metric = metric_by_name("loss", LossContext(sub))
    judged = LatticeClasses.build(sub, lattice, model, metric)  # type: ignore[arg-type]
    assert judged is not None
    for factor in (0.05, 0.2, 0.45, 0.7):
        for suppression in (1.0, 0.1):
            found = None
            with contextlib.suppress(AnonlabError):
                found = search_once(
                    sub,
                    model,
                    suppression,
                    "loss",
                    gs_factor=factor,
                    aggregate=None,
                    weights=None,
                    plan=plan_search("flash"),
                )
            chosen = metric_by_name("loss", LossContext(sub), gs_factor=factor)
            best = judged.optimum(chosen, max_suppressed(suppression, sub.n))  # type: ignore[arg-type]
            if found is None:
                assert best is None
                continue
            assert best is not None
            assert best[0] == found.levels, (factor, suppression)
            assert np.array_equal(best[1], found.suppressed)


def test_searcher_reuses_judgement_for_same_records() -> None:
    """The same records searched with a raised factor reuse the judged lattice."""
    frame, hierarchies = _random_table(3)
    criteria = resolve_criteria([{"model": "k-anonymity", "k": 3}])
    dataset = model_dataset(frame, hierarchies, criteria, roles=Roles.of(sensitive=["s"]))
    searcher = _Searcher(
        dataset,
        criteria,
        1.0,
        "loss",
        aggregate=None,
        weights=None,
        plan=plan_search("flash"),
        cache_size=16,
    )
    rows = np.arange(0, dataset.n, 2)
    searcher.search(rows, 0.05)
    first = searcher._judged
    assert first is not None
    searcher.search(rows, 0.1)
    assert searcher._judged is first


# ---------------------------------------------------------------------------
# Releases, the checker, the settings
# ---------------------------------------------------------------------------


def _local(seed: int, k: int) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Hierarchy], Any]:
    frame, hierarchies = _random_table(seed)
    criteria = resolve_criteria([{"model": "k-anonymity", "k": k}])
    dataset = model_dataset(frame, hierarchies, criteria, roles=Roles.of(insensitive=["s"]))
    result = local_recoding(dataset, criteria, 1.0, "loss", gs_factor=0.05)
    return frame, local_release(dataset, result), hierarchies, result


def test_records_carry_the_levels_of_their_search() -> None:
    """Each released record's labels are its values at the levels of the search that released
    it; the suppressed ones are '*'; the report section counts them."""
    frame, release, hierarchies, result = _local(5, 3)
    levels = result.row_levels()
    names = ["a", "b", "c"]
    for row in range(len(frame)):
        if result.step[row] < 0:
            assert all(release.loc[row, q] == "*" for q in names)
            continue
        for d, q in enumerate(names):
            label = hierarchies[q].label(str(frame[q].iat[row]), int(levels[row, d]))
            assert release.loc[row, q] == label
    summary = result.summary(names)
    assert sum(s["records"] for s in summary["releases"]) + summary["suppressed_records"] == len(
        frame
    )
    assert summary["iterations"] == len(result.iterations)
    assert len(set(result.step[result.step >= 0].tolist())) >= 1


def test_checker_accepts_release_and_catches_tampering() -> None:
    """The independent checker accepts a local release and refuses a cell that does not cover
    its original and a class made smaller than k."""
    frame, release, hierarchies, _ = _local(7, 3)
    specs = [{"model": "k-anonymity", "k": 3}]
    assert check_local_recoding(frame, release, specs, hierarchies, len(frame)) == []
    wrong = release.copy()
    row = int(np.flatnonzero((wrong["a"] != "*").to_numpy())[0])
    values = wrong["a"].to_numpy(dtype=object).copy()
    values[row] = "a7" if frame["a"].iat[row] != "a7" else "a0"
    wrong["a"] = values
    assert "does not cover" in check_local_recoding(frame, wrong, specs, hierarchies, len(frame))[0]
    small = release.copy()
    row = int(np.flatnonzero((small["c"] != "*").to_numpy())[0])
    for column in ("a", "b", "c"):
        values = small[column].to_numpy(dtype=object).copy()
        values[row] = frame[column].iat[row]
        small[column] = values
    counts = small.groupby(["a", "b", "c"]).size()
    key = tuple(small.loc[row, ["a", "b", "c"]])
    if counts[key] < 3:
        assert check_local_recoding(frame, small, specs, hierarchies, len(frame))
    too_few = int((release[["a", "b", "c"]] == "*").all(axis=1).sum())
    if too_few:
        assert check_local_recoding(frame, release, specs, hierarchies, too_few - 1)


def test_settings_belong_to_local_recoding() -> None:
    """The local parameters are refused with another recoding and bounded."""
    base: dict[str, Any] = {"input": "t.csv", "qi": {"a": "h.csv"}, "k": 2}
    settings = GeneralizeSettings(**base, recoding="local", local_iterations=7)
    assert settings.model_dump()["local_iterations"] == 7
    assert "local_iterations" not in GeneralizeSettings(**base).model_dump()
    with pytest.raises(AnonlabError, match="setting of local recoding"):
        GeneralizeSettings(**base, local_gs_factor=0.2)
    with pytest.raises(AnonlabError):
        GeneralizeSettings(**base, recoding="local", local_adaption=2.0)


def test_refused_models_keep_the_full_domain_release() -> None:
    """A model ARX does not recode locally (sample uniqueness) leaves the full-domain
    release, with the reason in the report section."""
    frame, hierarchies = _random_table(2)
    criteria = resolve_criteria([{"model": "sample-uniqueness", "threshold": 0.5}])
    dataset = model_dataset(frame, hierarchies, criteria, roles=Roles.of(insensitive=["s"]))
    result = local_recoding(dataset, criteria, 1.0, "loss", gs_factor=0.05)
    assert result.iterations == []
    assert "does not recode it locally" in str(
        result.summary(["a", "b", "c"])["not_recoded_because"]
    )


def test_generalizer_and_run(tmp_path: Path) -> None:
    """Generalizer(recoding="local") and `generalize --recoding local` give the release of
    local_recoding; the run's report lists every search and the records of each step."""
    from anonlab.generalize import Generalizer
    from anonlab.runs.generalize import run_generalize

    frame, hierarchies = _random_table(9)
    _, expected, _, result = _local(9, 5)
    generalizer = Generalizer(k=5, suppression=1.0, metric="loss", gs_factor=0.05, recoding="local")
    release = generalizer.fit_transform(frame, hierarchies, insensitive=["s"])
    pd.testing.assert_frame_equal(release, expected)
    with pytest.raises(AnonlabError, match="belongs to the table"):
        generalizer.transform(frame)
    frame.to_csv(tmp_path / "t.csv", index=False)
    files = {}
    for name, h in hierarchies.items():
        path = tmp_path / f"h_{name}.csv"
        path.write_text("\n".join(";".join(row) for row in h.rows) + "\n")
        files[name] = str(path)
    settings = GeneralizeSettings(
        input=str(tmp_path / "t.csv"),
        qi=files,
        insensitive=["s"],
        k=5,
        suppression=1.0,
        metric="loss",
        gs_factor=0.05,
        recoding="local",
        output=str(tmp_path / "out.csv"),
        report=str(tmp_path / "r.json"),
    )
    run = run_generalize(settings)
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["command"] == "local-recoding" and report["verified"]
    assert report["iterations"] == len(result.iterations)
    assert [s["records"] for s in report["releases"]] == [
        int((result.step == i).sum()) for i in range(len(result.levels))
    ]
    written = pd.read_csv(tmp_path / "out.csv", dtype=str, keep_default_na=False)
    assert written.equals(expected.astype(str))
    assert run.report["suppressed_records"] == result.suppressed


def test_anonlab_verify_rechecks_a_local_report(tmp_path: Path) -> None:
    """`anonlab verify REPORT` re-checks a local-recoding release from its report and finds a
    cell that no longer covers its original."""
    from anonlab.runs.generalize import run_generalize
    from anonlab.verify.report import verify_report

    frame, hierarchies = _random_table(4)
    frame.to_csv(tmp_path / "t.csv", index=False)
    files = {}
    for name, h in hierarchies.items():
        path = tmp_path / f"h_{name}.csv"
        path.write_text("\n".join(";".join(row) for row in h.rows) + "\n")
        files[name] = str(path)
    settings = GeneralizeSettings(
        input=str(tmp_path / "t.csv"),
        qi=files,
        insensitive=["s"],
        k=5,
        suppression=1.0,
        metric="loss",
        gs_factor=0.05,
        recoding="local",
        output=str(tmp_path / "out.csv"),
        report=str(tmp_path / "r.json"),
    )
    run_generalize(settings)
    assert verify_report(tmp_path / "r.json").ok
    release = pd.read_csv(tmp_path / "out.csv", dtype=str, keep_default_na=False)
    row = int(np.flatnonzero((release["a"] != "*").to_numpy())[0])
    values = release["a"].to_numpy(dtype=object).copy()
    values[row] = "a7" if frame["a"].iat[row] != "a7" else "a0"
    release["a"] = values
    release.to_csv(tmp_path / "tampered.csv", index=False)
    result = verify_report(tmp_path / "r.json", release=tmp_path / "tampered.csv")
    assert not result.ok and "does not cover" in result.findings[0]
