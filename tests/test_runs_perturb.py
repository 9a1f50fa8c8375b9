"""The perturbation family's run layer: settings, runs, all-or-nothing outputs, warnings."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.errors import AnonlabError, ReleaseRiskWarning
from anonlab.perturbation import IrreversibleReleaseWarning, RecoverableReleaseWarning
from anonlab.runs.perturb import (
    AttackSettings,
    InvertSettings,
    PerturbSettings,
    run_attack,
    run_invert,
    run_perturb,
)
from anonlab.verify import check_perturbation

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "perturb_tarragona.toml"


def _cli(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


COLUMNS = ("zip", "a", "b", "c", "d", "e", "count", "town")  # the columns of ``frame``


def _rest(columns: str) -> list[str]:
    """``--columns`` and every other column of ``table`` released unchanged by choice."""
    chosen = columns.split(",")
    return ["--columns", columns, "--insensitive", ",".join(c for c in COLUMNS if c not in chosen)]


def _unchanged(columns: list[str]) -> list[str]:
    """The columns of ``frame`` not in ``columns`` (given the insensitive role)."""
    return [c for c in COLUMNS if c not in columns]


def _quietly(run: Any) -> Any:
    """``run()`` with the risk warnings silenced (they are not what is tested there).

    The recoverability warning is one of them (a ``ReleaseRiskWarning``), and so
    is the uniqueness of the records on ``zip``, released unchanged; so is the
    warning that a release written without a key can never be inverted.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        warnings.simplefilter("ignore", IrreversibleReleaseWarning)
        return run()


@pytest.fixture()
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    data = pd.DataFrame(
        rng.exponential(1.0, (150, 5)) @ rng.standard_normal((5, 5)), columns=list("abcde")
    ).round(4)
    data.insert(0, "zip", [f"0{1000 + i}" for i in range(150)])
    data["count"] = rng.integers(0, 50, 150)
    data["town"] = [f"t{i % 7}, east" for i in range(150)]  # a comma: quoted in the release
    return data


@pytest.fixture()
def table(tmp_path: Path, frame: pd.DataFrame) -> Path:
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_python_run_equals_the_cli_release(table: Path, tmp_path: Path) -> None:
    cli, py = tmp_path / "cli", tmp_path / "py"
    args = {
        "columns": "a,b,c,d,e,count",
        "insensitive": "zip,town",
        "method": "obt",
        "seed": "11",
        "known": "2,5",
    }
    code, text = _cli(
        [
            "perturb",
            str(table),
            *[x for k, v in args.items() for x in (f"--{k}", v)],
            "--output",
            str(cli / "rel.csv"),
            "--key",
            str(cli / "key.json"),
            "--report",
            str(cli / "rep.json"),
            "--quiet",
        ]
    )
    assert code == 0, text
    settings = PerturbSettings.model_validate(
        {
            "input": table,
            "columns": args["columns"],
            "seed": 11,
            "known": "2,5",
            "insensitive": args["insensitive"],
            "output": str(py / "rel.csv"),
            "key": str(py / "key.json"),
            "report": str(py / "rep.json"),
        }
    )
    result = _quietly(lambda: run_perturb(settings))
    assert (py / "rel.csv").read_bytes() == (cli / "rel.csv").read_bytes()
    assert (py / "key.json").read_bytes() == (cli / "key.json").read_bytes()
    assert result.report["verified"] is True
    assert sorted(result.written) == sorted(py / n for n in ("rel.csv", "key.json", "rep.json"))
    cli_report = json.loads((cli / "rep.json").read_text())
    assert cli_report["paths"] == result.report["paths"] == "relative to the report's folder"
    assert cli_report["parameters"]["input"] == os.path.relpath(table, cli)
    for key in (
        "privacy_summary",
        "attacks",
        "clustering",
        "warnings",
        "roles",
        "risk",
        "risk_of_unchanged",
        "risk_warnings",
    ):
        assert cli_report[key] == json.loads(json.dumps(result.report[key]))
    # the release keeps pass-through text exactly and is in the one CSV dialect
    lines = (py / "rel.csv").read_text().splitlines()
    assert lines[0] == "zip,a,b,c,d,e,count,town"
    assert lines[1].startswith("01000,") and lines[1].endswith(',"t0, east"')


def test_a_key_in_a_read_only_folder_writes_nothing(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the release used to be written before the key failed: a release nobody can invert
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    real_access = os.access

    def access(path: Any, mode: int, **kwargs: Any) -> bool:  # root may write anywhere
        if Path(path).resolve() == locked.resolve() and mode & os.W_OK:
            return False
        return real_access(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", access)
    out = tmp_path / "rel.csv"
    try:
        code, text = _cli(
            [
                "perturb",
                str(table),
                *_rest("a,b,c"),
                "--seed",
                "1",
                "--output",
                str(out),
                "--key",
                str(locked / "key.json"),
            ]
        )
    finally:
        locked.chmod(0o755)
    assert code == 2
    assert text.strip() == (
        f"Error: --key '{locked / 'key.json'}': folder '{locked}' is not "
        "writable: choose a writable path"
    )
    assert _names(tmp_path) == ["data.csv", "locked"] and _names(locked) == []


def test_a_key_that_fails_to_write_takes_the_staged_release_with_it(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the folder turns unwritable between the check and the write
    real_write = Path.write_text

    def write_text(self: Path, *args: Any, **kwargs: Any) -> int:
        if self.name.startswith(".key.json."):
            raise PermissionError(13, "Permission denied", str(self))
        return real_write(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)
    code, text = _cli(
        [
            "perturb",
            str(table),
            *_rest("a,b,c"),
            "--seed",
            "1",
            "--output",
            str(tmp_path / "rel.csv"),
            "--key",
            str(tmp_path / "key.json"),
        ]
    )
    assert code == 2 and len(text.strip().splitlines()) == 1
    assert text.startswith("Error: ") and "permission denied" in text and "key.json" in text
    assert _names(tmp_path) == ["data.csv"]  # neither the release nor a temporary file


def test_a_failing_html_render_leaves_nothing(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anonlab.htmlreport

    def broken(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("the renderer broke")

    monkeypatch.setattr(anonlab.htmlreport, "render_html", broken)
    settings = PerturbSettings(
        input=str(table),
        columns=["a", "b", "c"],
        method="rotation",
        seed=3,
        insensitive=_unchanged(["a", "b", "c"]),
        library=None,
        output=str(tmp_path / "rel.csv"),
        key=str(tmp_path / "key.json"),
        report=str(tmp_path / "rep.json"),
        html=str(tmp_path / "rep.html"),
    )
    with pytest.raises(RuntimeError, match="the renderer broke"):
        _quietly(lambda: run_perturb(settings))
    assert _names(tmp_path) == ["data.csv"]


def test_a_release_that_fails_verification_is_not_written(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anonlab.io

    real_write = anonlab.io.write_table

    def tampered(frame: pd.DataFrame, path: Any, **kwargs: Any) -> None:
        moved = frame["b"].to_numpy(dtype=np.float64, copy=True)
        moved[7] += 1e-6  # one value moved a little
        real_write(frame.assign(b=moved), path, **kwargs)

    monkeypatch.setattr(anonlab.io, "write_table", tampered)
    settings = PerturbSettings(
        input=str(table),
        columns=["a", "b", "c"],
        method="rotation",
        seed=3,
        insensitive=_unchanged(["a", "b", "c"]),
        output=str(tmp_path / "rel.csv"),
        key=str(tmp_path / "key.json"),
    )
    with pytest.raises(
        AnonlabError, match="verification failed, nothing written: the distance between records"
    ):
        _quietly(lambda: run_perturb(settings))
    assert _names(tmp_path) == ["data.csv"]
    no_check = settings.model_copy(update={"verify": False})
    result = _quietly(lambda: run_perturb(no_check))  # unchecked, the tampered file goes out
    assert result.report["verified"] is False and (tmp_path / "rel.csv").exists()


@pytest.mark.parametrize("flag", ["--output", "--key", "--report", "--html"])
def test_an_existing_folder_as_an_output_is_one_line(
    table: Path, tmp_path: Path, flag: str
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    paths = {"--output": tmp_path / "o.csv", "--key": tmp_path / "k.json", flag: folder}
    code, text = _cli(
        [
            "perturb",
            str(table),
            "--columns",
            "a,b",
            *[a for f, p in paths.items() for a in (f, str(p))],
        ]
    )
    assert code == 2
    assert text.strip() == f"Error: {flag} '{folder}' is a folder: give a file name inside it"
    assert _names(tmp_path) == ["data.csv", "folder"]


def test_csv_parquet_and_dataframe_inputs_give_the_same_release(
    frame: pd.DataFrame, table: Path, tmp_path: Path
) -> None:
    frame.to_parquet(tmp_path / "data.parquet", index=False)
    releases, keys = [], []
    for i, source in enumerate([table, tmp_path / "data.parquet", frame]):
        settings = PerturbSettings(
            input=source,
            columns=["a", "b", "c", "d", "count"],
            insensitive=["zip", "e", "town"],
            seed=5,
            output=str(tmp_path / f"r{i}.csv"),
            key=str(tmp_path / f"k{i}.json"),
        )
        result = _quietly(lambda s=settings: run_perturb(s))
        assert result.report["verified"] is True
        releases.append((tmp_path / f"r{i}.csv").read_bytes())
        keys.append(json.loads((tmp_path / f"k{i}.json").read_text()))
    assert releases[0] == releases[1] == releases[2]
    assert keys[0] == keys[1] == keys[2]
    assert keys[0]["integer"] == [False, False, False, False, True]


def test_a_parquet_release_is_written_and_verified(table: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel.parquet"
    settings = PerturbSettings(
        input=str(table),
        columns=["a", "b", "c"],
        method="gdp",
        seed=2,
        noise=0.2,
        insensitive=_unchanged(["a", "b", "c"]),
        output=str(out),
        key=str(tmp_path / "key.json"),
    )
    result = _quietly(lambda: run_perturb(settings))
    assert result.report["verified"] is True
    assert out.read_bytes()[:4] == b"PAR1"
    back = run_invert(
        InvertSettings(
            input=str(out), key=str(tmp_path / "key.json"), output=str(tmp_path / "back.csv")
        )
    )
    assert back.report["verified"] is True
    original = pd.read_csv(table, dtype=str)
    restored = pd.read_csv(tmp_path / "back.csv", dtype=str)
    assert restored[["zip", "town", "d"]].equals(original[["zip", "town", "d"]])
    assert np.allclose(
        restored[list("abc")].astype(float),
        original[list("abc")].astype(float),
        rtol=1e-12,
        atol=1e-9,
    )


def test_the_run_warns_and_the_report_keeps_the_message(table: Path, tmp_path: Path) -> None:
    # town's classes hold 21 or more records: the release draws no other risk warning
    settings = PerturbSettings(
        input=str(table),
        columns=["a", "b", "c", "d"],
        seed=1,
        identifying=["zip", "e", "count"],
        insensitive=["town"],
        known=[2],
        report=str(tmp_path / "rep.json"),
    )
    with pytest.warns(RecoverableReleaseWarning, match="method_aware attack with 2 known") as w:
        result = run_perturb(settings)
    assert len(w) == 1 and w[0].filename == __file__
    assert result.report["warnings"] == [str(w[0].message)]
    gdp = settings.model_copy(update={"method": "gdp", "noise": 1.0})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run_perturb(gdp).report["warnings"] == []


def test_progress_hears_blocks_and_attacks(table: Path, tmp_path: Path) -> None:
    heard: list[tuple[str, int, int | None]] = []
    settings = PerturbSettings(
        input=str(table),
        columns=["a", "b", "c"],
        method="rotation",
        seed=4,
        known=[2],
        output=str(tmp_path / "rel.csv"),
        key=str(tmp_path / "key.json"),
        identifying=["zip", "d", "e", "count"],
        insensitive=["town"],
    )
    run_perturb(settings, progress=lambda step, done, total: heard.append((step, done, total)))
    assert ("perturbing blocks", 1, 1) in heard
    attacks = [h for h in heard if h[0] == "attacks"]
    assert attacks[-1] == ("attacks", 5, 5)  # naive, ties and three known-record attacks
    assert [d for _, d, _ in attacks] == sorted(d for _, d, _ in attacks)


def test_attack_run_warns_and_writes_its_report(table: Path, tmp_path: Path) -> None:
    out = tmp_path / "rel.csv"
    _quietly(
        lambda: run_perturb(
            PerturbSettings(
                input=str(table),
                columns=list("abcde"),
                method="rotation",
                seed=8,
                insensitive=["zip", "count", "town"],
                output=str(out),
            )
        )
    )
    heard: list[str] = []
    settings = AttackSettings.model_validate(
        {
            "original": str(table),
            "released": str(out),
            "columns": "a,b,c,d,e",
            "insensitive": "zip,count,town",
            "known": "2,5",
            "report": str(tmp_path / "att.json"),
        }
    )
    with pytest.warns(RecoverableReleaseWarning, match="with 5 known") as w:
        result = run_attack(settings, progress=lambda step, done, total: heard.append(step))
    assert len(w) == 1 and w[0].filename == __file__
    assert set(heard) == {"attacks"}
    report = json.loads((tmp_path / "att.json").read_text())
    assert report["warnings"] == result.report["warnings"] and len(report["warnings"]) == 1
    assert report["paths"] == "relative to the report's folder"
    assert report["parameters"]["released"] == "rel.csv"


def test_invert_applies_a_saved_key(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rel, key = tmp_path / "rel.csv", tmp_path / "key.json"
    _quietly(
        lambda: run_perturb(
            PerturbSettings(
                input=str(table),
                seed=9,
                output=str(rel),
                key=str(key),
                columns=["a", "b", "c", "count"],
                insensitive=["zip", "d", "e", "town"],
            )
        )
    )
    result = run_invert(
        InvertSettings(input=str(rel), key=str(key), output=str(tmp_path / "back.csv"))
    )
    assert result.written == [tmp_path / "back.csv"] and result.report["verified"] is True
    assert (tmp_path / "back.csv").read_text().splitlines()[0] == "zip,a,b,c,d,e,count,town"
    restored = pd.read_csv(tmp_path / "back.csv", dtype={"zip": str})
    original = pd.read_csv(table, dtype={"zip": str})
    assert restored[["zip", "count", "town"]].equals(original[["zip", "count", "town"]])
    problems = check_perturbation(
        pd.read_csv(tmp_path / "back.csv", dtype=str),
        pd.read_csv(rel, dtype=str),
        ["a", "b", "c", "count"],
        "obt",
        key=json.loads(key.read_text()),
    )
    assert problems == []
    with pytest.raises(AnonlabError, match="key 'x' is a folder") as caught:
        (tmp_path / "x").mkdir()
        monkeypatch.chdir(tmp_path)
        run_invert(InvertSettings(input=str(rel), key="x", output=str(tmp_path / "b2.csv")))
    assert caught.value.parameter == "key"


def test_settings_from_toml_and_overrides(tmp_path: Path, table: Path) -> None:
    cfg = tmp_path / "sub" / "p.toml"
    cfg.parent.mkdir()
    cfg.write_text(
        'input = "../data.csv"\ncolumns = "a,b"\nrho = 0.3\nknown = "2,5"\n'
        'output = "out.csv"\nmin-privacy = 0.6\n'
    )
    s = PerturbSettings.load(cfg, method="rbt", seed=None, overwrite=True)  # its output
    assert Path(s.input).resolve() == table.resolve()
    assert s.output == str(cfg.parent / "out.csv")
    assert (s.columns, s.rho, s.known, s.min_privacy, s.method, s.seed) == (
        ["a", "b"],
        [0.3, 0.3],
        [2, 5],
        0.6,
        "rbt",
        None,
    )
    with pytest.raises(
        AnonlabError, match="clusters: Input should be greater than or equal to 1"
    ) as caught:
        PerturbSettings.load(cfg, clusters=0)
    assert caught.value.parameter == "clusters"
    with pytest.raises(AnonlabError, match=r"the input 'other\.csv' replaces the one config"):
        PerturbSettings.load(cfg, input="other.csv")
    assert PerturbSettings.load(cfg, input="other.csv", output="o2.csv").input == "other.csv"
    for bad, parameter, message in (
        ({"seed": -1}, "seed", "seed -1 must be a whole number >= 0"),
        ({"delimiter": ";;"}, "delimiter", "delimiter ';;' must be one character"),
        ({"known": [0]}, "known", "known [0] must list positive record counts"),
        ({"method": "gdp", "noise": -1.0}, "noise", "noise -1.0 must be a finite number"),
        ({"min_privacy": 1.5}, "min_privacy", "min_privacy 1.5 must be in [0, 1)"),
    ):
        with pytest.raises(AnonlabError) as caught:
            run_perturb(PerturbSettings.load(cfg, overwrite=True, **bad))
        assert str(caught.value).startswith(message)
        assert caught.value.parameter == parameter
    assert not (cfg.parent / "out.csv").exists()


def test_the_example_runs_verified_and_keeps_distances(tmp_path: Path) -> None:
    # examples/perturb_tarragona.toml (seed 7), its outputs redirected; the library is rebuilt
    # from the seed
    settings = PerturbSettings.load(
        EXAMPLE,
        output=str(tmp_path / "obt.csv"),
        key=str(tmp_path / "key.json"),
        library=str(tmp_path / "lib.json"),
        report=str(tmp_path / "rep.json"),
    )
    result = _quietly(lambda: run_perturb(settings))
    assert result.report["verified"] is True
    release = pd.read_csv(tmp_path / "obt.csv")
    original = pd.read_csv(EXAMPLE.parent / "../data/sdc/Tarragona.csv")
    assert list(release.columns) == list(original.columns) and len(release) == len(original)
    z = (original - original.mean()) / original.std(ddof=0)
    d_z = np.linalg.norm(z.to_numpy()[:50, None] - z.to_numpy()[None, :50], axis=2)
    d_y = np.linalg.norm(release.to_numpy()[:50, None] - release.to_numpy()[None, :50], axis=2)
    assert np.allclose(d_z, d_y, rtol=1e-9, atol=1e-9)


def test_cli_invert_and_config_overrides_are_one_line(table: Path, tmp_path: Path) -> None:
    rel, key = tmp_path / "rel.csv", tmp_path / "key.json"
    assert (
        _cli(
            [
                "perturb",
                str(table),
                *_rest("a,b"),
                "--seed",
                "2",
                "--output",
                str(rel),
                "--key",
                str(key),
                "--quiet",
            ]
        )[0]
        == 0
    )
    code, text = _cli(
        [
            "perturb",
            "--invert",
            str(rel),
            "--key",
            str(key),
            "--output",
            str(tmp_path / "b.csv"),
            "--method",
            "rbt",
            "--report",
            "r.json",
        ]
    )
    assert code == 2
    assert text.strip() == "Error: --method and --report are not used with --invert: drop them"
    cfg = tmp_path / "p.toml"
    cfg.write_text('input = "data.csv"\ncolumns = "a,b"\noutput = "o.csv"\nkey = "k.json"\n')
    other = tmp_path / "other.csv"
    other.write_bytes(table.read_bytes())
    code, text = _cli(
        ["perturb", "--config", str(cfg), str(other), "--output", str(tmp_path / "o2.csv")]
    )
    assert code == 2 and len(text.strip().splitlines()) == 1
    assert text.strip().endswith("give --key for the new input")
    assert not (tmp_path / "o2.csv").exists() and not (tmp_path / "o.csv").exists()


def test_a_gdp_release_without_a_key_file_is_verified_with_its_key(
    table: Path, tmp_path: Path
) -> None:
    # noise moves every distance: the check undoes the release with the key that made it
    settings = PerturbSettings(
        input=str(table),
        columns=["a", "b", "c"],
        method="gdp",
        seed=6,
        noise=0.3,
        insensitive=_unchanged(["a", "b", "c"]),
        output=str(tmp_path / "rel.csv"),
    )
    result = _quietly(lambda: run_perturb(settings))
    assert result.report["verified"] is True
    assert result.written == [tmp_path / "rel.csv"]
