"""The shared cut: every party's copy of the current generalized QID values.

Each provider process keeps, for every quasi-identifier of every provider,
the current value (a node id) of each record, and for every anonymity
template <QID_j, k_j> the group of each record (records sharing all their
QID_j values) with the group sizes. Instructions (record ids moving from a
parent value to its children) update both, touching only the moved records:
a group of a template that holds the attribute consists of records of one
value, so the parent's groups split and no other group changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.fusion.messages import Instructions


@dataclass(frozen=True)
class Template:
    """One anonymity template <QID, k>."""

    qid: tuple[str, ...]
    k: int


@dataclass
class SharedCut:
    """Current values of all QID attributes and the template groups (see module doc)."""

    n: int
    attributes: tuple[str, ...]
    templates: tuple[Template, ...]
    root_labels: dict[str, str]
    cur: dict[str, NDArray[Any]] = field(default_factory=dict)
    labels: dict[str, list[str]] = field(default_factory=dict)
    parents: dict[str, list[int]] = field(default_factory=dict)
    counts: dict[str, list[int]] = field(default_factory=dict)
    gid: list[NDArray[Any]] = field(default_factory=list)
    gsize: list[NDArray[Any]] = field(default_factory=list)
    gvalue: list[dict[str, NDArray[Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for a in self.attributes:
            self.cur[a] = np.zeros(self.n, dtype=np.int64)
            self.labels[a] = [self.root_labels[a]]
            self.parents[a] = [-1]
            self.counts[a] = [self.n]
        for t in self.templates:
            if self.n < t.k:
                raise AnonlabError(
                    f"the table has {self.n} records, fewer than k = {t.k} of template "
                    f"<{', '.join(t.qid)}>: no generalization can satisfy it; lower k"
                )
            self.gid.append(np.zeros(self.n, dtype=np.int64))
            self.gsize.append(np.array([self.n], dtype=np.int64))
            self.gvalue.append({a: np.zeros(1, dtype=np.int64) for a in t.qid})

    def templates_with(self, attribute: str) -> list[int]:
        """Indices of the templates whose QID holds ``attribute``."""
        return [j for j, t in enumerate(self.templates) if attribute in t.qid]

    def smallest(self, j: int) -> int:
        """Size of the smallest group of template ``j``."""
        sizes = self.gsize[j]
        return int(sizes[sizes > 0].min())

    def value_minima(self, j: int, attribute: str) -> tuple[int, int, int]:
        """(value with the smallest group, that size, smallest size over other values)."""
        alive = self.gsize[j] > 0
        sizes = self.gsize[j][alive]
        values = self.gvalue[j][attribute][alive]
        order = np.argsort(sizes, kind="stable")
        first = int(values[order[0]])
        others = sizes[values != first]
        big = np.iinfo(np.int64).max
        return first, int(sizes[order[0]]), int(others.min()) if others.size else big

    def check(self, instr: Instructions) -> NDArray[Any]:
        """Check instructions against the cut; returns the parent's record ids, sorted."""
        a = instr.attribute
        if a not in self.cur:
            raise AnonlabError(
                f"instructions name attribute '{a}', which is not a "
                "quasi-identifier of this fusion: the parties' configs differ"
            )
        if not 0 <= instr.parent < len(self.labels[a]):
            raise AnonlabError(
                f"instructions name unknown value id {instr.parent} of '{a}': "
                "the parties are out of step"
            )
        if self.labels[a][instr.parent] != instr.parent_label:
            raise AnonlabError(
                f"instructions name value '{instr.parent_label}' of '{a}' where "
                f"this party has '{self.labels[a][instr.parent]}': the parties "
                "are out of step"
            )
        ids = np.concatenate(instr.records) if instr.records else np.zeros(0, np.int64)
        expected = self.counts[a][instr.parent]
        if ids.size != expected or (ids.size and (ids.min() < 0 or ids.max() >= self.n)):
            raise AnonlabError(
                f"instructions move {ids.size} records of '{a}' = "
                f"'{instr.parent_label}', which has {expected}: the parties "
                "are out of step"
            )
        ids = np.sort(ids)
        if ids.size and (np.any(ids[1:] == ids[:-1]) or np.any(self.cur[a][ids] != instr.parent)):
            raise AnonlabError(
                f"instructions move records that do not hold '{a}' = "
                f"'{instr.parent_label}': the parties are out of step"
            )
        if len(instr.children) < 1:
            raise AnonlabError("instructions have no child value: the parties are out of step")
        return ids

    def apply(self, instr: Instructions) -> list[int]:
        """Check and apply one specialization; returns the children's new value ids."""
        self.check(instr)
        a = instr.attribute
        new_ids = []
        for label, recs in zip(instr.children, instr.records, strict=True):
            node = len(self.labels[a])
            self.labels[a].append(label)
            self.parents[a].append(instr.parent)
            self.counts[a].append(int(recs.size))
            self.cur[a][recs] = node
            new_ids.append(node)
        self.counts[a][instr.parent] = 0
        moved = np.concatenate(instr.records)
        for j in self.templates_with(a):
            self._split_groups(j, a, moved)
        return new_ids

    def _split_groups(self, j: int, attribute: str, moved: NDArray[Any]) -> None:
        # every old group of ``moved`` holds one value of ``attribute`` (the parent), so
        # its new groups are keyed by the old group and the record's child value
        gid = self.gid[j]
        old = gid[moved]
        width = len(self.labels[attribute])
        combo = old * width + self.cur[attribute][moved]
        span = self.gsize[j].size * width
        if span <= 4 * moved.size + 4096:  # dense keys: count without sorting
            counts = np.bincount(combo, minlength=span)
            present = np.flatnonzero(counts)
            remap = np.zeros(span, dtype=np.int64)
            remap[present] = np.arange(present.size)
            inverse = remap[combo]
            sizes = counts[present]
            first = np.zeros(present.size, dtype=np.int64)
            first[inverse] = np.arange(moved.size)
        else:
            _, first, inverse, sizes = np.unique(
                combo, return_index=True, return_inverse=True, return_counts=True
            )
        start = self.gsize[j].size
        self.gsize[j][old] = 0
        self.gsize[j] = np.concatenate([self.gsize[j], sizes.astype(np.int64)])
        gid[moved] = start + inverse.reshape(-1)
        for a in self.templates[j].qid:
            self.gvalue[j][a] = np.concatenate([self.gvalue[j][a], self.cur[a][moved[first]]])

    def column_labels(self, attribute: str) -> NDArray[Any]:
        """The current labels of every record for ``attribute``."""
        out: NDArray[Any] = np.asarray(self.labels[attribute], dtype=object)[self.cur[attribute]]
        return out


def template_summary(cut: SharedCut) -> list[dict[str, object]]:
    """Each template's QID, k and smallest group on the current cut."""
    return [
        {
            "qid": list(t.qid),
            "k": t.k,
            "smallest_group": cut.smallest(j),
            "groups": int((cut.gsize[j] > 0).sum()),
        }
        for j, t in enumerate(cut.templates)
    ]
