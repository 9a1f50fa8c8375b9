"""The one fusion loop, run alike by ``fuse`` (all providers in one process) and ``party``.

Each round (docs/formulas.md §3): every local provider scores its own candidates and
enters its best normalized, quantized score; ``network.argmax`` reveals only
the winning provider (or that none is left); the winner sends instructions
(record ids per child value); every provider applies them to its copy of
the shared cut. The loop never looks at whether the other providers are in
this process or behind a network.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from anonlab.errors import AnonlabError
from anonlab.fusion.channel import LocalNetwork, Network
from anonlab.fusion.config import FusionConfig, config_from_dict
from anonlab.fusion.messages import (
    Columns,
    Instructions,
    decode_columns,
    decode_instructions,
    encode_columns,
    encode_instructions,
)
from anonlab.fusion.provider import CutSpec, ProviderState, load_provider, root_labels
from anonlab.fusion.templates import SharedCut, template_summary
from anonlab.progress import ProgressFn, report_to
from anonlab.table import MicrodataTable

ROUNDS_STEP = "fusion rounds"
"""The progress step of the fusion loop: ``progress(ROUNDS_STEP, rounds done, None)``."""


@dataclass
class FusionResult:
    """The fused table and what happened on the way."""

    table: pd.DataFrame
    rounds: int
    specializations: list[dict[str, Any]]
    templates: list[dict[str, Any]]
    dropped_templates: list[str]
    time_seconds: float
    bytes_sent: dict[str, int]
    private: bool
    score: str
    providers: list[str]
    cut: dict[str, list[str]] = field(default_factory=dict)
    cut_specs: dict[str, CutSpec] = field(default_factory=dict)
    columns: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rounds_per_second(self) -> float:
        """Specialization rounds per second of the loop."""
        return self.rounds / self.time_seconds if self.time_seconds > 0 else float("inf")

    def generalize(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Generalize another raw table (e.g. a test set) to this run's final cut.

        Available for the attributes of the providers that ran in this process.
        """
        out = frame.copy()
        for a, spec in self.cut_specs.items():
            if a in out.columns:
                out[a] = spec.apply(out[a].astype(str))
        return out

    def report(self) -> dict[str, Any]:
        """The method's report keys (add :func:`anonlab.report.report_header`)."""
        return {
            "providers": self.providers,
            "records": len(self.table),
            "score": self.score,
            "private": self.private,
            "rounds": self.rounds,
            "time_seconds": round(self.time_seconds, 4),
            "rounds_per_second": round(self.rounds_per_second, 2),
            "templates": self.templates,
            "dropped_templates": self.dropped_templates,
            "cut": self.cut,
            "columns": self.columns,
            "specializations": self.specializations,
            "bytes_sent": self.bytes_sent,
        }


def _new_cut(state: ProviderState) -> SharedCut:
    config = state.config
    return SharedCut(
        n=state.n,
        attributes=tuple(config.qid_attributes),
        templates=state.templates,
        root_labels=root_labels(config),
    )


def _exchange_columns(
    states: Mapping[int, ProviderState], network: Network, config: FusionConfig, n: int
) -> dict[str, Any]:
    columns: dict[str, Any] = {}
    for i, party in enumerate(config.providers):
        part: Mapping[str, Any]
        if i in states:
            part = states[i].release_columns()
            network.send(i, encode_columns(Columns(i, part)))
        else:
            msg = decode_columns(network.receive(i))
            if (
                msg.provider != i
                or list(msg.columns) != config.released_columns(party)
                or any(len(v) != n for v in msg.columns.values())
            ):
                raise AnonlabError(
                    f"provider '{party.id}' sent a table part that does not "
                    "match its configured columns: the parties' configs differ"
                )
            part = msg.columns
        columns.update(part)
    return columns


def _attach(states: Sequence[ProviderState], cut: SharedCut) -> None:
    """Start every local provider from the root cut (and its g factors, score = sensitivity)."""
    for s in states:
        if s.n != cut.n:
            raise AnonlabError(
                f"provider '{s.party_id}' has {s.n} records where "
                f"'{states[0].party_id}' has {cut.n}: every provider needs the "
                "same record ids"
            )
        s.attach(cut)
    if states[0].config.fusion.score == "sensitivity":
        for s in states:
            s.set_attribute_factors()


def _winning_instructions(
    local: Mapping[int, ProviderState], network: Network, winner: int, owners: Mapping[str, int]
) -> tuple[Instructions, float | None]:
    """The round winner's instructions: made and sent here, or received; with its score
    when the winner is local."""
    if winner in local:
        instr = local[winner].instructions()
        network.send(winner, encode_instructions(instr))
        return instr, local[winner].best_score
    instr = decode_instructions(network.receive(winner))
    if owners.get(instr.attribute) != winner:
        raise AnonlabError(
            f"provider {winner} sent instructions for '{instr.attribute}',"
            " which it does not own: the parties are out of step"
        )
    return instr, None


def _rounds(
    states: Sequence[ProviderState], network: Network, cut: SharedCut, tell: ProgressFn
) -> list[dict[str, Any]]:
    """Specialize round by round until the secure (or plain) max says stop; the history."""
    config = states[0].config
    local = {s.index: s for s in states}
    owners = {a: config.owner(a) for a in config.qid_attributes}
    history: list[dict[str, Any]] = []
    while True:
        entries = {i: s.score_round() for i, s in local.items()}
        winner = network.argmax(entries)
        if winner is None:
            return history
        instr, score = _winning_instructions(local, network, winner, owners)
        new_ids = cut.apply(instr)
        for s in states:
            s.after_apply(instr, new_ids)
        entry: dict[str, Any] = {
            "round": len(history) + 1,
            "party": config.providers[winner].id,
            "attribute": instr.attribute,
            "value": instr.parent_label,
            "children": list(instr.children),
            "records": int(sum(r.size for r in instr.records)),
        }
        if not network.private and score is not None:
            entry["score"] = score
        history.append(entry)
        tell(ROUNDS_STEP, len(history), None)


def run_parties(
    states: Sequence[ProviderState], network: Network, *, progress: ProgressFn | None = None
) -> FusionResult:
    """Run the fusion loop for the local providers ``states`` over ``network``.

    ``progress`` hears ``("fusion rounds", rounds done, None)`` after every round
    (the number of rounds is not known in advance).
    """
    if not states:
        raise AnonlabError("no local provider: a helper process runs run_helper instead")
    started = time.perf_counter()
    local = {s.index: s for s in states}
    if sorted(local) != sorted(network.local_providers):
        raise AnonlabError("the network's local providers differ from the loaded ones")
    config = states[0].config
    cut = _new_cut(states[0])
    _attach(states, cut)
    history = _rounds(states, network, cut, report_to(progress))
    elapsed = time.perf_counter() - started
    columns = _exchange_columns(local, network, config, cut.n)
    table = _assemble(states[0], columns)
    _, dropped = config.effective_templates()
    specs = {a: s.cut_spec(a) for s in states for a in s.qid}
    final_cut = {
        a: sorted({str(cut.labels[a][v]) for v in np.unique(cut.cur[a])})
        for a in config.qid_attributes
    }
    return FusionResult(
        table=table,
        rounds=len(history),
        specializations=history,
        templates=template_summary(cut),
        dropped_templates=dropped,
        time_seconds=elapsed,
        bytes_sent=network.bytes_sent(),
        private=network.private,
        score=config.fusion.score,
        providers=[p.id for p in config.providers],
        cut=final_cut,
        cut_specs=specs,
        columns=fused_columns(config, final_cut),
    )


def fused_columns(config: FusionConfig, cut: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """Every column of the fused table: its name, who holds it and how it is released.

    In table order (as :func:`_assemble` builds it): the record id when the
    config names one (``"id kept"`` or ``"id dropped"`` by ``keep_id``; a
    dropped id is listed although the table lacks it), each provider's
    columns in configuration order (``"generalized"`` to the final cut, with
    ``cut_values`` the number of values in it, when the column is in some
    anonymity template; ``"dropped"`` when it is identifying, listed although
    the table lacks it; ``"as is"`` otherwise), the class attribute last
    (``"class"``, released as is). ``held_by`` lists the party ids holding
    the column: one provider, or every provider for the id and the class.
    """
    everyone = [p.id for p in config.providers]
    out: list[dict[str, Any]] = []
    if config.fusion.id:
        out.append(
            {
                "name": config.fusion.id,
                "held_by": everyone,
                "released": "id kept" if config.fusion.keep_id else "id dropped",
            }
        )
    for party in config.providers:
        dropped = config.identifying(party)
        for column in party.columns:
            if column in dropped:
                out.append({"name": column, "held_by": [party.id], "released": "dropped"})
            elif column in cut:
                out.append(
                    {
                        "name": column,
                        "held_by": [party.id],
                        "released": "generalized",
                        "cut_values": len(cut[column]),
                    }
                )
            else:
                out.append({"name": column, "held_by": [party.id], "released": "as is"})
    out.append({"name": config.class_column, "held_by": everyone, "released": "class"})
    return out


def _assemble(state: ProviderState, columns: dict[str, Any]) -> pd.DataFrame:
    config = state.config
    data: dict[str, Any] = {}
    if config.fusion.keep_id and config.fusion.id:
        data[config.fusion.id] = state.ids
    for party in config.providers:
        for c in config.released_columns(party):
            data[c] = columns[c]
    data[config.class_column] = np.asarray(state.class_labels, dtype=object)[state.classes]
    return pd.DataFrame(data)


def run_helper(network: Network, *, progress: ProgressFn | None = None) -> int:
    """An input-less helper: join every round's secure max until it says stop."""
    tell = report_to(progress)
    rounds = 0
    while network.argmax({}) is not None:
        rounds += 1
        tell(ROUNDS_STEP, rounds, None)
    return rounds


def _check_aligned(states: Sequence[ProviderState]) -> None:
    first = states[0]
    for s in states[1:]:
        if s.n != first.n or not np.array_equal(s.ids, first.ids):
            raise AnonlabError(
                f"{s.source} and {first.source} hold different record ids: "
                "every provider needs the same ids"
            )
        if s.class_labels != first.class_labels or not np.array_equal(s.classes, first.classes):
            raise AnonlabError(
                f"{s.source} and {first.source} disagree on the class column "
                f"'{first.config.class_column}': give every provider the same "
                "class values"
            )


def fuse(
    config: FusionConfig,
    frames: Mapping[str, pd.DataFrame | MicrodataTable] | None = None,
    *,
    progress: ProgressFn | None = None,
) -> FusionResult:
    """All providers in this process (plain max, labelled not private).

    ``frames`` may give a provider's part by party id instead of its file: a
    DataFrame (taken as text), or a :class:`~anonlab.table.MicrodataTable`
    whose roles and encodings agree with the config (build it with
    :func:`anonlab.fusion.provider.provider_table`; a disagreement is an
    :class:`AnonlabError` naming ``frames``). Every form gives the same
    release. ``progress`` hears ``("fusion rounds", rounds done, None)``
    after every round.
    """
    frames = frames or {}
    states = [
        load_provider(config, i, frames.get(p.id), parameter="frames")
        for i, p in enumerate(config.providers)
    ]
    _check_aligned(states)
    ids = [p.id for p in config.providers] + [h.id for h in config.helpers]
    network = LocalNetwork(ids, n_providers=len(config.providers))
    try:
        return run_parties(states, network, progress=progress)
    finally:
        network.close()


def specialize_table(
    frame: pd.DataFrame | MicrodataTable, settings: Mapping[str, Any], base: str = "."
) -> FusionResult:
    """Single-party TDS on one joined table: one provider holding every column.

    ``settings`` is a fusion config without ``parties`` (its ``[fusion]``,
    ``templates``, ``taxonomies`` and ``sensitivity`` tables); the provider
    holds every column of ``frame`` (a DataFrame, or a
    :class:`~anonlab.table.MicrodataTable` as :func:`fuse` takes one) but the
    class and id columns, with factor 1.
    """
    columns = frame.frame.columns if isinstance(frame, MicrodataTable) else frame.columns
    fusion = dict(settings.get("fusion", {}))
    skip = {fusion.get("class"), fusion.get("id")}
    party = {
        "id": "single",
        "role": "provider",
        "file": "<frame>",
        "columns": [c for c in columns if c not in skip],
        "factor": 1.0,
    }
    data = {**settings, "parties": [party]}
    config = config_from_dict(data, base, source="<single table>", min_providers=1)
    return fuse(config, {"single": frame})
