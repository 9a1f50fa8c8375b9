"""`anonlab fuse` end to end, config errors and malformed messages."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.errors import AnonlabError
from anonlab.fusion.config import config_from_dict, load_config
from anonlab.fusion.messages import (
    Columns,
    Instructions,
    decode_columns,
    decode_instructions,
    encode_columns,
    encode_instructions,
)
from anonlab.verify.fusion import check_templates

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "data" / "adult"
runner = CliRunner()


ROLES = 'insensitive = ["education", "relationship"]'


def write_setup(
    folder: Path, rows: int = 600, k: int = 20, extra: str = "", roles: str = ROLES
) -> Path:
    """Two providers cut from Adult's training file, and fusion.toml beside them.

    ``roles`` is the ``[fusion]`` line giving the two columns in no template
    their role (insensitive: released as they are).
    """
    frame = pd.read_csv(ADULT / "adult_full_train.csv", dtype=str).head(rows)
    frame.insert(0, "id", [f"r{i}" for i in range(len(frame))])
    a = ["age", "workclass", "education", "marital-status"]
    b = ["relationship", "race", "sex", "native-country"]
    frame[["id", *a, "salary-class"]].to_csv(folder / "a.csv", index=False)
    frame[["id", *b, "salary-class"]].sample(frac=1, random_state=1).to_csv(
        folder / "b.csv", index=False
    )
    taxes = "\n".join(
        f'{c} = "{ADULT / f"hierarchy_{c}.csv"}"'
        for c in ("workclass", "marital-status", "race", "sex", "native-country")
    )
    text = f"""
[fusion]
class = "salary-class"
id = "id"
score = "sensitivity"
{roles}
{extra}
[[templates]]
qid = ["age", "workclass", "marital-status", "race", "sex", "native-country"]
k = {k}

[[templates]]
qid = ["age", "sex"]
k = {k}

[taxonomies]
age = "continuous"
relationship = "{ADULT / "hierarchy_relationship.csv"}"
{taxes}

[[parties]]
id = "a"
file = "a.csv"
columns = {json.dumps(a)}
factor = 0.5

[[parties]]
id = "b"
file = "b.csv"
columns = {json.dumps(b)}
factor = 0.5
"""
    path = folder / "fusion.toml"
    path.write_text(text)
    return path


def check_columns_key(report: dict[str, Any], table: pd.DataFrame, kept_id: bool) -> None:
    """The report's ``columns`` names the written table's columns, holders and release."""
    columns = report["columns"]
    in_table = [c["name"] for c in columns if c["released"] != "id dropped"]
    assert in_table == list(table.columns)
    holders = {
        "a": ["age", "workclass", "education", "marital-status"],
        "b": ["relationship", "race", "sex", "native-country"],
    }
    qid = {a for t in report["parameters"]["templates"] for a in t["qid"]}
    for c in columns:
        name = c["name"]
        if name in ("id", "salary-class"):
            assert c["held_by"] == ["a", "b"]
            assert c["released"] == (
                "class" if name == "salary-class" else "id kept" if kept_id else "id dropped"
            )
            continue
        assert c["held_by"] == [next(p for p, cols in holders.items() if name in cols)]
        if name in qid:  # released at the final cut: every value is a cut label
            assert c["released"] == "generalized"
            assert c["cut_values"] == len(report["cut"][name])
            assert set(table[name].astype(str)) <= set(report["cut"][name])
        else:
            assert c["released"] == "as is" and name not in report["cut"]


def test_fuse_writes_table_and_report(tmp_path: Path) -> None:
    config = write_setup(tmp_path)
    out, rep, html = tmp_path / "fused.csv", tmp_path / "fused.json", tmp_path / "fused.html"
    result = runner.invoke(
        app,
        [
            "fuse",
            str(config),
            "--output",
            str(out),
            "--report",
            str(rep),
            "--html",
            str(html),
            "--verify",
            "--keep-id",
        ],
    )
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out, dtype=str)
    assert list(table.columns)[:2] == ["id", "age"] and len(table) == 600
    assert table["id"].tolist() == sorted(table["id"], key=lambda s: s)  # id order
    qids = [["age", "workclass", "marital-status", "race", "sex", "native-country"], ["age", "sex"]]
    assert check_templates(table, [(q, 20) for q in qids]) == []
    # non-QID columns are released as they are
    raw = pd.read_csv(tmp_path / "b.csv", dtype=str).set_index("id")
    assert (table.set_index("id")["relationship"] == raw.loc[table["id"], "relationship"]).all()
    report = json.loads(rep.read_text())
    assert report["command"] == "fuse" and report["private"] is False
    assert report["rounds"] == len(report["specializations"]) > 0
    assert all("score" in s and s["party"] in ("a", "b") for s in report["specializations"])
    assert [t["k"] for t in report["templates"]] == [20]  # <age, sex> is covered
    assert report["dropped_templates"] and report["verified"] is True
    assert set(report["bytes_sent"]) == {"a", "b"}
    check_columns_key(report, table, kept_id=True)
    assert "fuse" in html.read_text()


def test_fuse_drops_id_and_example_runs(tmp_path: Path) -> None:
    config = write_setup(tmp_path, extra="keep_id = false")
    out = tmp_path / "fused.parquet"
    rep = tmp_path / "fused.json"
    result = runner.invoke(
        app,
        [
            "fuse",
            str(config),
            "--output",
            str(out),
            "--quiet",
            "--score",
            "tds",
            "--report",
            str(rep),
        ],
    )
    assert result.exit_code == 0, result.output
    table = pd.read_parquet(out)
    assert "id" not in table.columns
    report = json.loads(rep.read_text())
    assert report["columns"][0] == {"name": "id", "held_by": ["a", "b"], "released": "id dropped"}
    check_columns_key(report, table, kept_id=False)


def test_shipped_example_config_is_valid() -> None:
    for name in ("fusion.toml", "fusion-fig4.toml", "fusion-tds.toml", "fusion-top5.toml"):
        config = load_config(ROOT / "examples" / "fusion" / name)
        assert [p.id for p in config.providers] == ["provider-a", "provider-b"]
        assert [h.id for h in config.helpers] == ["recipient"]
        assert len(config.shared_digest()) == 64


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["templates"][0]["qid"].append("salary"),
            "names column 'salary' that no provider lists",
        ),
        (
            lambda d: d["parties"][1]["columns"].append("age"),
            "column 'age' is owned by two providers",
        ),
        (lambda d: d["taxonomies"].pop("race"), "quasi-identifier 'race' has no taxonomy"),
        (lambda d: d["templates"][0].update(k=0), "k must be at least 1"),
        (lambda d: d["parties"][0].update(factor=0.7), "factors sum to 1.2, not 1"),
        (lambda d: d["parties"].pop(), "has 1 provider(s): fusion needs at least 2"),
        (lambda d: d["taxonomies"].update(race="missing.csv"), "taxonomy file"),
        (lambda d: d["parties"][0].pop("factor"), "provider 'a' has no factor"),
        (lambda d: d["fusion"].update(score="best"), "fusion.score: Input should be"),
        (lambda d: d["fusion"].update(colour="red"), "fusion.colour is not a known setting"),
        (lambda d: d["parties"][1].update(id="a"), "party id 'a' is used twice"),
        (lambda d: d["sensitivity"].update(default=7), "sensitivity levels are 1"),
        (lambda d: d["parties"][0]["columns"].append("salary-class"), "the shared class/id"),
        (lambda d: d["parties"][0]["columns"].append("age"), "lists column 'age' twice"),
        (lambda d: d["parties"][0].update(role="judge"), "parties.0.role: Input should be"),
        (lambda d: d.pop("templates"), "templates is missing"),
    ],
)
def test_config_errors_are_one_line(tmp_path: Path, edit: Any, message: str) -> None:
    import tomllib

    data = tomllib.loads(write_setup(tmp_path).read_text())
    data.setdefault("sensitivity", {})
    edit(data)
    with pytest.raises(AnonlabError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config_from_dict(data, tmp_path)


def test_cli_errors_exit_2_and_write_nothing(tmp_path: Path) -> None:
    config = write_setup(tmp_path)
    out = tmp_path / "fused.csv"
    text = config.read_text().replace('file = "b.csv"', 'file = "nope.csv"')
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    cases = [
        (["fuse", str(bad), "--output", str(out)], "does not exist"),
        (["fuse", str(config)], "nothing to write"),
        (["fuse", str(config), "--output", str(tmp_path / "a.csv")], "is also an input"),
        (["fuse", str(tmp_path / "none.toml"), "--output", str(out)], "config file"),
        (["fuse", str(config), "--output", str(out), "--score", "magic"], "fusion.score"),
    ]
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output and result.output.count("Error:") == 1
    assert not out.exists()
    assert pd.read_csv(tmp_path / "a.csv").shape[0] == 600  # input intact


def test_data_errors(tmp_path: Path) -> None:
    config = write_setup(tmp_path, k=1000)
    result = runner.invoke(app, ["fuse", str(config), "--output", str(tmp_path / "o.csv")])
    assert result.exit_code == 2 and "fewer than k = 1000" in result.output
    config = write_setup(tmp_path)
    b = pd.read_csv(tmp_path / "b.csv", dtype=str)
    b.loc[0, "race"] = "Martian"
    b.to_csv(tmp_path / "b.csv", index=False)
    result = runner.invoke(app, ["fuse", str(config), "--output", str(tmp_path / "o.csv")])
    assert result.exit_code == 2 and "'Martian'" in result.output
    config = write_setup(tmp_path)
    b = pd.read_csv(tmp_path / "b.csv", dtype=str)
    b.loc[0, "id"] = "zzz"
    b.to_csv(tmp_path / "b.csv", index=False)
    result = runner.invoke(app, ["fuse", str(config), "--output", str(tmp_path / "o.csv")])
    assert result.exit_code == 2 and "different record ids" in result.output
    config = write_setup(tmp_path)
    a = pd.read_csv(tmp_path / "a.csv", dtype=str)
    a.loc[3, "age"] = "old"
    a.to_csv(tmp_path / "a.csv", index=False)
    result = runner.invoke(app, ["fuse", str(config), "--output", str(tmp_path / "o.csv")])
    assert result.exit_code == 2 and "non-numeric value 'old'" in result.output
    assert not (tmp_path / "o.csv").exists()


def test_messages_round_trip_and_reject_malformed() -> None:
    instr = Instructions(
        "age", 3, "[1, 9]", ("[1, 5)", "[5, 9]"), (np.array([4, 1]), np.array([0, 7, 9]))
    )
    data = encode_instructions(instr)
    back = decode_instructions(data)
    assert back.attribute == "age" and back.parent == 3 and back.children == instr.children
    assert [r.tolist() for r in back.records] == [[4, 1], [0, 7, 9]]
    cols = Columns(1, {"race": ["*", "*"], "sex": ["Male", "Female"]})
    back_cols = decode_columns(encode_columns(cols))
    assert back_cols.provider == 1
    assert {c: list(v) for c, v in back_cols.columns.items()} == cols.columns
    good = encode_columns(cols)
    with pytest.raises(AnonlabError, match="refers to a label"):
        decode_columns(good[:-4] + struct.pack("<i", 7))
    with pytest.raises(AnonlabError, match="body has"):
        decode_columns(good[:-1])
    head = json.dumps(
        {"attribute": "age", "parent": 0, "parent_label": "*", "children": ["x"], "counts": [1]}
    ).encode()
    typed = head.replace(b'"parent": 0', b'"parent": "0"')
    bad = [
        (b"", "shorter than"),
        (b"XXXX" + data[4:], "foreign magic"),
        (data[:4] + struct.pack("<H", 9) + data[6:], "version 9"),
        (data[:-2], "body has"),
        (data[:7] + struct.pack("<I", 10**9) + data[11:], "header length"),
        (struct.pack("<4sHBI", b"ANLF", 1, 1, 3) + b"{{{", "not UTF-8 JSON"),
        (
            struct.pack("<4sHBI", b"ANLF", 1, 3, len(head)) + head,
            "expected instructions, got kind 3",
        ),
        (struct.pack("<4sHBI", b"ANLF", 1, 1, 2) + b"[]", "not a JSON object"),
        (struct.pack("<4sHBI", b"ANLF", 1, 1, 12) + b'{"parent":0}', "'attribute' is missing"),
        (struct.pack("<4sHBI", b"ANLF", 1, 1, len(typed)) + typed, "'parent' has the wrong type"),
    ]
    for blob, message in bad:
        with pytest.raises(AnonlabError, match=message):
            decode_instructions(blob)
    with pytest.raises(AnonlabError, match="expected columns, got kind 1"):
        decode_columns(data)
    wrong = json.dumps(
        {
            "attribute": "a",
            "parent": 0,
            "parent_label": "*",
            "children": ["x", "x"],
            "counts": [0, 0],
        }
    ).encode()
    with pytest.raises(AnonlabError, match="not distinct"):
        decode_instructions(struct.pack("<4sHBI", b"ANLF", 1, 1, len(wrong)) + wrong)
    with pytest.raises(AnonlabError, match="not bytes"):
        decode_instructions("text")  # type: ignore[arg-type]


def test_row_number_ids(tmp_path: Path) -> None:
    """id = "": records are matched by row number (files in the same order)."""
    config = write_setup(tmp_path)
    for name in ("a.csv", "b.csv"):
        frame = pd.read_csv(tmp_path / name, dtype=str)
        frame.sort_values("id", key=lambda s: s.str[1:].astype(int)).drop(columns="id").to_csv(
            tmp_path / name, index=False
        )
    text = config.read_text().replace('id = "id"', 'id = ""')
    config.write_text(text)
    out = tmp_path / "fused.csv"
    rep = tmp_path / "fused.json"
    result = runner.invoke(
        app,
        [
            "fuse",
            str(config),
            "--output",
            str(out),
            "--quiet",
            "--keep-id",
            "--verify",
            "--report",
            str(rep),
        ],
    )
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out, dtype=str)
    assert "id" not in table.columns and len(table) == 600
    check_columns_key(json.loads(rep.read_text()), table, kept_id=True)  # no id column listed
    raw = pd.read_csv(tmp_path / "b.csv", dtype=str)
    assert (table["relationship"] == raw["relationship"]).all()
