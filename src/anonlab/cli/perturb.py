"""Sub-commands ``perturb`` (and ``perturb --invert``) and ``attack`` (perturbation family)."""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import typer
from pydantic import BaseModel, ConfigDict, ValidationError

from anonlab.cli.common import load_toml, merge_settings, user_errors
from anonlab.errors import AnonlabError

T = TypeVar("T")

PERTURB_HELP = """Z-score numeric columns and transform them so that distances (and so
clusters) are kept: obt (pairs/triples, matrices from a seeded library with
P >= --min-privacy), rbt (pairwise rotations, Var(A - A') >= --rho), rotation
(one random orthogonal matrix) or gdp (rotation + translation + Gaussian noise
of scale --noise). The key that undoes it goes only to --key; the report holds
the privacy measures S, R, P per block, the attack table and the clustering
agreement, never records or the key. Warns when a few known records recover
the release.

Example:

  anonlab perturb data/sdc/Tarragona.csv --method obt --min-privacy 0.5 --seed 7
  --output released.csv --key key.json --report report.json

  anonlab perturb --invert --key key.json released.csv --output restored.csv

  anonlab perturb --config examples/perturb_tarragona.toml
"""

ATTACK_HELP = """Run the attacks on an original table and its perturbed release (same
records in the same order): naive, known input-output (least squares,
Procrustes, the OBT-aware attack) with each number of known records in
--known, known sample (PCA) and ICA. Reports the median relative error and the
share of records recovered within 10% and 25%.

Example:

  anonlab attack data/sdc/Tarragona.csv released.csv --known 2,5,13 --report attack.json
"""

Method = Literal["obt", "rbt", "rotation", "gdp"]


class PerturbSettings(BaseModel):
    """Everything ``anonlab perturb`` needs (TOML keys = long flag names)."""

    model_config = ConfigDict(extra="forbid")

    input: str
    columns: list[str] | None = None
    method: Method = "obt"
    min_privacy: float = 0.5
    rho: list[float] = [0.5, 0.5]
    noise: float = 0.1
    seed: int | None = None  # None: a fresh seed from the operating system
    library: str | None = None
    delimiter: str | None = None
    output: str | None = None
    key: str | None = None
    report: str | None = None
    html: str | None = None
    known: list[int] = [2, 5, 10]
    clusters: int = 3
    attack_records: int = 10_000
    quiet: bool = False


def _validated(model: Callable[..., T], values: dict[str, Any]) -> T:
    try:
        return model(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "settings"
        if err["type"] == "missing":
            raise AnonlabError(f"setting '{where}' is missing: give it as an argument, a flag "
                               "or in the TOML file") from None
        if err["type"] == "extra_forbidden":
            raise AnonlabError(f"unknown setting '{where}': check the spelling (see --help)"
                               ) from None
        raise AnonlabError(f"setting '{where}': {err['msg']} (got {err.get('input')!r})"
                           ) from None


def _numbers(text: str | None, what: str, kind: type) -> list[Any] | None:
    if text is None:
        return None
    try:
        return [kind(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise AnonlabError(f"{what} '{text}' is not a comma-separated list of "
                           f"{'integers' if kind is int else 'numbers'}") from None


def _resolve(config: dict[str, Any], base: Path) -> dict[str, Any]:
    out = dict(config)
    for key in ("input", "library", "output", "key", "report", "html", "sample"):
        if isinstance(out.get(key), str):
            p = Path(out[key])
            out[key] = str(p if p.is_absolute() else base / p)
    if isinstance(out.get("columns"), str):
        out["columns"] = [c.strip() for c in out["columns"].split(",") if c.strip()]
    return out


def _not_a_folder(flag: str, path: str | Path | None) -> None:
    if path is not None and Path(path).is_dir():
        raise AnonlabError(f"{flag} '{path}' is a folder: give a file path")


def _distinct_outputs(outputs: dict[str, str | Path | None], inputs: list[Any]) -> None:
    from anonlab.io import check_outputs

    for flag, path in outputs.items():
        _not_a_folder(flag, path)
    check_outputs(outputs, inputs)


def _collect_warnings(run: Callable[[], T]) -> tuple[T, list[str]]:
    from anonlab.perturbation.attacks import RecoverableReleaseWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RecoverableReleaseWarning)
        result = run()
    messages = [str(w.message) for w in caught
                if issubclass(w.category, RecoverableReleaseWarning)]
    for m in messages:
        print(f"Warning: {m}", file=sys.stderr)
    return result, messages


@user_errors
def perturb_command(
    input: Path | None = typer.Argument(None, help="Table to perturb (CSV or Parquet); with "
                                        "--invert, the release to restore."),
    config: Path | None = typer.Option(None, "--config", help="TOML settings; flags override."),
    columns: list[str] | None = typer.Option(
        None, "--columns", help="Numeric columns to transform, a,b,c (default: all)."),
    method: str | None = typer.Option(None, "--method", help="obt | rbt | rotation | gdp "
                                      "(default obt)."),
    min_privacy: float | None = typer.Option(
        None, "--min-privacy", help="obt: least P = R x S of every library matrix (0.5)."),
    rho: str | None = typer.Option(
        None, "--rho", help="rbt: least Var(A - A') of the two columns of a pair, r1,r2 or r "
        "(0.5)."),
    noise: float | None = typer.Option(
        None, "--noise", help="gdp: deviation of the Gaussian noise on z-scores (0.1)."),
    seed: int | None = typer.Option(
        None, "--seed", help="Random seed (default: fresh from the operating system). It "
        "regenerates the transform: a given seed is as secret as the key."),
    library: Path | None = typer.Option(
        None, "--library", help="obt: matrix library JSON, reused when it exists, else built "
        "from --seed and stored there."),
    delimiter: str | None = typer.Option(None, "--delimiter", help="CSV delimiter (sniffed)."),
    output: Path | None = typer.Option(None, "--output", help="Release (CSV or .parquet); "
                                       "with --invert, the restored table."),
    key: Path | None = typer.Option(None, "--key", help="Secret key JSON (written; read with "
                                    "--invert)."),
    invert: bool = typer.Option(False, "--invert", help="Restore the original from a release "
                                "and its --key."),
    report: Path | None = typer.Option(None, "--report", help="JSON report."),
    html: Path | None = typer.Option(None, "--html", help="Shareable HTML report."),
    known: str | None = typer.Option(
        None, "--known", help="Known-record counts tried by the report's attacks (2,5,10)."),
    clusters: int | None = typer.Option(None, "--clusters",
                                        help="k of k-means and Ward in the report (3)."),
    attack_records: int | None = typer.Option(
        None, "--attack-records", help="Attacks and checks run on at most this many random "
        "records (10000)."),
    quiet: bool = typer.Option(False, "--quiet", help="No summary output."),
) -> None:
    """Perturb numeric columns for clustering (see --help for an example)."""
    started = time.perf_counter()
    base: dict[str, Any] = {}
    if config is not None:
        base = _resolve(load_toml(config), config.parent)
    from anonlab.perturbation.table import split_columns

    rho_values = _numbers(rho, "--rho", float)
    flags = {
        "input": str(input) if input else None, "columns": split_columns(columns),
        "method": method, "min_privacy": min_privacy,
        "rho": rho_values * 2 if rho_values is not None and len(rho_values) == 1 else rho_values,
        "noise": noise, "seed": seed, "library": str(library) if library else None,
        "delimiter": delimiter, "output": str(output) if output else None,
        "key": str(key) if key else None, "report": str(report) if report else None,
        "html": str(html) if html else None, "known": _numbers(known, "--known", int),
        "clusters": clusters, "attack_records": attack_records, "quiet": quiet or None,
    }
    settings = _validated(PerturbSettings, merge_settings(base, flags))
    if invert:
        run_invert(settings, started, config)
    else:
        run_perturb(settings, started, config)


def _check_settings(s: PerturbSettings) -> None:
    from anonlab.perturbation.library import check_seed

    check_seed(s.seed)
    if len(s.rho) != 2:
        raise AnonlabError(f"--rho takes one or two numbers, got {len(s.rho)}")
    if not s.known or min(s.known) < 1:
        raise AnonlabError("--known must list positive record counts, e.g. 2,5,10")
    if s.clusters < 1 or s.attack_records < 2:
        raise AnonlabError("--clusters must be >= 1 and --attack-records >= 2")
    if s.library is not None and s.method != "obt":
        raise AnonlabError(f"--library applies to --method obt, not {s.method}: drop it")


def run_perturb(s: PerturbSettings, started: float, config: Path | None = None
                ) -> dict[str, Any]:
    """Read, check, perturb, evaluate and write as the settings say; returns the report."""
    from anonlab.perturbation.evaluate import perturbation_summary, recoverability_check
    from anonlab.perturbation.library import MatrixLibrary, fresh_seed, library_seed
    from anonlab.perturbation.table import (
        numeric_columns,
        output_delimiter,
        read_perturb_table,
        with_columns,
        write_release,
    )
    from anonlab.perturbation.transforms import perturb_array
    from anonlab.report import report_header

    if s.output is None and s.report is None and s.html is None:
        raise AnonlabError("nothing to write: give --output (with --key), --report and/or --html")
    _check_settings(s)
    _not_a_folder("--library", s.library)
    library_exists = s.library is not None and Path(s.library).exists()
    _distinct_outputs({"--output": s.output, "--key": s.key, "--report": s.report,
                       "--html": s.html,
                       "--library": None if library_exists else s.library},
                      [s.input, config, s.library if library_exists else None])
    seed = s.seed if s.seed is not None else fresh_seed()
    lib = None
    if s.method == "obt":
        if library_exists:
            lib = MatrixLibrary.load(str(s.library))
        else:
            lib = MatrixLibrary.build(s.min_privacy, library_seed(seed))
    frame = read_perturb_table(s.input, s.columns, s.delimiter)
    data = numeric_columns(frame, s.columns)
    z, released, key = perturb_array(data, s.method, seed=seed, min_privacy=s.min_privacy,
                                     rho=(s.rho[0], s.rho[1]), noise=s.noise, library=lib,
                                     overwrite=True)
    report: dict[str, Any] | None = None
    if s.report is not None or s.html is not None:
        summary, _ = _collect_warnings(lambda: perturbation_summary(
            key, z, released, known=s.known, seed=seed % 2**32, n_clusters=s.clusters,
            attack_records=s.attack_records))
        # the seed regenerates the transform (pairing, matrices, noise): key material
        params = s.model_dump(exclude={"quiet", "key", "seed"})
        params["key_written"] = s.key is not None
        params["seed_given"] = "seed" in s.model_fields_set
        report = report_header("perturb", params, {"data": s.input})
        report.update(summary)
        report["runtime_seconds"] = time.perf_counter() - started
    else:
        _collect_warnings(lambda: recoverability_check(
            z, released, known=s.known, seed=seed % 2**32, attack_records=s.attack_records))
    if s.output is not None:
        columns = [released[:, j] for j in range(released.shape[1])]
        write_release(with_columns(frame, data.names, columns), s.output,
                      output_delimiter(s.input, s.delimiter))
    if s.key is not None:
        key.save(s.key)
    if lib is not None and s.library is not None and not library_exists:
        lib.save(s.library)
    if report is not None:
        _write_reports(report, s.report, s.html)
    if not s.quiet:
        _print_summary(report, key, s, time.perf_counter() - started)
    return report or {}


def _write_reports(report: dict[str, Any], path: str | None, html: str | None) -> None:
    from anonlab.io import write_json

    if path is not None:
        write_json(report, path)
    if html is not None:
        from anonlab.htmlreport import write_html

        write_html(report, html)


def run_invert(s: PerturbSettings, started: float, config: Path | None = None) -> None:
    """Restore the original table from a release and its key."""
    from anonlab.perturbation.key import PerturbationKey
    from anonlab.perturbation.table import (
        numeric_columns,
        output_delimiter,
        read_perturb_table,
        with_columns,
        write_release,
    )
    from anonlab.perturbation.transforms import restore_columns

    if s.key is None or s.output is None:
        raise AnonlabError("--invert needs --key (the key file) and --output (the restored "
                           "table)")
    if s.report is not None or s.html is not None:
        raise AnonlabError("--report and --html are not used with --invert: drop them")
    _distinct_outputs({"--output": s.output}, [s.input, s.key, config])
    _not_a_folder("--key", s.key)
    key = PerturbationKey.load(s.key)
    frame = read_perturb_table(s.input, list(key.columns), s.delimiter)
    key.check_columns([str(c) for c in frame.column_names], str(s.input))
    data = numeric_columns(frame, list(key.columns), allow_constant=True)
    restored = restore_columns(data.values, key, str(s.input))
    write_release(with_columns(frame, list(key.columns), restored), s.output,
                  output_delimiter(s.input, s.delimiter))
    if not s.quiet:
        print(f"restored {len(key.columns)} columns of {frame.num_rows} records; wrote "
              f"{s.output} ({time.perf_counter() - started:.2f} s)")


def _print_summary(report: dict[str, Any] | None, key: Any, s: PerturbSettings,
                   seconds: float) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="anonlab perturb", show_header=False)
    table.add_row("method", key.method)
    table.add_row("columns", f"{len(key.columns)} in {len(key.blocks)} block(s)")
    table.add_row("records", str(key.records))
    if report is not None:
        ov = report["overall"]
        table.add_row("S overall", f"{ov['S']:.4g}")
        table.add_row("P per block", f"min {ov['min_block_P']:.4g}, mean {ov['mean_block_P']:.4g}")
        best = max(report["attacks"], key=lambda r: r["within_10"])
        table.add_row("strongest attack", f"{best['attack']} (known {best['known']}): "
                      f"{best['within_10']:.0%} of records within 10%")
        cl = report["clustering"]
        table.add_row("clustering ARI", f"k-means {cl['kmeans']:.4g}, DBSCAN {cl['dbscan']:.4g}, "
                      f"Ward {cl['ward']:.4g}")
    written = [p for p in (s.output, s.key, s.report, s.html) if p]
    table.add_row("wrote", ", ".join(written))
    table.add_row("time", f"{seconds:.2f} s")
    Console(stderr=False).print(table)


class AttackSettings(BaseModel):
    """Everything ``anonlab attack`` needs."""

    model_config = ConfigDict(extra="forbid")

    original: str
    released: str
    columns: list[str] | None = None
    known: list[int] = [2, 5, 10]
    sample: str | None = None
    seed: int = 0
    max_records: int | None = None
    delimiter: str | None = None
    report: str | None = None
    html: str | None = None
    quiet: bool = False


@user_errors
def attack_command(
    original: Path | None = typer.Argument(None, help="Original table (CSV or Parquet)."),
    released: Path | None = typer.Argument(None, help="Its perturbed release, same records "
                                           "in the same order."),
    config: Path | None = typer.Option(None, "--config", help="TOML settings; flags override."),
    columns: list[str] | None = typer.Option(
        None, "--columns", help="Perturbed columns, a,b,c (default: all of the original)."),
    known: str | None = typer.Option(None, "--known",
                                     help="Numbers of known records to try (2,5,10)."),
    sample: Path | None = typer.Option(
        None, "--sample", help="Attacker's independent sample for PCA/ICA (default: a random "
        "half of the original)."),
    seed: int | None = typer.Option(None, "--seed", help="Random seed (0)."),
    max_records: int | None = typer.Option(
        None, "--max-records", help="Attack a random subset of at most this many records."),
    delimiter: str | None = typer.Option(None, "--delimiter", help="CSV delimiter (sniffed)."),
    report: Path | None = typer.Option(None, "--report", help="JSON report."),
    html: Path | None = typer.Option(None, "--html", help="Shareable HTML report."),
    quiet: bool = typer.Option(False, "--quiet", help="No summary output."),
) -> None:
    """Measure what an attacker recovers from a release (see --help for an example)."""
    from anonlab.perturbation.table import split_columns

    started = time.perf_counter()
    base: dict[str, Any] = {}
    if config is not None:
        base = _resolve(load_toml(config), config.parent)
        for k in ("original", "released"):
            if isinstance(base.get(k), str) and not Path(base[k]).is_absolute():
                base[k] = str(config.parent / base[k])
    flags = {"original": str(original) if original else None,
             "released": str(released) if released else None,
             "columns": split_columns(columns), "known": _numbers(known, "--known", int),
             "sample": str(sample) if sample else None, "seed": seed,
             "max_records": max_records, "delimiter": delimiter,
             "report": str(report) if report else None, "html": str(html) if html else None,
             "quiet": quiet or None}
    s = _validated(AttackSettings, merge_settings(base, flags))
    run_attack(s, started, config)


def run_attack(s: AttackSettings, started: float, config: Path | None = None
               ) -> dict[str, Any]:
    """Standardize both tables with the original's means/deviations and run the attacks."""
    from anonlab.perturbation.attacks import run_attacks, warn_if_recoverable
    from anonlab.perturbation.evaluate import attack_subset
    from anonlab.perturbation.library import check_seed
    from anonlab.perturbation.table import numeric_columns, read_perturb_table
    from anonlab.report import report_header

    check_seed(s.seed)
    if not s.known or min(s.known) < 1:
        raise AnonlabError("--known must list positive record counts, e.g. 2,5,10")
    if s.max_records is not None and s.max_records < 2:
        raise AnonlabError("--max-records must be at least 2")
    _distinct_outputs({"--report": s.report, "--html": s.html},
                      [s.original, s.released, s.sample, config])
    orig = numeric_columns(read_perturb_table(s.original, s.columns, s.delimiter), s.columns)
    rel_frame = read_perturb_table(s.released, orig.names, s.delimiter)
    missing = [c for c in orig.names if c not in rel_frame.column_names]
    if missing:
        raise AnonlabError(f"the release '{s.released}' has no column '{missing[0]}': give the "
                           "release of this table (or choose --columns)")
    rel = numeric_columns(rel_frame, orig.names, allow_constant=True)
    if rel.values.shape[0] != orig.values.shape[0]:
        raise AnonlabError(f"the original has {orig.values.shape[0]} records but the release "
                           f"{rel.values.shape[0]}: give the release of this table, records "
                           "in the same order")
    means, stds = orig.values.mean(axis=0), orig.values.std(axis=0)
    z = (orig.values - means) / stds
    sample_z = None
    if s.sample is not None:
        smp = numeric_columns(read_perturb_table(s.sample, orig.names, s.delimiter),
                              orig.names, allow_constant=True)
        sample_z = (smp.values - means) / stds
    rows = attack_subset(z.shape[0], s.max_records or z.shape[0], s.seed)
    usable = [m for m in s.known if m < rows.size]
    if not usable:
        raise AnonlabError(f"--known {s.known} leaves no record to attack: use fewer known "
                           f"records than {rows.size}")

    def attack() -> list[dict[str, Any]]:
        table = run_attacks(z[rows], rel.values[rows], usable, seed=s.seed, sample=sample_z,
                            centre=rel.values.mean(axis=0))
        warn_if_recoverable(table)
        return table

    table, messages = _collect_warnings(attack)
    report = report_header("attack", s.model_dump(exclude={"quiet"}),
                           {"original": s.original, "released": s.released,
                            "sample": s.sample})
    report.update({"columns": orig.names, "records": int(z.shape[0]),
                   "attack_records": int(rows.size), "attacks": table, "warnings": messages,
                   "runtime_seconds": time.perf_counter() - started})
    if s.report is not None or s.html is not None:
        _write_reports(report, s.report, s.html)
    if not s.quiet:
        _print_attacks(table, time.perf_counter() - started)
    return report


def _print_attacks(rows: list[dict[str, Any]], seconds: float) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"anonlab attack ({seconds:.2f} s)")
    for col in ("attack", "known", "median rel. error", "within 10%", "within 25%"):
        table.add_column(col, justify="left" if col == "attack" else "right")
    for r in rows:
        table.add_row(r["attack"], str(r["known"]), f"{r['median_relative_error']:.4g}",
                      f"{r['within_10']:.1%}", f"{r['within_25']:.1%}")
    Console().print(table)


def register(app: typer.Typer) -> None:
    """Add ``perturb`` and ``attack`` to ``app``."""
    app.command("perturb", help=PERTURB_HELP)(perturb_command)
    app.command("attack", help=ATTACK_HELP)(attack_command)
