"""Datasets: a table, the role of every column, and its quasi-identifiers encoded.

Every column has exactly one :class:`Role`. Quasi-identifying columns are
dictionary-encoded to integer codes; their hierarchy becomes one integer lookup
array per level (``level_codes[level][value_code] -> group code``), so the
search works on integer arrays only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.hierarchy import Hierarchy
from anonlab.paths import PathLike


class Role(StrEnum):
    """What a column is to the privacy model."""

    IDENTIFYING = "identifying"  # direct identifiers: never released
    QUASI = "quasi"  # quasi-identifiers: generalized
    SENSITIVE = "sensitive"  # released as is; the attribute to protect
    INSENSITIVE = "insensitive"  # released as is


#: each role as messages name it (``quasi`` is the role's value, not a word a user gives)
ROLE_NAMES: dict[Role, str] = {
    Role.IDENTIFYING: "identifying",
    Role.QUASI: "quasi-identifier",
    Role.SENSITIVE: "sensitive",
    Role.INSENSITIVE: "insensitive",
}


@dataclass(frozen=True)
class EncodedQI:
    """One quasi-identifier: codes per row and its hierarchy as lookup arrays."""

    name: str
    hierarchy: Hierarchy
    values: tuple[str, ...]  # data dictionary: code -> original value
    codes: NDArray[Any]  # (n,) int32 code of each row's value
    level_codes: tuple[NDArray[Any], ...]  # level -> (len(values),) group code
    level_labels: tuple[tuple[str, ...], ...]  # level -> group code -> label
    frequencies: NDArray[Any]  # (len(values),) count of each value in the data

    @property
    def height(self) -> int:
        """Height of the hierarchy (the top level's number)."""
        return self.hierarchy.height

    def cardinality(self, level: int) -> int:
        """Number of distinct groups at ``level`` among the data's values."""
        return len(self.level_labels[level])

    def lift(self, lower: int, upper: int) -> NDArray[Any]:
        """Map group codes at ``lower`` to group codes at ``upper`` (nested hierarchies)."""
        out = np.zeros(self.cardinality(lower), dtype=np.int32)
        out[self.level_codes[lower]] = self.level_codes[upper]
        return out


@dataclass(frozen=True)
class EncodedSensitive:
    """One sensitive attribute: a code per row and its dictionary, for the privacy models.

    ``values`` are the distinct values in order of first appearance (a missing
    value is the empty string); ``frequencies`` count each value over the
    table's records.
    """

    name: str
    values: tuple[str, ...]
    codes: NDArray[Any]  # (n,) int32
    frequencies: NDArray[Any]  # (len(values),) int64


def encode_sensitive(name: str, column: pd.Series) -> EncodedSensitive:
    """Dictionary-encode a sensitive column (values as text, missing as the empty string)."""
    codes, uniques = pd.factorize(as_text(column), sort=False)
    values = tuple(str(u) for u in uniques)
    return EncodedSensitive(
        name=name,
        values=values,
        codes=codes.astype(np.int32),
        frequencies=np.bincount(codes, minlength=len(values)).astype(np.int64),
    )


def as_text(column: pd.Series) -> pd.Series:
    """A column's values as text, a missing value (null, NaN) as the empty string.

    A categorical of texts with nothing missing (a table read with
    ``strings="dictionary"``) is text already and is returned as it is:
    :func:`pandas.factorize` numbers it in the same order of first appearance,
    on its codes.
    """
    dtype = column.dtype
    if (
        isinstance(dtype, pd.CategoricalDtype)
        and not column.isna().any()
        and pd.api.types.infer_dtype(dtype.categories, skipna=False) == "string"
    ):
        return column
    return column.astype(str).where(column.notna(), "")


def _check_in_hierarchy(
    name: str, values: tuple[str, ...], hierarchy: Hierarchy, rows: list[tuple[str, pd.Series]]
) -> None:
    """Raise the one-line error naming the first of ``values`` missing from ``hierarchy``.

    ``rows`` are the texts the values come from with the word naming each
    (``"data"``, ``"population"``): the message names the first row holding
    the value.
    """
    missing = hierarchy.missing(values)
    if not missing:
        return
    where = ""
    for word, text in rows:
        hits = np.flatnonzero(text.to_numpy() == missing[0])
        if hits.size:
            where = f"{word} row {int(hits[0]) + 1}"
            break
    more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
    if missing[0] != missing[0].strip() and missing[0].strip() in hierarchy:
        raise AnonlabError(
            f"column '{name}': value '{missing[0]}' ({where}){more} has "
            f"surrounding spaces that hierarchy '{hierarchy.source}' does not (its fields "
            "are trimmed): trim the values of the data column"
        )
    raise AnonlabError(
        f"column '{name}': value '{missing[0]}' ({where}){more} is not in "
        f"hierarchy '{hierarchy.source}': add it to the hierarchy file"
    )


def encode_qi(name: str, column: pd.Series, hierarchy: Hierarchy) -> EncodedQI:
    """Dictionary-encode one column and map its hierarchy onto the codes.

    A missing value (null in Parquet or a DataFrame) is the empty string, as an
    empty CSV field reads. Raises :class:`AnonlabError` naming the first value
    missing from the hierarchy.
    """
    text = as_text(column)
    codes, uniques = pd.factorize(text, sort=False)
    values = tuple(str(u) for u in uniques)
    _check_in_hierarchy(name, values, hierarchy, [("data", text)])
    level_codes, level_labels = hierarchy.level_maps(values)
    freqs = np.bincount(codes, minlength=len(values)).astype(np.int64)
    return EncodedQI(
        name=name,
        hierarchy=hierarchy,
        values=values,
        codes=codes.astype(np.int32),
        level_codes=tuple(level_codes),
        level_labels=tuple(tuple(x) for x in level_labels),
        frequencies=freqs,
    )


def encode_qi_with_population(
    name: str, column: pd.Series, population: pd.Series, hierarchy: Hierarchy
) -> tuple[EncodedQI, NDArray[Any]]:
    """Encode a quasi-identifier of a sample and of the population it was drawn from.

    The dictionary holds the population's values in order of first
    appearance (ARX's dictionary when the population is its input table and
    the sample a research subset), then any sample value the population
    lacks. Codes and ``frequencies`` are the sample's; the population's codes
    are returned beside. A value of either missing from the hierarchy raises
    the error :func:`encode_qi` raises, naming a data or population row.
    """
    text = as_text(column)
    ptext = as_text(population)
    pcodes, puniques = pd.factorize(ptext, sort=False)
    values = [str(u) for u in puniques]
    extra = pd.unique(text[~text.isin(set(values))].to_numpy())
    values.extend(str(v) for v in extra)
    dictionary = tuple(values)
    _check_in_hierarchy(name, dictionary, hierarchy, [("data", text), ("population", ptext)])
    codes = pd.Index(dictionary).get_indexer(pd.Index(text))
    level_codes, level_labels = hierarchy.level_maps(dictionary)
    freqs = np.bincount(codes, minlength=len(dictionary)).astype(np.int64)
    encoded = EncodedQI(
        name=name,
        hierarchy=hierarchy,
        values=dictionary,
        codes=codes.astype(np.int32),
        level_codes=tuple(level_codes),
        level_labels=tuple(tuple(x) for x in level_labels),
        frequencies=freqs,
    )
    return encoded, pcodes.astype(np.int32)


#: the only role ``other`` may give the columns no role names
OTHER_ROLES = ("insensitive",)


class RoleError(AnonlabError):
    """Columns that were given no role: one line naming them and how to give them one.

    ``role_parameters`` are the parameters that give roles in the calling
    family (e.g. ``qi``, ``identifying``, ``sensitive``, ``insensitive``);
    the library's message names them, :meth:`for_flags` names the
    command-line flags instead. ``source`` names where the roles come from
    when no parameter gives them (``apply``: the earlier report).
    """

    def __init__(
        self, columns: list[str], role_parameters: tuple[str, ...], source: str | None = None
    ) -> None:
        self.columns = list(columns)
        self.role_parameters = role_parameters
        self.source = source
        super().__init__(self._text(list(role_parameters), "other='insensitive'"))

    def _text(self, givers: list[str], escape: str) -> str:
        plural = len(self.columns) != 1
        names = ", ".join(self.columns)
        them = "them" if plural else "it"
        if self.source is not None or not givers:
            verb = "are" if plural else "is"
            return (
                f"column{'s' if plural else ''} {names} of the table {verb}"
                f" given no role by {self.source or 'the settings'}: give a table with the "
                f"columns it names, or pass {escape} to release {them} unchanged"
            )
        listed = ", ".join(givers[:-1]) + " or " + givers[-1] if len(givers) > 1 else givers[0]
        return (
            f"column{'s' if plural else ''} {names} {'are' if plural else 'is'} given no "
            f"role: name {'each' if plural else 'it'} in {listed}, or pass {escape} to "
            f"release {them} unchanged"
        )

    def for_flags(self, flags: dict[str, str] | None = None) -> str:
        """The message with the command's flags in place of the parameter names."""
        spell = flags or {}
        givers = [spell.get(name, "--" + name.replace("_", "-")) for name in self.role_parameters]
        return self._text(givers, spell.get("other", "--other") + " insensitive")


def _check_other(other: str | None) -> None:
    if other is not None and other not in OTHER_ROLES:
        raise AnonlabError(
            f"other must be 'insensitive' or not given (got {other!r}): it "
            "releases the columns given no role unchanged",
            parameter="other",
        )


@dataclass(frozen=True)
class Roles:
    """The roles a run gives the columns its method does not change (the method's own
    columns, the quasi-identifiers, are given apart): ``identifying`` ones are dropped,
    ``sensitive`` and ``insensitive`` ones released as they are; ``other="insensitive"``
    releases every column named nowhere as it is, else such a column is refused
    (:meth:`assign`). One value carries them from a run's settings to the table model."""

    identifying: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    insensitive: tuple[str, ...] = ()
    other: str | None = None

    def __post_init__(self) -> None:
        _check_other(self.other)
        for name in ("identifying", "sensitive", "insensitive"):
            object.__setattr__(self, name, tuple(str(c) for c in getattr(self, name)))

    @classmethod
    def of(
        cls,
        identifying: Iterable[str] = (),
        sensitive: Iterable[str] = (),
        insensitive: Iterable[str] | None = (),
        other: str | None = None,
    ) -> Roles:
        """The roles given as the public functions take them (``insensitive=None``: none)."""
        return cls(tuple(identifying), tuple(sensitive), tuple(insensitive or ()), other)

    def keywords(self) -> dict[str, Any]:
        """The four keywords of the public constructors (``Dataset.from_frame``,
        ``MicrodataTable.from_frame``)."""
        return {
            "identifying": self.identifying,
            "sensitive": self.sensitive,
            "insensitive": self.insensitive,
            "other": self.other,
        }

    def assign(
        self,
        columns: Iterable[str],
        qi: Iterable[str] = (),
        role_parameters: tuple[str, ...] = ("qi", "identifying", "sensitive", "insensitive"),
    ) -> dict[str, Role]:
        """The role of every column, ``qi`` the method's own (:func:`assign_roles`)."""
        return assign_roles(columns, qi=qi, **self.keywords(), role_parameters=role_parameters)


#: no column named in any role (every column but the method's own then needs ``other``)
NO_ROLES = Roles()


def assign_roles(
    columns: Iterable[str],
    *,
    qi: Iterable[str] = (),
    identifying: Iterable[str] = (),
    sensitive: Iterable[str] = (),
    insensitive: Iterable[str] = (),
    other: str | None = None,
    role_parameters: tuple[str, ...] = ("qi", "identifying", "sensitive", "insensitive"),
) -> dict[str, Role]:
    """The role of every column of a table, each given explicitly (the one rule of every family).

    Each name in ``qi``, ``identifying``, ``sensitive`` and ``insensitive``
    must be a column, and a column gets one role only. A column named in none
    of them is refused with one :class:`RoleError` naming all such columns,
    unless ``other="insensitive"``: then it is insensitive (released as it
    is). ``role_parameters`` are the family's names of the role parameters,
    for the message. Returns column -> role in table order.
    """
    _check_other(other)
    table = [str(c) for c in columns]
    named: dict[str, Role] = {}
    groups: list[tuple[Role, Iterable[str]]] = [
        (Role.QUASI, qi),
        (Role.IDENTIFYING, identifying),
        (Role.SENSITIVE, sensitive),
        (Role.INSENSITIVE, insensitive),
    ]
    for role, names in groups:
        for col in names:
            if col not in table:
                raise AnonlabError(
                    f"unknown column '{col}' (given as {ROLE_NAMES[role]}): the table has "
                    f"{', '.join(table)}"
                )
            if col in named and named[col] != role:
                raise AnonlabError(
                    f"column '{col}' is given two roles ({ROLE_NAMES[named[col]]} and "
                    f"{ROLE_NAMES[role]}):"
                    " give each column one role"
                )
            named[col] = role
    missing = [c for c in table if c not in named]
    if missing and other is None:
        raise RoleError(missing, role_parameters)
    return {c: named.get(c, Role.INSENSITIVE) for c in table}


def without_role(columns: Iterable[str], *named: Iterable[str]) -> list[str]:
    """The columns (in table order) that none of the ``named`` lists name."""
    given = {str(c) for names in named for c in names}
    return [str(c) for c in columns if str(c) not in given]


def released_unchanged(roles: Mapping[str, Role]) -> list[str]:
    """The columns a release holds with their input values: sensitive and insensitive ones."""
    return [c for c, r in roles.items() if r in (Role.SENSITIVE, Role.INSENSITIVE)]


def roles_report(
    roles: Mapping[str, Role], other: str | None, by_other: Iterable[str] = ()
) -> dict[str, Any]:
    """The report's role keys: roles, other, insensitive_by_other and released_unchanged.

    ``by_other`` are the columns that were given no role and are insensitive
    because of ``other``.
    """
    return {
        "roles": {c: r.value for c, r in roles.items()},
        "other": other,
        "insensitive_by_other": list(by_other),
        "released_unchanged": released_unchanged(roles),
    }


@dataclass(frozen=True)
class Dataset:
    """A table with one role per column, its quasi-identifiers and sensitive attributes encoded.

    ``population`` (the delta-presence and population k-map models) holds the
    quasi-identifier codes of a population table, (N, m) int32 in the same
    dictionaries as ``qis``: the table to release is a sample of it.

    A dataset whose rows stay in an engine (a Dask cluster, a Parquet
    dataset read in pieces) is *rowless*: ``frame`` has the table's columns
    and no records, ``records`` counts them and ``base`` is the engine's
    base frequency set (:class:`anonlab.engine.base.BaseFrequencySet`), from
    which the search starts; the codes of ``qis`` and ``sensitive`` are
    empty (:func:`anonlab.lattice.pieces.rowless_dataset`).
    """

    frame: pd.DataFrame
    roles: Mapping[str, Role]
    qis: tuple[EncodedQI, ...]
    source: str | None = None
    sensitive: tuple[EncodedSensitive, ...] = ()
    population: NDArray[Any] | None = None
    records: int | None = None
    base: Any = None

    @property
    def n(self) -> int:
        """Number of records."""
        return int(self.frame.shape[0]) if self.records is None else int(self.records)

    @property
    def rowless(self) -> bool:
        """Whether the rows stay in an engine (only the base frequency set is here)."""
        return self.base is not None

    @property
    def heights(self) -> NDArray[Any]:
        """Hierarchy heights of the quasi-identifiers."""
        return np.array([q.height for q in self.qis], dtype=np.int64)

    def columns_with(self, role: Role) -> list[str]:
        """Column names with ``role``, in table order."""
        return [c for c in self.frame.columns if self.roles[c] == role]

    def code_matrix(self) -> NDArray[Any]:
        """(n, m) int32 matrix of the quasi-identifiers' codes (a rowless dataset has none)."""
        if self.rowless:
            raise RuntimeError(
                "a rowless dataset holds no rows: its base frequency set stands for them"
            )
        return np.column_stack([q.codes for q in self.qis]).astype(np.int32, copy=False)

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        hierarchies: Mapping[str, Hierarchy | PathLike],
        *,
        identifying: Iterable[str] = (),
        sensitive: Iterable[str] = (),
        insensitive: Iterable[str] | None = None,
        other: str | None = None,
        source: str | None = None,
        population: pd.DataFrame | None = None,
    ) -> Dataset:
        """Assign roles (:func:`assign_roles`) and encode the quasi-identifiers.

        ``hierarchies`` maps each quasi-identifier to its hierarchy (object or
        ARX CSV path). Every other column must be named identifying,
        sensitive or insensitive, or ``other="insensitive"`` makes the
        columns named nowhere insensitive.

        ``population`` (delta-presence, k-map with a population) is the
        population table the table was drawn from, with at least the
        quasi-identifiers: the dictionaries then cover the values of both
        (:func:`encode_qi_with_population`) and :attr:`population` holds its
        codes. :mod:`anonlab.privacy.presence` builds such datasets and checks
        that the table is part of the population.
        """
        frame = frame.reset_index(drop=True)
        columns = [str(c) for c in frame.columns]
        frame.columns = columns
        twice = [c for i, c in enumerate(columns) if c in columns[:i]]
        if twice:
            raise AnonlabError(
                f"column '{twice[0]}' appears twice in the table: rename one of them"
            )
        if not hierarchies:
            raise AnonlabError(
                "hierarchies is empty: name at least one quasi-identifier and its hierarchy",
                parameter="hierarchies",
            )
        roles = assign_roles(
            columns,
            qi=hierarchies.keys(),
            identifying=identifying,
            sensitive=sensitive,
            insensitive=insensitive or (),
            other=other,
        )
        if population is not None:
            lacking = [str(c) for c in hierarchies if c not in population.columns]
            if lacking:
                raise AnonlabError(
                    f"the population table lacks the quasi-identifier column(s) "
                    f"{', '.join(lacking)}: it needs at least every quasi-identifier",
                    parameter="population",
                )
            population = population.reset_index(drop=True)
        qis = []
        population_codes: list[NDArray[Any]] = []
        # quasi-identifiers in the table's column order whatever order they are given in, as
        # ARX orders them: its per-attribute losses are then summed in the same order
        ordered = sorted(hierarchies.items(), key=lambda item: columns.index(item[0]))
        for col, h in ordered:
            hier = h if isinstance(h, Hierarchy) else Hierarchy.from_csv(Path(h))
            if population is None:
                qis.append(encode_qi(col, frame[col], hier))
            else:
                encoded, pcodes = encode_qi_with_population(col, frame[col], population[col], hier)
                qis.append(encoded)
                population_codes.append(pcodes)
        sens = tuple(encode_sensitive(c, frame[c]) for c in columns if roles[c] == Role.SENSITIVE)
        pop = None
        if population is not None:
            pop = (
                np.column_stack(population_codes).astype(np.int32, copy=False)
                if len(population)
                else np.zeros((0, len(qis)), dtype=np.int32)
            )
        return cls(
            frame=frame, roles=roles, qis=tuple(qis), source=source, sensitive=sens, population=pop
        )

    def sensitive_attribute(self, name: str) -> EncodedSensitive:
        """The encoded sensitive attribute ``name``; an error names the sensitive ones."""
        for s in self.sensitive:
            if s.name == name:
                return s
        if name in self.roles and self.roles[name] == Role.QUASI:
            raise AnonlabError(
                f"attribute '{name}' of a privacy model is a quasi-identifier: "
                "a protected attribute must be sensitive, not generalized",
                parameter="criteria",
            )
        names = ", ".join(s.name for s in self.sensitive) or "none"
        raise AnonlabError(
            f"attribute '{name}' of a privacy model is not a sensitive column "
            f"(sensitive: {names}): name it in sensitive",
            parameter="criteria",
        )
