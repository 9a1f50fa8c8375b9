"""One provider's state: its own raw columns, its candidates and their statistics.

A provider's part of the data (its record ids, its columns and the class) is
a :class:`~anonlab.table.MicrodataTable` (:func:`provider_table`), read from
its file or given from Python. A provider sees the raw values of its own
columns only, plus the shared cut (every party's current generalized QID
values). It scores only its own candidate specializations. Statistics are
kept per candidate, TIPS-like:

* class counts per child, InfoGain, GainRatio and s(v) are computed once,
  when the value appears, over that value's records only;
* the smallest new group each template would get (``m_j``) is cached and
  recomputed only for candidates whose records shared a group with the
  records of the round's specialized value; scoring a round then costs a few
  scalar operations per candidate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.dataset import ROLE_NAMES, Role
from anonlab.errors import AnonlabError, present
from anonlab.fusion import scores
from anonlab.fusion.channel import quantize
from anonlab.fusion.config import CONTINUOUS, FusionConfig
from anonlab.fusion.messages import Instructions
from anonlab.fusion.taxonomy import Taxonomy, build_taxonomy, interval_label
from anonlab.fusion.templates import SharedCut, Template
from anonlab.hierarchy import SUPPRESSED, Hierarchy
from anonlab.io import read_table
from anonlab.table import MicrodataTable

Interval = tuple[float, float, bool]


@dataclass
class Candidate:
    """A value of one of this provider's attributes that could be specialized."""

    attribute: str
    node: int
    records: NDArray[Any]
    child_index: NDArray[Any]
    child_labels: tuple[str, ...]
    child_info: tuple[Any, ...]
    gain: float
    ratio: float
    s: float
    minima: dict[int, int] | None = None


@dataclass
class ProviderState:
    """What one provider holds and computes (see the module docstring).

    ``table`` is the provider's part as the one table model, rows in its own
    order; ``ids``, ``classes``, ``raw`` and ``codes`` hold the records in id
    order (the continuous columns' numbers are ``table.numeric``'s).
    """

    index: int
    party_id: str
    config: FusionConfig
    templates: tuple[Template, ...]
    ids: NDArray[Any]
    classes: NDArray[Any]
    class_labels: tuple[str, ...]
    raw: pd.DataFrame
    qid: tuple[str, ...]
    codes: dict[str, NDArray[Any]]
    taxonomies: dict[str, Taxonomy]
    domains: dict[str, tuple[NDArray[Any], NDArray[Any]]]
    bound: float
    source: str
    cut: SharedCut | None = None
    g: dict[str, float] = field(default_factory=dict)
    node_info: dict[str, dict[int, Any]] = field(default_factory=dict)
    candidates: dict[tuple[str, int], Candidate] = field(default_factory=dict)
    best: Candidate | None = None
    best_score: float | None = None
    table: MicrodataTable | None = None

    @property
    def n(self) -> int:
        """Number of records."""
        return int(self.ids.size)

    @property
    def factor(self) -> float:
        """This provider's factor f (1 when unset)."""
        f = self.config.providers[self.index].factor
        return 1.0 if f is None else float(f)

    # ------------------------------------------------------------------ setup

    def attach(self, cut: SharedCut) -> None:
        """Start from the shared root cut: one candidate per own QID attribute."""
        self.cut = cut
        for a in self.qid:
            root: Any = 0 if a in self.taxonomies else self._root_interval(a)
            self.node_info[a] = {0: root}
            self._add_candidate(a, 0, np.arange(self.n, dtype=np.int64))

    def _root_interval(self, a: str) -> Interval:
        x = self.codes[a]
        return float(x.min()), float(x.max()), True

    def attribute_gains(self) -> dict[str, float]:
        """gain(Att) of every own column (numeric ones: of their best binary split)."""
        out = {}
        n_classes = len(self.class_labels)
        for a in self.config.providers[self.index].columns:
            if a in self.taxonomies:
                out[a] = scores.attribute_gain(self.codes[a], self.classes, n_classes)
                continue
            x = self.codes[a] if a in self.codes else as_numbers(self.raw[a])
            if x is None:
                codes = pd.factorize(self.raw[a])[0]
                out[a] = scores.attribute_gain(codes, self.classes, n_classes)
                continue
            split = scores.best_threshold(x, self.classes, n_classes)
            out[a] = 0.0 if split is None else split[1]
        return out

    def set_attribute_factors(self) -> None:
        """g(att) over this provider's own columns, as the paper computes it per table."""
        self.g = scores.g_factors(self.attribute_gains())

    # ------------------------------------------------------------- candidates

    def _add_candidate(self, a: str, node: int, records: NDArray[Any]) -> None:
        if records.size == 0:
            return
        info = self.node_info[a][node]
        n_classes = len(self.class_labels)
        level = self.config.sensitivity.level(a)
        mean = self.config.fusion.s_aggregate == "mean"
        if a in self.taxonomies:
            tax = self.taxonomies[a]
            kids = tax.children[info]
            if not kids:
                return
            child_nodes = tax.child_of(info, self.codes[a][records])
            lookup = np.full(len(tax.labels), -1, dtype=np.int64)
            lookup[list(kids)] = np.arange(len(kids))
            child_index = lookup[child_nodes]
            labels = tuple(tax.labels[c] for c in kids)
            child_info: tuple[Any, ...] = tuple(kids)
            total = tax.level_sum(info)
            s = total / tax.leaf_count(info) if mean else float(total)
        else:
            lo, hi, closed = info
            distinct, value_code = self.domains[a]
            if records.size >= distinct.size // 8:  # count over the attribute's domain
                flat = np.bincount(
                    value_code[records] * n_classes + self.classes[records],
                    minlength=distinct.size * n_classes,
                )
                per_value = flat.reshape(distinct.size, n_classes)
            else:  # few records: sort them instead
                distinct, inverse = np.unique(self.codes[a][records], return_inverse=True)
                per_value = np.zeros((distinct.size, n_classes), dtype=np.int64)
                np.add.at(per_value, (inverse.reshape(-1), self.classes[records]), 1)
            split = scores.best_split(distinct, per_value)
            if split is None:
                return
            t = split[0]
            child_index = (self.codes[a][records] >= t).astype(np.int64)
            labels = (interval_label(lo, t, False), interval_label(t, hi, closed))
            child_info = ((lo, t, False), (t, hi, closed))
            present = int((per_value.sum(axis=1) > 0).sum())
            s = float(level) if mean else float(level * present)
        counts = np.zeros((len(labels), n_classes), dtype=np.int64)
        np.add.at(counts, (child_index, self.classes[records]), 1)
        self.candidates[(a, node)] = Candidate(
            a,
            node,
            records,
            child_index,
            labels,
            child_info,
            scores.info_gain(counts),
            scores.gain_ratio(counts),
            s,
        )

    def _minima(self, cand: Candidate) -> dict[int, int]:
        cut = present(self.cut, "the shared cut")
        if cand.minima is None:
            width = len(cand.child_labels)
            out = {}
            for j in cut.templates_with(cand.attribute):
                key = cut.gid[j][cand.records] * width + cand.child_index
                span = cut.gsize[j].size * width
                if span <= 4 * key.size + 4096:
                    sizes = np.bincount(key, minlength=span)
                    out[j] = int(sizes[sizes > 0].min())
                else:
                    out[j] = int(np.unique(key, return_counts=True)[1].min())
            cand.minima = out
        return cand.minima

    def score_round(self) -> int:
        """Score every valid candidate; keep the best; return its quantized score."""
        cut = present(self.cut, "the shared cut")
        self.best, self.best_score = None, None
        best_q = -1
        minima_cache: dict[tuple[int, str], tuple[int, int, int]] = {}
        smallest = {j: cut.smallest(j) for j in range(len(cut.templates))}
        position = {a: i for i, a in enumerate(self.qid)}
        order = sorted(self.candidates.values(), key=lambda c: (position[c.attribute], c.node))
        for cand in order:
            a, node = cand.attribute, cand.node
            tmpl = cut.templates_with(a)
            minima = self._minima(cand)
            if any(minima[j] < cut.templates[j].k for j in tmpl):
                continue
            if self.config.fusion.score == "tds":
                losses = []
                for j in tmpl:
                    if (j, a) not in minima_cache:
                        minima_cache[(j, a)] = cut.value_minima(j, a)
                    first, first_size, others = minima_cache[(j, a)]
                    rest = others if first == node else first_size
                    losses.append(smallest[j] - min(minima[j], rest))
                loss = float(np.mean(losses)) if losses else 0.0
                raw = scores.tds_score(cand.gain, loss)
            else:
                raw = scores.sensitivity_score(cand.ratio, self.factor, self.g.get(a, 1.0), cand.s)
            normalized = raw / self.bound
            q = quantize(normalized)
            if q > best_q:
                best_q, self.best, self.best_score = q, cand, normalized
        return best_q

    # ---------------------------------------------------------- specializing

    def instructions(self) -> Instructions:
        """The instructions of this round's best candidate."""
        cand = self.best
        if cand is None:
            raise AnonlabError(
                f"provider '{self.party_id}' won a round without a candidate: "
                "the parties are out of step"
            )
        cut = present(self.cut, "the shared cut")
        records = tuple(
            cand.records[cand.child_index == c].astype(np.int64)
            for c in range(len(cand.child_labels))
        )
        return Instructions(
            cand.attribute,
            cand.node,
            cut.labels[cand.attribute][cand.node],
            cand.child_labels,
            records,
        )

    def after_apply(self, instr: Instructions, new_ids: list[int]) -> None:
        """Update candidates after the shared cut applied ``instr``."""
        cut = present(self.cut, "the shared cut")
        a = instr.attribute
        if a in self.qid:
            cand = self.candidates.pop((a, instr.parent), None)
            if cand is None:
                raise AnonlabError(
                    f"instructions specialize '{a}' = '{instr.parent_label}', "
                    "not a candidate of its owner: the parties are out of step"
                )
            for c, node in enumerate(new_ids):
                self.node_info[a][node] = cand.child_info[c]
                self._add_candidate(a, node, cand.records[cand.child_index == c])
        moved = np.concatenate(instr.records)
        touched = {j for j in cut.templates_with(a)}
        for b in self.qid:
            if b == a or not any(b in cut.templates[j].qid for j in touched):
                continue
            for node in np.unique(cut.cur[b][moved]).tolist():
                other = self.candidates.get((b, int(node)))
                if other is not None:
                    other.minima = None

    # ---------------------------------------------------------------- output

    def release_columns(self) -> dict[str, NDArray[Any]]:
        """This provider's columns of the fused table: QIDs at the final cut, others raw.

        Identifying columns are left out: they never leave the provider.
        """
        cut = present(self.cut, "the shared cut")
        out: dict[str, NDArray[Any]] = {}
        for c in self.config.released_columns(self.config.providers[self.index]):
            if c in self.qid:
                out[c] = cut.column_labels(c)
            else:
                out[c] = self.raw[c].astype(str).to_numpy(dtype=object)
        return out

    def cut_spec(self, a: str) -> CutSpec:
        """How to generalize new raw values of own attribute ``a`` to the final cut."""
        cut = present(self.cut, "the shared cut")
        labels = cut.labels[a]
        parents = set(cut.parents[a])
        final = [v for v in range(len(labels)) if v not in parents]
        info = self.node_info[a]
        if a in self.taxonomies:
            return CutSpec(a, self.taxonomies[a], {info[v]: labels[v] for v in final}, None)
        leaves = sorted(((info[v][0], labels[v]) for v in final), key=lambda p: p[0])
        return CutSpec(a, None, {}, leaves)


@dataclass(frozen=True)
class CutSpec:
    """The final cut of one attribute, applicable to other tables (e.g. a test set)."""

    attribute: str
    taxonomy: Taxonomy | None
    nodes: dict[int, str]
    intervals: list[tuple[float, str]] | None

    def apply(self, column: pd.Series) -> NDArray[Any]:
        """Generalize raw values of this attribute to the cut."""
        if self.taxonomy is not None:
            leaves = self.taxonomy.leaf_codes(column.to_numpy(), f"column '{self.attribute}'")
            nodes = self.taxonomy.node_of(set(self.nodes), leaves)
            table = np.asarray(
                [self.nodes.get(int(v), SUPPRESSED) for v in range(len(self.taxonomy.labels))],
                dtype=object,
            )
            out: NDArray[Any] = table[nodes]
            return out
        intervals = present(self.intervals, f"the intervals of '{self.attribute}'")
        x = as_numbers(column)
        if x is None:
            raise AnonlabError(
                f"column '{self.attribute}' has a value that is not a number: "
                "give numbers, as in the fused data"
            )
        if len(intervals) == 1:
            return np.full(x.size, intervals[0][1], dtype=object)
        los = np.array([lo for lo, _ in intervals])
        pos = np.clip(np.searchsorted(los, x, side="right") - 1, 0, len(los) - 1)
        labels = np.asarray([lab for _, lab in intervals], dtype=object)
        result: NDArray[Any] = labels[pos]
        return result


# -------------------------------------------------------------------- loading


def as_numbers(column: pd.Series) -> NDArray[Any] | None:
    """The column as finite floats, or ``None`` when a value is not a number."""
    try:
        x = column.astype("float64").to_numpy(dtype=np.float64)
    except (ValueError, TypeError):
        return None
    return x if np.isfinite(x).all() else None


def _sorted_ids(values: pd.Series) -> NDArray[Any]:
    """Row order by id: numerically when every id is a number, else as text."""
    numeric = as_numbers(values)
    if numeric is not None and np.unique(numeric).size == numeric.size:
        order: NDArray[Any] = np.argsort(numeric, kind="stable")
        return order
    text = values.astype(str).to_numpy(dtype=object)
    if numeric is not None:  # equal numbers written differently ("1", "01")
        by_number: NDArray[Any] = np.lexsort((text, numeric))
        return by_number
    return np.argsort(text, kind="stable")


def load_taxonomies(config: FusionConfig, attributes: list[str]) -> dict[str, Taxonomy]:
    """The collapsed taxonomy trees of the categorical ``attributes``."""
    out = {}
    for a in attributes:
        entry = config.taxonomies[a]
        if entry != CONTINUOUS:
            out[a] = build_taxonomy(Hierarchy.from_csv(entry), a, config.sensitivity)
    return out


def root_labels(config: FusionConfig) -> dict[str, str]:
    """Label of every QID attribute's root (a continuous attribute's is ``*``)."""
    taxes = load_taxonomies(config, config.qid_attributes)
    return {a: taxes[a].labels[0] if a in taxes else SUPPRESSED for a in config.qid_attributes}


def max_leaves(config: FusionConfig) -> int:
    """The largest leaf count of the configured taxonomy files."""
    counts = [
        len(Hierarchy.from_csv(e).rows) for e in config.taxonomies.values() if e != CONTINUOUS
    ]
    return max(counts, default=1)


def provider_roles(config: FusionConfig, index: int) -> tuple[dict[str, Role], list[str]]:
    """The role of every column of provider ``index``'s part, and those given none.

    The part is the record id (when the config names one), the provider's
    columns and the class. The roles are those the run's report gives
    (:func:`anonlab.fusion.roles.fusion_roles`):

    * its template columns are quasi-identifiers;
    * the record id is identifying (never released), or insensitive with
      ``keep_id`` (released by that explicit choice);
    * the class is **sensitive**: every fusion releases it as it is, it is the
      attribute the fused table is meant to predict, and the release's risk
      section measures its l-diversity and t-closeness as a sensitive
      attribute; naming it in ``[fusion] insensitive`` makes it insensitive;
    * its other columns take the role their ``[fusion]`` or own lists give
      (identifying before sensitive before insensitive, should a list
      contradict another: :func:`~anonlab.fusion.roles.fusion_roles` refuses
      that before a run); a column named nowhere is insensitive and returned
      as given none (``other``; a run refuses it unless ``other`` is set).
    """
    party = config.providers[index]
    qid = set(config.qid_attributes)
    named = {
        name: {*(c for c in shared if c in party.columns), *own}
        for (name, shared), own in zip(
            config.fusion.named().items(), party.named().values(), strict=True
        )
    }
    roles: dict[str, Role] = {}
    unnamed: list[str] = []
    for column in party.columns:
        role = Role.QUASI if column in qid else _named_role(column, named)
        if role is None:
            role = Role.INSENSITIVE
            unnamed.append(column)
        roles[column] = role
    id_col, class_col = config.fusion.id, config.class_column
    if id_col and id_col not in qid:
        roles[id_col] = Role.INSENSITIVE if config.fusion.keep_id else Role.IDENTIFYING
    if class_col not in qid:
        insensitive = class_col in config.fusion.insensitive
        roles[class_col] = Role.INSENSITIVE if insensitive else Role.SENSITIVE
    return roles, [c for c in unnamed if c not in (id_col, class_col)]


def _named_role(column: str, named: dict[str, set[str]]) -> Role | None:
    """The role the role lists give ``column`` (the strictest when several do), or ``None``."""
    for name in ("identifying", "sensitive", "insensitive"):
        if column in named[name]:
            return Role(name)
    return None


def _source(config: FusionConfig, index: int, in_memory: bool) -> str:
    """How messages name provider ``index``: by id, with its file when read from it."""
    party = config.providers[index]
    return f"provider '{party.id}'" if in_memory else f"provider '{party.id}' ({party.file})"


def _check_part(frame: pd.DataFrame, config: FusionConfig, index: int, source: str) -> None:
    """The provider's frame has its id, its columns and the class, and every id once."""
    party = config.providers[index]
    id_col, class_col = config.fusion.id, config.class_column
    needed = [class_col, *party.columns] + ([id_col] if id_col else [])
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise AnonlabError(
            f"{source} has no column '{missing[0]}': its file has "
            f"{', '.join(map(str, frame.columns))}; fix columns or the file"
        )
    if id_col:
        dup = frame[id_col].duplicated()
        if dup.any():
            raise AnonlabError(
                f"{source}: record id '{frame[id_col][dup].iloc[0]}' appears "
                f"twice in column '{id_col}': ids must be unique"
            )


def _kinds(config: FusionConfig, index: int) -> tuple[list[str], list[str]]:
    """Provider ``index``'s template columns: those with a taxonomy file, the continuous ones."""
    party = config.providers[index]
    qid = [c for c in party.columns if c in config.qid_attributes]
    continuous = [c for c in qid if config.taxonomies.get(c) == CONTINUOUS]
    return [c for c in qid if c not in continuous], continuous


def provider_table(
    config: FusionConfig,
    index: int,
    frame: pd.DataFrame | None = None,
) -> MicrodataTable:
    """Provider ``index``'s part of the data as the one table model.

    Reads the provider's ``file`` (with its reading options), or takes
    ``frame`` as text (``frame.astype(str)``, as a file reads); keeps the
    record id, the provider's columns and the class, in the frame's order, and
    gives each its role (:func:`provider_roles`). The template columns with a
    taxonomy file are nominal; the ``"continuous"`` ones numeric, read by the
    exact rule (``numbers="exact"``: Arrow's correctly rounded parse, the same
    double that Python's ``float`` gives a decimal text). Text Arrow does not
    parse but ``float`` does (surrounding spaces, ``1_000``) is read by
    ``float``, as fusion always read it; a value that is no finite number is
    refused naming the column and the value. Rows stay in the frame's order
    (:func:`load_provider` sorts them by id).
    """
    source = _source(config, index, frame is not None)
    if frame is None:
        party = config.providers[index]
        frame = read_table(present(party.file, f"provider {index}'s file"), **party.read_options())
    else:
        frame = frame.astype(str)
    _check_part(frame, config, index, source)
    roles, unnamed = provider_roles(config, index)
    part = frame[[c for c in frame.columns if c in roles]]
    nominal, continuous = _kinds(config, index)

    def build(data: pd.DataFrame) -> MicrodataTable:
        return MicrodataTable.from_roles(
            data,
            roles,
            nominal=nominal,
            by_other=unnamed,
            numbers="exact",
            allow_constant=True,
            what=source,
        )

    try:
        return build(part)
    except AnonlabError:
        floats = _python_numbers(part, continuous, source)
        if floats is part:
            raise
        return build(floats)


def _python_numbers(frame: pd.DataFrame, columns: list[str], source: str) -> pd.DataFrame:
    """``frame`` with ``columns`` as Python's ``float`` reads them, or itself when none is read.

    A column with a value that is no finite number is refused naming that value.
    """
    out = frame
    for a in columns:
        numbers = as_numbers(frame[a])
        if numbers is None:
            numeric = pd.to_numeric(frame[a], errors="coerce")
            bad = frame[a][numeric.isna() | ~np.isfinite(numeric)].iloc[0]
            raise AnonlabError(
                f"{source}: continuous column '{a}' has the non-numeric "
                f"value '{bad}': give numbers or a taxonomy file"
            )
        if out is frame:
            out = frame.copy()
        out[a] = numbers
    return out


def check_provider_table(
    config: FusionConfig, index: int, table: MicrodataTable, parameter: str = "frame"
) -> None:
    """Refuse a table that says something else of provider ``index``'s part than the config.

    Its frame must hold the part (:func:`provider_table`); each column of the
    part must have the role :func:`provider_roles` gives it (a column the
    config gives no role may have any role but quasi-identifier); the
    continuous template columns must be numeric, read by the exact rule, the
    ones with a taxonomy file categorical.
    """
    source = _source(config, index, True)
    _check_part(table.frame, config, index, source)
    roles, unnamed = provider_roles(config, index)
    for column, role in roles.items():
        has = table.roles.get(column)
        if has != role and not (column in unnamed and has != Role.QUASI):
            shown = "no role" if has is None else ROLE_NAMES[has]
            raise AnonlabError(
                f"{source}: the table gives column '{column}' {shown}, the fusion config "
                f"{ROLE_NAMES[role]}: build the table with provider_table(config, {index}, frame)",
                parameter=parameter,
            )
    nominal, continuous = _kinds(config, index)
    if continuous and table.numbers != "exact":
        raise AnonlabError(
            f"{source}: the table read its numbers by rule '{table.numbers}', "
            "fusion by rule 'exact': build it with numbers='exact'",
            parameter=parameter,
        )
    for column in continuous:
        if column not in table.numeric.names:
            raise AnonlabError(
                f"{source}: continuous column '{column}' is not numeric in the "
                "table: make it a numeric quasi-identifier",
                parameter=parameter,
            )
    categorical = {*table.nominal, *table.ordinal}
    for column in nominal:
        if column not in categorical:
            raise AnonlabError(
                f"{source}: column '{column}' has a taxonomy file but is not "
                "categorical in the table: make it nominal",
                parameter=parameter,
            )


def load_provider(
    config: FusionConfig,
    index: int,
    frame: pd.DataFrame | MicrodataTable | None = None,
    *,
    parameter: str = "frame",
) -> ProviderState:
    """Load provider ``index``'s part into its state: from its file, ``frame``, or a table.

    Without ``frame`` the provider's file is read; a DataFrame is taken as
    text; both become the provider's :class:`~anonlab.table.MicrodataTable`
    (:func:`provider_table`). A given ``MicrodataTable`` is checked against
    the config (:func:`check_provider_table`; a disagreement is an
    :class:`AnonlabError` naming ``parameter``) and used as it is. The state
    sorts the records by id and takes the continuous columns' numbers from
    ``table.numeric``, the other template columns' codes from their taxonomy.
    """
    if isinstance(frame, MicrodataTable):
        check_provider_table(config, index, frame, parameter)
        table = frame
    else:
        table = provider_table(config, index, frame)
    return _state(config, index, table, _source(config, index, frame is not None))


def _state(config: FusionConfig, index: int, table: MicrodataTable, source: str) -> ProviderState:
    """The provider's state of ``table``: records in id order, codes per template column."""
    party = config.providers[index]
    id_col, class_col = config.fusion.id, config.class_column
    text = table.frame.astype(str)
    order: NDArray[Any] = np.arange(table.n)
    if id_col:
        order = _sorted_ids(text[id_col])
        text = text.iloc[order].reset_index(drop=True)
        ids = text[id_col].to_numpy()
    else:
        ids = np.arange(table.n).astype(str)
    class_labels, classes = np.unique(text[class_col].to_numpy(), return_inverse=True)
    templates, _ = config.effective_templates()
    qid = tuple(c for c in party.columns if c in config.qid_attributes)
    taxonomies = load_taxonomies(config, list(qid))
    codes: dict[str, NDArray[Any]] = {}
    domains: dict[str, tuple[NDArray[Any], NDArray[Any]]] = {}
    for a in qid:
        if a in taxonomies:
            codes[a] = taxonomies[a].leaf_codes(text[a], source)
        else:
            numbers = np.ascontiguousarray(
                table.numeric.values[order, table.numeric.names.index(a)]
            )
            codes[a] = numbers
            distinct, inverse = np.unique(numbers, return_inverse=True)
            domains[a] = (distinct, inverse.reshape(-1).astype(np.int64))
    bound = scores.score_bound(
        config.fusion.score,
        config.fusion.s_aggregate,
        table.n,
        len(class_labels),
        max_leaves(config),
    )
    return ProviderState(
        index=index,
        party_id=party.id,
        config=config,
        templates=tuple(Template(tuple(t.qid), t.k) for t in templates),
        ids=ids,
        classes=classes.astype(np.int64),
        class_labels=tuple(map(str, class_labels)),
        raw=text,
        qid=qid,
        codes=codes,
        taxonomies=taxonomies,
        domains=domains,
        bound=bound,
        source=source,
        table=table,
    )
