"""The fusion configuration (``fusion.toml``), shared by ``fuse`` and ``party``.

One TOML file names the parties, the anonymity templates, the taxonomies, the
score and the sensitivity settings. Every party runs with the same file (its
own ``file`` entry aside), and :meth:`FusionConfig.shared_digest` hashes what
they must agree on so a networked run can refuse parties whose settings differ.

Layout::

    [fusion]
    class = "salary-class"      # class attribute, in every provider's file
    id = "id"                   # record-id column in every provider file ("" = row number)
    score = "sensitivity"       # or "tds": InfoGain / (AnonyLoss + 1)
    s_aggregate = "sum"         # or "mean": s(v) over the leaf levels under v
    keep_id = false
    identifying = []            # roles of columns in no template (see anonlab.fusion.roles)
    sensitive = []              # (the class is sensitive unless named insensitive)
    insensitive = []
    # other = "insensitive"     # release every column given no role unchanged

    [[templates]]               # <QID_j, k_j>, as many as needed
    qid = ["age", "workclass"]
    k = 100

    [taxonomies]                # ARX-layout hierarchy CSV, or "continuous"
    workclass = "hierarchy_workclass.csv"
    age = "continuous"

    [sensitivity]               # leaf levels: 1 most severe .. 5 ordinary
    default = 4
    attributes = { education = 3 }
    values = { native-country = { United-States = 5 } }

    [[parties]]
    id = "provider-a"
    role = "provider"           # or "helper" (input-less, for the secure max)
    host = "127.0.0.1"
    port = 17001
    mpc_port = 18001
    file = "provider_a.csv"     # any source anonlab.io.read_table reads
    columns = ["age", "workclass"]
    factor = 0.5
    insensitive = ["education"] # roles of this provider's own columns, as under [fusion]
    # delimiter, sheet, table, query: optional, passed to read_table for this file

    [tls]                       # free-form table read by the party transport

Relative paths (``file``, taxonomy files, and the ``ca``/``cert``/``key`` or
``*_file`` entries of ``[tls]`` and of each party) are resolved against the
TOML file's folder. Party entries and ``[tls]`` accept extra keys, which the
networked transport reads.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from anonlab.errors import AnonlabError
from anonlab.paths import PathLike
from anonlab.settings import read_toml, resolve_paths, settings_error, split_names

CONTINUOUS = "continuous"
"""The taxonomy entry of a numeric attribute, split at information-gain-best thresholds."""

SENSITIVITY_LEVELS = (1, 2, 3, 4, 5)
"""Leaf sensitivity levels: 1 is the most severe, 5 ordinary."""

_PATH_KEYS = {"file", "ca", "cert", "key"}

MIN_PORT, MAX_PORT = 1, 65535
"""The TCP ports a party's ``port`` and ``mpc_port`` may name."""

ROLE_LISTS = ("identifying", "sensitive", "insensitive")
"""The role lists of ``[fusion]`` and of each party (quasi-identifiers are the template columns)."""


class RoleLists(BaseModel):
    """Roles given to columns by name: ``[fusion]`` (any provider's column) or one party.

    A column in some template is a quasi-identifier; every other column needs
    one of these roles (:func:`anonlab.fusion.roles.fusion_roles`):
    ``identifying`` columns never leave their provider, ``sensitive`` and
    ``insensitive`` ones are released as they are, and ``other =
    "insensitive"`` releases the columns given no role as they are.
    """

    identifying: list[str] = []
    sensitive: list[str] = []
    insensitive: list[str] = []
    other: Literal["insensitive"] | None = None

    @field_validator("identifying", "sensitive", "insensitive", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        """``"a,b"`` or ``["a", "b,c"]`` to a list of names."""
        return split_names(value) if isinstance(value, str | list | tuple) else value

    def named(self) -> dict[str, list[str]]:
        """The role lists by role name."""
        return {
            "identifying": self.identifying,
            "sensitive": self.sensitive,
            "insensitive": self.insensitive,
        }


class FusionSettings(RoleLists):
    """The ``[fusion]`` table."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    class_column: str = Field(alias="class", min_length=1)
    id: str = "id"
    score: Literal["sensitivity", "tds"] = "sensitivity"
    s_aggregate: Literal["sum", "mean"] = "sum"
    keep_id: bool = False


class TemplateConfig(BaseModel):
    """One anonymity template <QID_j, k_j>."""

    model_config = ConfigDict(extra="forbid")

    qid: list[str] = Field(min_length=1)
    k: int

    @field_validator("k")
    @classmethod
    def _k_positive(cls, k: int) -> int:
        if k < 1:
            raise ValueError(f"k must be at least 1 (got {k})")
        return k


class SensitivityConfig(BaseModel):
    """Leaf sensitivity levels (1 most severe .. 5 ordinary)."""

    model_config = ConfigDict(extra="forbid")

    default: int = 4
    attributes: dict[str, int] = {}
    values: dict[str, dict[str, int]] = {}

    def level(self, attribute: str, value: str | None = None) -> int:
        """The level of one leaf value (or of an attribute's leaves in general)."""
        if value is not None and value in self.values.get(attribute, {}):
            return self.values[attribute][value]
        return self.attributes.get(attribute, self.default)

    def all_levels(self) -> list[tuple[str, int]]:
        """Every configured level with where it was set, for validation."""
        out = [("sensitivity.default", self.default)]
        out += [(f"sensitivity.attributes.{a}", v) for a, v in self.attributes.items()]
        for a, table in self.values.items():
            out += [(f"sensitivity.values.{a}.{val}", lvl) for val, lvl in table.items()]
        return out


class PartyConfig(RoleLists):
    """One party: a provider with its own file and columns, or an input-less helper.

    Its role lists (:class:`RoleLists`) name its own columns only.
    """

    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1)
    role: Literal["provider", "helper"] = "provider"
    host: str = "127.0.0.1"
    port: int | None = None
    mpc_port: int | None = None
    file: str | None = None
    columns: list[str] = []
    factor: float | None = None
    delimiter: str | None = None
    sheet: str | None = None
    table: str | None = None
    query: str | None = None

    def read_options(self) -> dict[str, Any]:
        """The reading options given for ``file`` (delimiter, sheet, table, query), as keywords
        of :func:`anonlab.io.read_table`."""
        given = {
            "delimiter": self.delimiter,
            "sheet": self.sheet,
            "table": self.table,
            "query": self.query,
        }
        return {k: v for k, v in given.items() if v is not None}


class FusionConfig(BaseModel):
    """A validated ``fusion.toml`` (see the module docstring for the layout)."""

    model_config = ConfigDict(extra="forbid")

    fusion: FusionSettings
    templates: list[TemplateConfig] = Field(min_length=1)
    taxonomies: dict[str, str] = {}
    sensitivity: SensitivityConfig = SensitivityConfig()
    parties: list[PartyConfig]
    tls: dict[str, Any] = {}
    source: str = "<memory>"

    @property
    def class_column(self) -> str:
        """The class attribute shared by every provider."""
        return self.fusion.class_column

    @property
    def providers(self) -> list[PartyConfig]:
        """Provider parties in order; a provider's index is its position here."""
        return [p for p in self.parties if p.role == "provider"]

    @property
    def helpers(self) -> list[PartyConfig]:
        """Input-less helper parties (they join only the secure max)."""
        return [p for p in self.parties if p.role == "helper"]

    @property
    def qid_attributes(self) -> list[str]:
        """Every attribute of some template, in provider-then-column order."""
        used = {a for t in self.templates for a in t.qid}
        return [c for p in self.providers for c in p.columns if c in used]

    def identifying(self, party: PartyConfig) -> set[str]:
        """``party``'s columns named identifying ([fusion] or its own entry) and in no template.

        They never leave the provider: the fused table lacks them. (A template
        column named identifying is refused by
        :func:`anonlab.fusion.roles.fusion_roles`; the engine keeps it.)
        """
        named = {*self.fusion.identifying, *party.identifying}
        used = {a for t in self.templates for a in t.qid}
        return {c for c in party.columns if c in named and c not in used}

    def released_columns(self, party: PartyConfig) -> list[str]:
        """``party``'s columns in the fused table, in configuration order (identifying ones
        left out)."""
        dropped = self.identifying(party)
        return [c for c in party.columns if c not in dropped]

    def owner(self, attribute: str) -> int:
        """Index of the provider holding ``attribute``."""
        for i, p in enumerate(self.providers):
            if attribute in p.columns:
                return i
        raise AnonlabError(
            f"no provider lists column '{attribute}': add it to one provider's columns"
        )

    def party(self, party_id: str) -> PartyConfig:
        """The party named ``party_id``."""
        for p in self.parties:
            if p.id == party_id:
                return p
        names = ", ".join(p.id for p in self.parties)
        raise AnonlabError(f"no party '{party_id}' in {self.source}: choose one of {names}")

    def provider_index(self, party_id: str) -> int | None:
        """Provider index of ``party_id`` (``None`` for a helper)."""
        for i, p in enumerate(self.providers):
            if p.id == party_id:
                return i
        self.party(party_id)
        return None

    def effective_templates(self) -> tuple[list[TemplateConfig], list[str]]:
        """Templates after dropping covered ones, and a note per dropped template.

        A template <Q, k> is covered by <Q', k'> when Q is a subset of Q' and
        k <= k': every group of Q is a union of groups of Q', so it holds
        whenever <Q', k'> does. Of identical templates the first is kept.
        """
        kept: list[TemplateConfig] = []
        notes: list[str] = []
        for i, t in enumerate(self.templates):
            cover = None
            for j, u in enumerate(self.templates):
                if i == j or not set(t.qid) <= set(u.qid) or t.k > u.k:
                    continue
                identical = set(t.qid) == set(u.qid) and t.k == u.k
                if identical and j > i:
                    continue
                cover = j
                break
            if cover is None:
                kept.append(t)
            else:
                u = self.templates[cover]
                notes.append(
                    f"template {i + 1} <{', '.join(t.qid)}; k={t.k}> is covered by "
                    f"template {cover + 1} <{', '.join(u.qid)}; k={u.k}> and dropped"
                )
        return kept, notes

    def taxonomy_text(self, attribute: str) -> str:
        """The taxonomy file's text, or ``"continuous"``."""
        entry = self.taxonomies[attribute]
        if entry == CONTINUOUS:
            return CONTINUOUS
        path = Path(entry)
        if not path.exists():
            raise AnonlabError(
                f"taxonomy file '{path}' for '{attribute}' does not exist: "
                "check the path in [taxonomies]"
            )
        return path.read_text(encoding="utf-8")

    def shared_digest(self) -> str:
        """SHA-256 of everything all parties must agree on.

        Covers the templates, the class, id and score settings, the taxonomy
        contents (not their paths), the sensitivity levels, the column roles
        and the party list (ids, roles, addresses, columns, factors and role
        lists), but not any party's file.
        """
        shared = {
            "fusion": self.fusion.model_dump(by_alias=True),
            "templates": [t.model_dump() for t in self.templates],
            "taxonomies": {
                a: hashlib.sha256(self.taxonomy_text(a).encode()).hexdigest()
                for a in sorted(self.taxonomies)
            },
            "sensitivity": self.sensitivity.model_dump(),
            "parties": [
                {
                    "id": p.id,
                    "role": p.role,
                    "host": p.host,
                    "port": p.port,
                    "mpc_port": p.mpc_port,
                    "columns": p.columns,
                    "factor": p.factor,
                    **p.named(),
                    "other": p.other,
                }
                for p in self.parties
            ],
        }
        text = json.dumps(shared, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def validate_semantics(self, min_providers: int = 2) -> None:
        """Check what the schema cannot: columns, owners, taxonomies, factors, levels."""
        providers = self.providers
        if len(providers) < min_providers:
            raise AnonlabError(
                f"{self.source} has {len(providers)} provider(s): fusion needs at least "
                f'{min_providers}; add [[parties]] entries with role = "provider"'
            )
        if self.fusion.id == self.class_column:
            raise AnonlabError(
                f"fusion.id and fusion.class both name column '{self.fusion.id}':"
                ' the record id needs its own column (or id = "" for row '
                "numbers)"
            )
        self._check_party_ids()
        self._check_ports()
        owners = self._column_owners()
        self._check_helpers()
        self._check_templates(owners)
        self._check_taxonomies(owners)
        self._check_sensitivity(owners)
        self._check_factors()

    def _check_party_ids(self) -> None:
        seen_ids: set[str] = set()
        for p in self.parties:
            if p.id in seen_ids:
                raise AnonlabError(f"party id '{p.id}' is used twice: give every party its own id")
            seen_ids.add(p.id)

    def _check_ports(self) -> None:
        """Every ``port`` and ``mpc_port`` given is a TCP port, 1 to 65535 (refused when the
        config is read, not after a connect timeout)."""
        for p in self.parties:
            for field in ("port", "mpc_port"):
                value = getattr(p, field)
                if value is not None and not MIN_PORT <= value <= MAX_PORT:
                    raise AnonlabError(
                        f"party '{p.id}': {field} = {value} is not a TCP port: "
                        f"give a free port from {MIN_PORT} to {MAX_PORT}"
                    )

    def _column_owners(self) -> dict[str, str]:
        """Column -> the provider listing it; every provider has a file and distinct columns."""
        owners: dict[str, str] = {}
        for p in self.providers:
            if p.file is None:
                raise AnonlabError(f"provider '{p.id}' has no file: give file = \"...\"")
            if not p.columns:
                raise AnonlabError(f"provider '{p.id}' lists no columns: give columns = [...]")
            if len(set(p.columns)) != len(p.columns):
                twice = next(c for c in p.columns if p.columns.count(c) > 1)
                raise AnonlabError(f"provider '{p.id}' lists column '{twice}' twice: list it once")
            for c in p.columns:
                if c in owners:
                    raise AnonlabError(
                        f"column '{c}' is owned by two providers ('{owners[c]}' "
                        f"and '{p.id}'): list it under one provider only"
                    )
                if c in (self.class_column, self.fusion.id):
                    raise AnonlabError(
                        f"provider '{p.id}' lists '{c}', the shared class/id "
                        "column: leave it out of columns (every file has it)"
                    )
                owners[c] = p.id
        return owners

    def _check_helpers(self) -> None:
        for h in self.helpers:
            if h.columns or h.file:
                raise AnonlabError(
                    f"helper '{h.id}' has a file or columns: helpers hold no "
                    'data; make it role = "provider" or remove them'
                )

    def _check_templates(self, owners: Mapping[str, str]) -> None:
        for i, t in enumerate(self.templates, start=1):
            for a in t.qid:
                if a not in owners:
                    raise AnonlabError(
                        f"template {i} names column '{a}' that no provider "
                        "lists: add it to a provider's columns or fix the name"
                    )
                if a not in self.taxonomies:
                    raise AnonlabError(
                        f"quasi-identifier '{a}' has no taxonomy: add "
                        f'{a} = "hierarchy.csv" (or "continuous") to '
                        "[taxonomies]"
                    )
            if len(set(t.qid)) != len(t.qid):
                raise AnonlabError(f"template {i} names a column twice: list each once")

    def _check_taxonomies(self, owners: Mapping[str, str]) -> None:
        for a, entry in self.taxonomies.items():
            if a not in owners:
                raise AnonlabError(
                    f"taxonomy given for '{a}', which no provider lists: "
                    "remove it or add the column to a provider"
                )
            if entry != CONTINUOUS and not Path(entry).exists():
                raise AnonlabError(
                    f"taxonomy file '{entry}' for '{a}' does not exist: "
                    "check the path in [taxonomies]"
                )

    def _check_sensitivity(self, owners: Mapping[str, str]) -> None:
        for where, lvl in self.sensitivity.all_levels():
            if lvl not in SENSITIVITY_LEVELS:
                raise AnonlabError(
                    f"{where} = {lvl}: sensitivity levels are 1 (most severe) to 5 (ordinary)"
                )
        for table, names in (
            ("attributes", self.sensitivity.attributes),
            ("values", self.sensitivity.values),
        ):
            for a in names:
                if a not in owners:
                    raise AnonlabError(
                        f"sensitivity.{table} names column '{a}' that no "
                        "provider lists: fix the name or remove it"
                    )
        for a in self.sensitivity.values:
            if self.taxonomies.get(a, CONTINUOUS) == CONTINUOUS:
                raise AnonlabError(
                    f"sensitivity.values.{a}: '{a}' has no taxonomy file, so "
                    "per-value levels cannot apply; use sensitivity.attributes"
                )

    def _check_factors(self) -> None:
        """score = "sensitivity": every provider has a factor in (0, 1], summing to 1."""
        if self.fusion.score != "sensitivity":
            return
        providers = self.providers
        missing = [p.id for p in providers if p.factor is None]
        if missing:
            raise AnonlabError(
                f"provider '{missing[0]}' has no factor: score = "
                '"sensitivity" needs factor = ... per provider '
                "(summing to 1)"
            )
        factors = [p.factor for p in providers if p.factor is not None]
        if any(not 0 < f <= 1 for f in factors):
            raise AnonlabError("provider factors must lie in (0, 1]: fix the factor values")
        total = math.fsum(factors)
        if abs(total - 1.0) > 1e-9:
            raise AnonlabError(
                f"provider factors sum to {total:g}, not 1: adjust them so they sum to 1"
            )


def _resolve_table(table: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """A party entry or ``[tls]`` with its path entries (``file``, ``ca``, ``cert``, ``key``,
    ``*_file``) resolved against ``base`` by the shared rule."""
    keys = [k for k in table if k in _PATH_KEYS or k.endswith("_file")]
    return resolve_paths(dict(table), base, keys)


def resolve_config_paths(data: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """Make the relative paths of a raw config relative to ``base``.

    The shared rule of every settings file (:func:`anonlab.settings.resolve_paths`):
    a relative path is relative to ``base``; absolute paths and URLs stay.
    Taxonomy entries that are ``"continuous"`` are not paths.
    """
    out = dict(data)
    if isinstance(out.get("taxonomies"), Mapping):
        taxonomies = dict(out["taxonomies"])
        files = [a for a, v in taxonomies.items() if v != CONTINUOUS]
        out["taxonomies"] = resolve_paths(taxonomies, base, files)
    if isinstance(out.get("parties"), list):
        out["parties"] = [
            _resolve_table(p, base) if isinstance(p, Mapping) else p for p in out["parties"]
        ]
    if isinstance(out.get("tls"), Mapping):
        out["tls"] = _resolve_table(out["tls"], base)
    return out


def config_from_dict(
    data: Mapping[str, Any],
    base: PathLike = ".",
    source: str = "<memory>",
    min_providers: int = 2,
) -> FusionConfig:
    """Validate a raw config (as read from TOML); relative paths resolve against ``base``.

    The first problem becomes one :class:`AnonlabError` that starts with
    ``source`` and names the setting (:func:`anonlab.settings.settings_error`).
    """
    resolved = resolve_config_paths(data, Path(base))
    resolved["source"] = source
    try:
        config = FusionConfig.model_validate(resolved)
    except ValidationError as exc:
        raise AnonlabError(f"{source}: {settings_error(exc)}") from None
    config.validate_semantics(min_providers=min_providers)
    return config


def load_config(
    path: PathLike,
    *,
    overrides: Mapping[str, Any] | None = None,
    roles: Mapping[str, Sequence[str]] | None = None,
) -> FusionConfig:
    """Read and validate ``fusion.toml``; paths in it are relative to its folder.

    ``overrides`` replace entries of its ``[fusion]`` table (e.g. ``score``,
    ``keep_id``, ``other``); ``None`` values are ignored. ``roles`` maps
    ``identifying``, ``sensitive`` or ``insensitive`` to column names added to
    that list of ``[fusion]``.
    """
    p = Path(path)
    data = read_toml(p)
    if "source" in data:
        raise AnonlabError(f"{p}: source is not a known setting: check the spelling")
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    given.update(_added_roles(data.get("fusion"), roles or {}))
    if given:
        fusion = data.get("fusion", {})
        data["fusion"] = {**fusion, **given} if isinstance(fusion, Mapping) else fusion
    return config_from_dict(data, p.parent, source=str(p))


def _added_roles(fusion: Any, roles: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """``[fusion]``'s role lists with the names of ``roles`` appended (only lists given)."""
    out: dict[str, Any] = {}
    table = fusion if isinstance(fusion, Mapping) else {}
    for name, extra in roles.items():
        if name not in ROLE_LISTS:
            raise AnonlabError(f"roles: '{name}' is not a role list: use {', '.join(ROLE_LISTS)}")
        if not extra:
            continue
        have = table.get(name, [])
        out[name] = [*split_names(have), *extra] if isinstance(have, str | list) else have
    return out
