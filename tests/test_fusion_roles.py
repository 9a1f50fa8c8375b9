"""Every column of a fusion has a role, and every fused release carries its measured risk.

- a provider column in no template and given no role stops ``fuse`` and
  ``party`` with one line (exit 2, nothing written), before any data is read
  or any party connects;
- role mistakes (two roles, the id or class misused, another provider's
  column, a helper giving roles) are one-line errors;
- identifying columns never reach the fused table; ``other`` and ``keep_id``
  release columns unchanged and the report lists them;
- the bundled example releases no raw ``fnlwgt`` (a continuous
  quasi-identifier of its own template);
- the report's ``risk`` section holds the keys of ``docs/risk.md``, and its
  prosecutor figures equal an independent pandas count on the written table;
- ``--fail-on-risk`` exits with code 3 and writes nothing, for ``fuse`` and
  for the ``party`` provider that drew the warning.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.errors import AnonlabError, ReleaseRiskError, ReleaseRiskWarning
from anonlab.fusion.config import config_from_dict, load_config
from anonlab.fusion.roles import FusionRoleError, fusion_roles
from anonlab.runs.fusion import FuseSettings, run_fuse
from test_fusion_cli import write_setup

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "fusion"
PAPER_QID = ["age", "workclass", "marital-status", "race", "sex", "native-country"]
RISK_KEYS = {
    "attacker_columns",
    "records",
    "suppressed",
    "classes",
    "prosecutor",
    "journalist",
    "marketer",
    "sample_uniques",
    "population_uniques",
    "individual_risk",
    "suda2",
    "sensitive",
}


def files_in(folder: Path) -> set[str]:
    """Every file name in ``folder``, hidden temporary files included."""
    return {p.name for p in folder.iterdir()}


def one_error_line(output: str) -> str:
    """The only line of ``output`` (asserted to be one ``Error:`` line)."""
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), output
    return lines[0]


def pandas_prosecutor(frame: pd.DataFrame, attacker: list[str]) -> dict[str, Any]:
    """ARX's prosecutor figures by a plain pandas group count (docs/risk.md).

    A record whose attacker columns are all ``*`` is suppressed and left out;
    the others are grouped on the attacker columns: highest ``1 / min f_c``,
    average ``C / n``, records at risk the share with ``1 / f_c > t``, sample
    uniques the share of classes of one record.
    """
    kept = frame[~(frame[attacker] == "*").all(axis=1)]
    sizes = kept.groupby(attacker, dropna=False).size()
    per_record = kept.groupby(attacker, dropna=False)[attacker[0]].transform("size")
    n = len(kept)
    return {
        "suppressed": len(frame) - n,
        "highest": 1.0 / sizes.min(),
        "average": len(sizes) / n,
        "sample_uniques": float((sizes == 1).sum()) / n,
        "at_risk": {t: float((1.0 / per_record > t).mean()) for t in (0.2, 0.1, 0.05)},
        "classes": len(sizes),
    }


def assert_prosecutor_matches(release: pd.DataFrame, risk: dict[str, Any]) -> None:
    """The report's prosecutor figures equal the pandas count on the same table."""
    want = pandas_prosecutor(release, risk["attacker_columns"])
    assert risk["suppressed"] == want["suppressed"]
    assert risk["records"] == len(release) - want["suppressed"]
    assert risk["classes"]["count"] == want["classes"]
    assert risk["prosecutor"]["highest"] == pytest.approx(want["highest"], rel=1e-12)
    assert risk["prosecutor"]["average"] == pytest.approx(want["average"], rel=1e-12)
    assert risk["sample_uniques"] == pytest.approx(want["sample_uniques"], rel=1e-12)
    for t, share in want["at_risk"].items():
        assert risk["prosecutor"]["records_at_risk"][str(t)] == pytest.approx(share, abs=1e-12)


# -- a column without a role -----------------------------------------------------------------


def test_fuse_refuses_a_column_without_a_role(tmp_path: Path) -> None:
    config = write_setup(tmp_path, rows=200, roles="")
    out = tmp_path / "out"
    out.mkdir()
    before = files_in(tmp_path)
    result = runner.invoke(
        app,
        [
            "fuse",
            str(config),
            "--output",
            str(out / "fused.csv"),
            "--report",
            str(out / "fused.json"),
            "--html",
            str(out / "fused.html"),
        ],
    )
    assert result.exit_code == 2
    line = one_error_line(result.output)
    assert "columns education (a), relationship (b) are given no role" in line
    assert "identifying, sensitive or insensitive" in line and 'other = "insensitive"' in line
    assert files_in(out) == set() and files_in(tmp_path) == before
    with pytest.raises(FusionRoleError) as caught:
        run_fuse(FuseSettings(config=str(config), output=str(out / "fused.csv")))
    assert caught.value.columns == ["education", "relationship"]
    assert files_in(out) == set()


def test_party_refuses_a_column_without_a_role_before_connecting(tmp_path: Path) -> None:
    """The role check reads the config alone: it comes before the party checks and the network
    (this config of two providers and no [tls] would fail those next)."""
    config = write_setup(tmp_path, rows=200, roles='insensitive = ["education"]')
    out = tmp_path / "fused.csv"
    result = runner.invoke(
        app,
        [
            "party",
            str(config),
            "--party",
            "a",
            "--output",
            str(out),
            "--report",
            str(tmp_path / "a.json"),
        ],
    )
    assert result.exit_code == 2
    line = one_error_line(result.output)
    assert "column relationship (b) is given no role: put it in a template's qid" in line
    assert not out.exists() and not (tmp_path / "a.json").exists()


def _setup_data(tmp_path: Path) -> dict[str, Any]:
    data = tomllib.loads(write_setup(tmp_path, rows=200).read_text())
    data["parties"].append({"id": "h", "role": "helper"})
    return data


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["fusion"]["insensitive"].append("age"),
            "column 'age' is given two roles (quasi-identifier and insensitive)",
        ),
        (
            lambda d: d["fusion"].update(identifying=["id"]),
            "names the record id 'id' in identifying",
        ),
        (
            lambda d: d["fusion"].update(identifying=["salary-class"]),
            "names the class attribute 'salary-class' in identifying",
        ),
        (
            lambda d: d["fusion"].update(
                sensitive=["salary-class"],
                insensitive=["salary-class", "education", "relationship"],
            ),
            "in sensitive and in insensitive",
        ),
        (
            lambda d: d["parties"][0].update(sensitive=["salary-class"]),
            "party 'a' names the class attribute",
        ),
        (
            lambda d: d["parties"][0].update(insensitive=["relationship"]),
            "party 'a' names column 'relationship' in insensitive, a column of provider 'b'",
        ),
        (lambda d: d["fusion"].update(sensitive=["nope"]), "fusion.sensitive names column 'nope'"),
        (
            lambda d: d["parties"][1].update(
                identifying=["relationship"], sensitive=["relationship"]
            ),
            "column 'relationship' is given two roles",
        ),
        (
            lambda d: d["parties"][2].update(insensitive=["education"]),
            "helper 'h' gives column roles",
        ),
    ],
)
def test_role_mistakes_are_one_line(tmp_path: Path, edit: Any, message: str) -> None:
    data = _setup_data(tmp_path)
    edit(data)
    config = config_from_dict(data, tmp_path)
    with pytest.raises(AnonlabError, match=message.replace("(", r"\(").replace(")", r"\)")):
        fusion_roles(config)


def test_other_must_be_insensitive(tmp_path: Path) -> None:
    data = _setup_data(tmp_path)
    data["fusion"]["other"] = "quasi"
    with pytest.raises(AnonlabError, match=r"fusion\.other: Input should be 'insensitive'"):
        config_from_dict(data, tmp_path)


def test_roles_are_part_of_what_every_party_must_agree_on(tmp_path: Path) -> None:
    data = _setup_data(tmp_path)
    first = config_from_dict(data, tmp_path).shared_digest()
    data["parties"][1]["insensitive"] = ["relationship"]
    data["fusion"]["insensitive"] = ["education"]
    moved = config_from_dict(data, tmp_path).shared_digest()
    data["fusion"]["insensitive"] = ["education", "relationship"]
    del data["parties"][1]["insensitive"]
    assert len({first, moved, config_from_dict(data, tmp_path).shared_digest()}) == 2
    data["fusion"]["identifying"] = ["education"]
    data["fusion"]["insensitive"] = ["relationship"]
    assert config_from_dict(data, tmp_path).shared_digest() not in (first, moved)


# -- what each role does to the release ---------------------------------------------------


def test_identifying_columns_never_reach_the_release(tmp_path: Path) -> None:
    """identifying (a setting added to the config's lists) drops a column; other releases
    the rest unchanged and the report lists them."""
    config = write_setup(tmp_path, rows=300, roles="")
    out = tmp_path / "fused.csv"
    settings = FuseSettings.load(
        None, config=str(config), output=str(out), identifying="education", other="insensitive"
    )
    with pytest.warns(ReleaseRiskWarning):
        run = run_fuse(settings)
    release = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert "education" not in release.columns and "relationship" in release.columns
    report = run.report
    assert report["roles"] == {
        "id": "identifying",
        "age": "quasi",
        "workclass": "quasi",
        "education": "identifying",
        "marital-status": "quasi",
        "relationship": "insensitive",
        "race": "quasi",
        "sex": "quasi",
        "native-country": "quasi",
        "salary-class": "sensitive",
    }
    assert report["insensitive_by_other"] == ["relationship"] and report["other"] == "insensitive"
    assert report["released_unchanged"] == ["relationship", "salary-class"]
    assert {"name": "education", "held_by": ["a"], "released": "dropped"} in report["columns"]
    assert report["parameters"]["identifying"] == ["education"]
    assert "education" not in report["risk"]["attacker_columns"]
    raw = pd.read_csv(tmp_path / "b.csv", dtype=str).set_index("id")
    with pytest.warns(ReleaseRiskWarning, match="distinct l = 1"):  # a class of one salary
        kept = run_fuse(
            FuseSettings(
                config=str(config),
                report=str(tmp_path / "r.json"),
                keep_id=True,
                identifying=["education"],
                other="insensitive",
                attacker_columns=PAPER_QID,
            )
        )
    assert kept.release is not None
    table = kept.release.set_index("id")
    assert (table["relationship"] == raw.loc[table.index, "relationship"]).all()


def test_a_kept_id_is_insensitive_and_makes_every_record_unique(tmp_path: Path) -> None:
    config = write_setup(tmp_path, rows=300)
    with pytest.warns(ReleaseRiskWarning) as caught:
        run = run_fuse(
            FuseSettings(config=str(config), report=str(tmp_path / "r.json"), keep_id=True)
        )
    assert any("300 record(s) are unique" in str(w.message) for w in caught)
    report = run.report
    assert report["roles"]["id"] == "insensitive" and "id" in report["released_unchanged"]
    assert (
        report["risk"]["sample_uniques"] == 1.0 and report["risk"]["prosecutor"]["highest"] == 1.0
    )
    assert report["risk"]["attacker_columns"][0] == "id"


def test_the_class_named_insensitive_is_known_to_the_attacker(tmp_path: Path) -> None:
    config = write_setup(
        tmp_path, rows=300, roles='insensitive = ["education", "relationship", "salary-class"]'
    )
    with pytest.warns(ReleaseRiskWarning):
        run = run_fuse(FuseSettings(config=str(config), report=str(tmp_path / "r.json")))
    assert run.report["roles"]["salary-class"] == "insensitive"
    assert run.report["risk"]["attacker_columns"][-1] == "salary-class"
    assert run.report["risk"]["sensitive"] == {}


# -- risk on the small setting: the refusal and the independent count -------------------------


def test_fail_on_risk_exits_3_and_writes_nothing(tmp_path: Path) -> None:
    config = write_setup(tmp_path, rows=300)
    out = tmp_path / "out"
    out.mkdir()
    result = runner.invoke(
        app,
        [
            "fuse",
            str(config),
            "--output",
            str(out / "fused.csv"),
            "--report",
            str(out / "fused.json"),
            "--html",
            str(out / "fused.html"),
            "--fail-on-risk",
            "--quiet",
        ],
    )
    assert result.exit_code == 3, result.output
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("Error: --fail-on-risk is set and the release drew")
    assert all(line.startswith("Warning: ") for line in lines[:-1]) and len(lines) >= 2
    assert files_in(out) == set()
    with pytest.warns(ReleaseRiskWarning), pytest.raises(ReleaseRiskError):
        run_fuse(FuseSettings(config=str(config), output=str(out / "fused.csv"), fail_on_risk=True))
    assert files_in(out) == set()
    # no warning, no refusal: the same run writes everything
    # no warning, no refusal: classes of at least k = 20 on the template's columns, the class
    # declared insensitive (known to the attacker, no l measured), and the run writes
    result = runner.invoke(
        app,
        [
            "fuse",
            str(config),
            "--output",
            str(out / "fused.csv"),
            "--attacker-columns",
            ",".join(PAPER_QID),
            "--insensitive",
            "salary-class",
            "--fail-on-risk",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output == "" and files_in(out) == {"fused.csv"}


def test_risk_flags_name_released_columns(tmp_path: Path) -> None:
    config = write_setup(tmp_path, rows=200, roles='identifying = ["education", "relationship"]')
    result = runner.invoke(
        app,
        [
            "fuse",
            str(config),
            "--output",
            str(tmp_path / "o.csv"),
            "--attacker-columns",
            "age,education",
        ],
    )
    assert result.exit_code == 2
    line = one_error_line(result.output)
    assert line.startswith(
        "Error: --attacker-columns names columns the release does not have: education"
    )
    assert not (tmp_path / "o.csv").exists()


def test_small_release_risk_equals_a_pandas_count(tmp_path: Path) -> None:
    config = write_setup(tmp_path, rows=600)
    out, rep = tmp_path / "fused.csv", tmp_path / "fused.json"
    result = runner.invoke(
        app,
        [
            "fuse",
            str(config),
            "--output",
            str(out),
            "--report",
            str(rep),
            "--attacker-columns",
            ",".join(PAPER_QID),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(rep.read_text())
    release = pd.read_csv(out, dtype=str, keep_default_na=False)
    risk = report["risk"]
    assert risk["attacker_columns"] == PAPER_QID
    assert report["attacker_knowledge"] == "the columns given as attacker_columns"
    assert_prosecutor_matches(release, risk)
    # the template <paper QID, 20> makes every class at least its smallest group
    assert risk["classes"]["smallest"] == report["templates"][0]["smallest_group"] >= 20
    assert risk["prosecutor"]["highest"] <= 1 / 20


# -- the bundled example -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``anonlab fuse examples/fusion/fusion.toml`` (30,162 records): release and report."""
    folder = tmp_path_factory.mktemp("example")
    out, rep = folder / "fused.csv", folder / "fused.json"
    result = runner.invoke(
        app,
        [
            "fuse",
            str(EXAMPLE / "fusion.toml"),
            "--output",
            str(out),
            "--report",
            str(rep),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    return {
        "release": pd.read_csv(out, dtype=str, keep_default_na=False),
        "report": json.loads(rep.read_text()),
        "output": result.output,
    }


def test_example_releases_no_raw_fnlwgt(example: dict[str, Any]) -> None:
    release, report = example["release"], example["report"]
    raw = pd.read_csv(EXAMPLE / "provider_a.csv", dtype=str)["fnlwgt"]
    assert raw.map(raw.value_counts()).eq(1).sum() == 14439  # unique on fnlwgt alone, raw
    assert report["roles"]["fnlwgt"] == "quasi"
    cut = report["cut"]["fnlwgt"]
    assert set(release["fnlwgt"]) == set(cut) and all(v[0] in "[(" for v in cut)
    assert not set(release["fnlwgt"]) & set(raw)
    assert release["fnlwgt"].value_counts().min() >= 100
    assert {"qid": ["fnlwgt"], "k": 100} in report["parameters"]["templates"]


def test_example_names_every_role(example: dict[str, Any]) -> None:
    roles = example["report"]["roles"]
    config = load_config(EXAMPLE / "fusion.toml")
    columns = [c for p in config.providers for c in p.columns]
    assert list(roles) == ["id", *columns, "salary-class"]
    assert roles["id"] == "identifying" and roles["salary-class"] == "sensitive"
    assert {c for c, r in roles.items() if r == "quasi"} == {*PAPER_QID, "fnlwgt"}
    assert example["report"]["insensitive_by_other"] == []
    for name in ("fusion-fig4.toml", "fusion-tds.toml", "fusion-top5.toml"):
        other = fusion_roles(load_config(EXAMPLE / name))
        assert other.by_other == [] and other.roles["fnlwgt"].value == "quasi", name


def test_example_risk_section(example: dict[str, Any]) -> None:
    report, release = example["report"], example["release"]
    risk = report["risk"]
    assert set(risk) >= RISK_KEYS
    assert {"highest", "average", "records_at_risk"} <= set(risk["prosecutor"])
    assert set(risk["prosecutor"]["records_at_risk"]) >= {"0.2", "0.1", "0.05"}
    assert set(risk["sensitive"]) == {"salary-class"}
    assert {"distinct_l", "entropy_l", "t_equal", "t_hierarchical"} <= set(
        risk["sensitive"]["salary-class"]
    )
    assert (
        report["attacker_knowledge"]
        == "every released column that is not sensitive and not the weights"
    )
    assert risk["attacker_columns"] == [c for c in release.columns if c != "salary-class"]
    assert risk["records"] == len(release) == 30162
    assert_prosecutor_matches(release, risk)
    # the paper's columns in no template stay raw, so the example is still risky, and says so
    assert report["risk_warnings"] and risk["prosecutor"]["highest"] == 1.0
    assert sum(line.startswith("Warning: ") for line in example["output"].splitlines()) == len(
        report["risk_warnings"]
    )


def test_example_risk_for_the_template_attacker(tmp_path: Path) -> None:
    """An attacker who knows the paper's QID alone meets classes of at least its k = 100."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReleaseRiskWarning)  # this release draws no warning
        run = run_fuse(
            FuseSettings(
                config=str(EXAMPLE / "fusion.toml"),
                output=str(tmp_path / "fused.csv"),
                attacker_columns=PAPER_QID,
                fail_on_risk=True,
            )
        )
    assert run.report["risk_warnings"] == []
    risk = run.report["risk"]
    release = pd.read_csv(tmp_path / "fused.csv", dtype=str, keep_default_na=False)
    assert_prosecutor_matches(release, risk)
    smallest = run.report["templates"][0]["smallest_group"]
    assert risk["prosecutor"]["highest"] == pytest.approx(1 / smallest)
    assert risk["prosecutor"]["highest"] <= 1 / 100


# -- party: the provider that writes the release measures it -----------------------------------


def test_party_providers_measure_and_fail_on_risk_alone(tmp_path: Path) -> None:
    from test_fusion_party import write_setup as party_setup

    config = party_setup(tmp_path, providers=2, helper=True)
    extra = {"provider-a": ["--fail-on-risk"], "provider-b": [], "recipient": []}
    procs = {}
    for party, flags in extra.items():
        args = [
            sys.executable,
            "-m",
            "anonlab",
            "party",
            str(config),
            "--party",
            party,
            "--report",
            str(tmp_path / f"{party}.json"),
            "--timeout",
            "60",
            "--quiet",
            *flags,
        ]
        if party != "recipient":
            args += ["--output", str(tmp_path / f"fused_{party}.csv")]
        procs[party] = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    done = {}
    for party, proc in procs.items():
        _, err = proc.communicate(timeout=180)
        done[party] = (proc.returncode, err)
    code, err = done["provider-a"]
    assert code == 3, err
    assert err.strip().splitlines()[-1].startswith("Error: --fail-on-risk is set")
    assert not (tmp_path / "fused_provider-a.csv").exists()
    assert not (tmp_path / "provider-a.json").exists()
    for party in ("provider-b", "recipient"):
        assert done[party][0] == 0, done[party][1]
    report = json.loads((tmp_path / "provider-b.json").read_text())
    release = pd.read_csv(tmp_path / "fused_provider-b.csv", dtype=str, keep_default_na=False)
    assert report["roles"]["id"] == "insensitive"  # keep_id = true in this setting
    assert_prosecutor_matches(release, report["risk"])
    assert report["risk_warnings"] and "Warning: " in done["provider-b"][1]
    helper = json.loads((tmp_path / "recipient.json").read_text())
    assert "risk" not in helper and helper["roles"] == report["roles"]
