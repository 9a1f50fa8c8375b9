"""The microaggregation family's run layer: settings -> run -> outputs, all or nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

import anonlab
from anonlab.cli.app import app
from anonlab.errors import AnonlabError
from anonlab.io import read_table
from anonlab.runs.microaggregate import (
    EvaluateSettings,
    MicroaggregateSettings,
    TradeoffSettings,
    run_evaluate,
    run_microaggregate,
    run_tradeoff,
)
from anonlab.verify import microaggregation as checker

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
# SHA-256 of out/tarragona_k3.csv as `anonlab microaggregate --config examples/tarragona.toml`
# wrote it before the run layer existed: the release must stay byte for byte the same
TARRAGONA_K3_SHA256 = "a392f534fa9b29a64c1965f7f9640f369ebeb19f362b7b4718dea8bce88884ae"
checker_of_the_library = checker.check_microaggregation
# the small releases made here are risky on purpose: their warnings are tested elsewhere
# (tests/test_release_risk.py)
pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")


def _cli(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


def _files(folder: Path) -> list[str]:
    """Every file in ``folder``, hidden temporary files included."""
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def tarragona(data_dir: Path) -> Path:
    return data_dir / "sdc" / "Tarragona.csv"


def test_python_run_equals_the_cli_release_and_the_baseline(tmp_path: Path) -> None:
    py_out, cli_out = tmp_path / "py" / "t3.csv", tmp_path / "cli" / "t3.csv"
    settings = MicroaggregateSettings.load(
        EXAMPLES / "tarragona.toml", output=str(py_out), report=str(tmp_path / "py" / "t3.json")
    )
    result = run_microaggregate(settings)
    code, text = _cli(
        [
            "microaggregate",
            "--config",
            str(EXAMPLES / "tarragona.toml"),
            "--output",
            str(cli_out),
            "--report",
            str(tmp_path / "cli" / "t3.json"),
        ]
    )
    assert code == 0, text
    assert "release verified" in text
    assert py_out.read_bytes() == cli_out.read_bytes()
    assert hashlib.sha256(py_out.read_bytes()).hexdigest() == TARRAGONA_K3_SHA256
    assert result.written == [py_out, tmp_path / "py" / "t3.json"]
    assert result.release is not None and result.release.shape == (834, 13)
    report = json.loads((tmp_path / "py" / "t3.json").read_text())
    assert report == json.loads(json.dumps(result.report))
    assert report["verified"] is True and report["paths"] == "relative to the report's folder"
    # the input is stored relative to the report's folder and resolves to the example's data
    stored = (tmp_path / "py" / report["parameters"]["input"]).resolve()
    assert stored == (EXAMPLES.parent / "data" / "sdc" / "Tarragona.csv").resolve()
    # the keys an independent check of the release reads
    assert report["k"] == 3 and report["variant"] == "exact"
    assert report["columns"] == list(result.release.columns)
    assert report["nominal"] == [] and report["ordinal"] == []
    assert report["parameters"]["orders"] == {}


def test_run_without_outputs_returns_the_release_only(
    tarragona: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = anonlab.run_microaggregate(anonlab.MicroaggregateSettings(input=str(tarragona), k=4))
    assert result.written == [] and _files(tmp_path) == []
    assert result.release is not None
    assert (result.release.groupby(list(result.release.columns)).size() >= 4).all()
    assert result.report["paths"] == "absolute"
    assert result.report["parameters"]["input"] == str(tarragona.resolve())


def _failing_render(*args: Any, **kwargs: Any) -> str:
    raise RuntimeError("rendering failed")


@pytest.mark.parametrize("command", ["microaggregate", "evaluate", "tradeoff"])
def test_a_failing_html_render_writes_nothing(
    tarragona: Path, tmp_path: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anonlab.htmlreport

    monkeypatch.setattr(anonlab.htmlreport, "render_html", _failing_render)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="rendering failed"):
        if command == "microaggregate":
            run_microaggregate(
                MicroaggregateSettings(
                    input=str(tarragona),
                    output=str(out / "t.csv"),
                    report=str(out / "t.json"),
                    html=str(out / "t.html"),
                )
            )
        elif command == "evaluate":
            run_evaluate(
                EvaluateSettings(
                    original=str(tarragona),
                    masked=str(tarragona),
                    report=str(out / "e.json"),
                    html=str(out / "e.html"),
                )
            )
        else:
            run_tradeoff(
                TradeoffSettings(
                    input=str(tarragona),
                    k="3-4",
                    plot=str(out / "r.png"),
                    report=str(out / "r.json"),
                    html=str(out / "r.html"),
                )
            )
    assert not out.exists() or _files(out) == []


def test_a_failing_verification_writes_nothing(
    tarragona: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[pd.DataFrame] = []

    def refuse(original: pd.DataFrame, release: pd.DataFrame, k: int, **columns: Any) -> list[str]:
        seen.append(release)
        return ["group 7 has 2 records, fewer than k = 3", "another problem"]

    monkeypatch.setattr(checker, "check_microaggregation", refuse)
    out = tmp_path / "t.csv"
    code, text = _cli(
        [
            "microaggregate",
            str(tarragona),
            "--output",
            str(out),
            "--report",
            str(tmp_path / "t.json"),
            "--quiet",
        ]
    )
    assert code == 2
    assert text.strip() == (
        "Error: verification failed, nothing written: group 7 has 2 records, fewer than k = 3"
    )
    assert _files(tmp_path) == []
    # the checker saw the staged file as read back, not the frame in memory
    assert len(seen) == 1
    assert all(pd.api.types.is_string_dtype(t) for t in seen[0].dtypes)
    code, text = _cli(
        ["microaggregate", str(tarragona), "--output", str(out), "--quiet", "--no-verify"]
    )
    assert code == 0, text
    assert len(seen) == 1 and _files(tmp_path) == ["t.csv"]
    assert pd.read_csv(out).shape == (834, 13)


def test_the_checker_reads_the_staged_parquet_release(
    tarragona: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[pd.DataFrame] = []

    def accept(original: pd.DataFrame, release: pd.DataFrame, k: int, **columns: Any) -> list[str]:
        seen.append(release)
        return checker_of_the_library(original, release, k, **columns)

    monkeypatch.setattr(checker, "check_microaggregation", accept)
    out = tmp_path / "t.parquet"
    result = run_microaggregate(MicroaggregateSettings(input=str(tarragona), output=str(out)))
    written = pd.read_parquet(out)
    assert result.release is not None
    pd.testing.assert_frame_equal(written, result.release)
    # what the checker saw is what the one reader reads from the file now in place
    pd.testing.assert_frame_equal(seen[0], read_table(out))


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        ("microaggregate", "--output"),
        ("microaggregate", "--report"),
        ("microaggregate", "--html"),
        ("evaluate", "--report"),
        ("tradeoff", "--plot"),
        ("tradeoff", "--report"),
    ],
)
def test_an_existing_folder_as_output_is_one_line(
    tarragona: Path, tmp_path: Path, command: str, flag: str
) -> None:
    folder = tmp_path / "taken"
    folder.mkdir()
    inputs = [str(tarragona), str(tarragona)] if command == "evaluate" else [str(tarragona)]
    others = {"--output": "o.csv", "--report": "o.json", "--html": "o.html", "--plot": "o.png"}
    allowed = {
        "microaggregate": ("--output", "--report", "--html"),
        "evaluate": ("--report", "--html"),
        "tradeoff": ("--report", "--html", "--plot"),
    }
    args = [command, *inputs, "--quiet", flag, str(folder)]
    for other in allowed[command]:
        if other != flag:
            args += [other, str(tmp_path / others[other])]
    if command == "tradeoff":
        args += ["--k", "3-4"]
    code, text = _cli(args)
    assert code == 2
    assert text.strip() == f"Error: {flag} '{folder}' is a folder: give a file name inside it"
    assert _files(tmp_path) == ["taken"] and _files(folder) == []


def test_settings_from_toml_and_overrides(tarragona: Path, tmp_path: Path) -> None:
    config = tmp_path / "conf" / "t.toml"
    config.parent.mkdir()
    config.write_text(
        f'input = "{tarragona}"\nk = "3-4"\nlambda = [0.5, 0.0, 0.5]\n'
        'report = "r.json"\nnominal = "a,b"\n'
    )
    s = TradeoffSettings.load(config)
    assert s.report == str(config.parent / "r.json")
    assert s.lambda_ == [0.5, 0.0, 0.5] and s.nominal == ["a", "b"]
    s = TradeoffSettings.load(
        config, lambda_="0.2,0.3,0.5", tau=[0.4, 0.6], ordinal=["c"], overwrite=True
    )  # the config's report: see test_no_overwrite.py
    assert s.lambda_ == [0.2, 0.3, 0.5] and s.tau == [0.4, 0.6] and s.ordinal == ["c"]
    with pytest.raises(AnonlabError) as info:
        TradeoffSettings.load(config, workers=0)
    assert info.value.parameter == "workers"
    assert str(info.value).startswith("workers: must be -1 (every CPU) or at least 1")
    with pytest.raises(AnonlabError) as info:
        MicroaggregateSettings.load(None, input="x.csv", k=1)
    assert info.value.parameter == "k"
    with pytest.raises(AnonlabError) as info:
        EvaluateSettings.load(None, original="a.csv", masked="b.csv", gamma="half,half")
    assert info.value.parameter == "gamma" and "not comma-separated numbers" in str(info.value)


def test_bad_k_is_refused_before_reading(tmp_path: Path) -> None:
    s = TradeoffSettings(
        input=str(tmp_path / "missing.csv"), k="three", report=str(tmp_path / "r.json")
    )
    with pytest.raises(AnonlabError) as info:
        run_tradeoff(s)
    assert info.value.parameter == "k" and str(info.value).startswith("k 'three' is not a k")
    assert _files(tmp_path) == []


def test_tradeoff_reports_progress_and_draws_the_one_ru_map(
    tarragona: Path, tmp_path: Path
) -> None:
    from anonlab.htmlreport.plots import png_bytes
    from anonlab.htmlreport.render import main_figure

    calls: list[tuple[str, int, int | None]] = []
    plot = tmp_path / "ru.png"
    result = run_tradeoff(
        TradeoffSettings(input=str(tarragona), k=[3, 5, 4], plot=str(plot)),
        progress=lambda step, done, total: calls.append((step, done, total)),
    )
    assert result.report["k_values"] == [3, 4, 5]
    sweep = [c for c in calls if c[0].startswith("trade-off")]
    assert [c[1:] for c in sweep] == [(0, 3), (1, 3), (2, 3), (3, 3)]
    # --plot is the R-U map of the HTML report, drawn from the report by the same code
    assert plot.read_bytes() == png_bytes(main_figure(result.report))


def test_evaluate_run_matches_the_library(tarragona: Path, tmp_path: Path) -> None:
    from anonlab.metrics import evaluate
    from anonlab.microaggregation import microaggregate

    frame = pd.read_csv(tarragona, dtype=str)
    masked = microaggregate(frame, "all-numeric", 3).masked
    masked.to_csv(tmp_path / "m.csv", index=False)
    calls: list[tuple[str, int, int | None]] = []
    result = run_evaluate(
        EvaluateSettings(
            original=str(tarragona), masked=str(tmp_path / "m.csv"), tau=[0.3, 0.7], workers=2
        ),
        progress=lambda step, done, total: calls.append((step, done, total)),
    )
    steps = {step for step, _, _ in calls}
    assert len(steps) == 3, steps  # information loss, record linkage, interval disclosure
    assert all(
        done == total
        for step in steps
        for _, done, total in [next(c for c in reversed(calls) if c[0] == step)]
    )
    expected = evaluate(frame, pd.read_csv(tmp_path / "m.csv", dtype=str), tau=(0.3, 0.7))
    assert result.report["measures"] == expected.measures
    assert result.report["inputs"]["masked"]["name"] == "m.csv"
    assert result.written == [] and result.release is None


def test_microaggregate_passes_progress_to_mdav(tarragona: Path) -> None:
    calls: list[tuple[str, int, int | None]] = []
    run_microaggregate(
        MicroaggregateSettings(input=str(tarragona), k=3),
        progress=lambda step, done, total: calls.append((step, done, total)),
    )
    assert calls, "MDAV reported no progress"
    done = [c[1] for c in calls]
    assert done == sorted(done) and calls[-1][1:] == (834, 834)


def test_release_format_follows_the_output_extension(tarragona: Path, tmp_path: Path) -> None:
    frames = []
    for name in ("t.csv", "t.parquet", "t.xlsx"):
        result = run_microaggregate(
            MicroaggregateSettings(input=str(tarragona), output=str(tmp_path / name))
        )
        assert result.report["verified"] is True
        frames.append(read_table(tmp_path / name))
    assert (tmp_path / "t.xlsx").read_bytes()[:4] == b"PK\x03\x04"
    assert (tmp_path / "t.parquet").read_bytes()[:4] == b"PAR1"
    pd.testing.assert_frame_equal(frames[1], frames[0])  # Parquet: the same text
    # openpyxl stores 16 significant digits, so an Excel release is equal to 1e-15
    pd.testing.assert_frame_equal(
        frames[2].astype(float), frames[0].astype(float), check_exact=False, rtol=1e-15
    )


def test_sources_give_the_same_release(tarragona: Path, tmp_path: Path) -> None:
    from anonlab.io import write_table

    frame = read_table(tarragona)
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    write_table(frame, url, table="tarragona")
    write_table(frame, tmp_path / "t.parquet")
    write_table(frame, tmp_path / "t.xlsx")
    sources: list[dict[str, Any]] = [
        {"input": str(tarragona)},
        {"input": url, "table": "tarragona"},
        {"input": url, "query": "SELECT * FROM tarragona"},
        {"input": str(tmp_path / "t.parquet")},
        {"input": str(tmp_path / "t.xlsx")},
    ]
    releases = []
    for i, source in enumerate(sources):
        out = tmp_path / f"r{i}.csv"
        result = run_microaggregate(
            MicroaggregateSettings.load(None, output=str(out), report=str(out) + ".json", **source)
        )
        assert result.report["verified"] is True
        releases.append(out.read_bytes())
    assert releases[0] == releases[1] == releases[2] == releases[3] == releases[4]
    report = json.loads((tmp_path / "r1.csv.json").read_text())
    assert report["parameters"]["input"] == url and report["parameters"]["table"] == "tarragona"


def test_another_input_with_the_configs_outputs_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n3,4\n5,6\n")
    code, text = _cli(
        ["microaggregate", str(other), "--config", str(EXAMPLES / "tarragona.toml"), "--quiet"]
    )
    assert code == 2
    assert text.startswith(
        "Error: the INPUT argument differs from the config file's, but its output, "
        "report would be written to the config's paths"
    ), text
    code, text = _cli(
        [
            "microaggregate",
            str(other),
            "--config",
            str(EXAMPLES / "tarragona.toml"),
            "--output",
            str(tmp_path / "o.csv"),
            "--report",
            str(tmp_path / "o.json"),
            "--k",
            "2",
            "--quiet",
        ]
    )
    assert code == 0, text
    assert _files(tmp_path) == ["o.csv", "o.json", "other.csv"]
