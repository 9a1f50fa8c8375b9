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
from anonlab.io import PathLike


class Role(StrEnum):
    """What a column is to the privacy model."""

    IDENTIFYING = "identifying"  # direct identifiers: never released
    QUASI = "quasi"  # quasi-identifiers: generalized
    SENSITIVE = "sensitive"  # released as is; the attribute to protect
    INSENSITIVE = "insensitive"  # released as is


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


def encode_qi(name: str, column: pd.Series, hierarchy: Hierarchy) -> EncodedQI:
    """Dictionary-encode one column and map its hierarchy onto the codes.

    A missing value (null in Parquet or a DataFrame) is the empty string, as an
    empty CSV field reads. Raises :class:`AnonlabError` naming the first value
    missing from the hierarchy.
    """
    text = column.astype(str).where(column.notna(), "")
    codes, uniques = pd.factorize(text, sort=False)
    values = tuple(str(u) for u in uniques)
    missing = hierarchy.missing(values)
    if missing:
        first_row = int(np.flatnonzero(text.to_numpy() == missing[0])[0]) + 1
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        if missing[0] != missing[0].strip() and missing[0].strip() in hierarchy:
            raise AnonlabError(
                f"column '{name}': value '{missing[0]}' (data row {first_row}){more} has "
                f"surrounding spaces that hierarchy '{hierarchy.source}' does not (its fields "
                "are trimmed): trim the values of the data column"
            )
        raise AnonlabError(
            f"column '{name}': value '{missing[0]}' (data row {first_row}){more} is not in "
            f"hierarchy '{hierarchy.source}': add it to the hierarchy file"
        )
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
            return (f"column{'s' if plural else ''} {names} of the table {verb}"
                    f" given no role by {self.source or 'the settings'}: give a table with the "
                    f"columns it names, or pass {escape} to release {them} unchanged")
        listed = ", ".join(givers[:-1]) + " or " + givers[-1] if len(givers) > 1 else givers[0]
        return (f"column{'s' if plural else ''} {names} {'are' if plural else 'is'} given no "
                f"role: name {'each' if plural else 'it'} in {listed}, or pass {escape} to "
                f"release {them} unchanged")

    def for_flags(self, flags: dict[str, str] | None = None) -> str:
        """The message with the command's flags in place of the parameter names."""
        spell = flags or {}
        givers = [spell.get(name, "--" + name.replace("_", "-")) for name in self.role_parameters]
        return self._text(givers, spell.get("other", "--other") + " insensitive")


def _check_other(other: str | None) -> None:
    if other is not None and other not in OTHER_ROLES:
        raise AnonlabError(f"other must be 'insensitive' or not given (got {other!r}): it "
                           "releases the columns given no role unchanged", parameter="other")


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
        (Role.QUASI, qi), (Role.IDENTIFYING, identifying), (Role.SENSITIVE, sensitive),
        (Role.INSENSITIVE, insensitive),
    ]
    for role, names in groups:
        for col in names:
            if col not in table:
                raise AnonlabError(
                    f"unknown column '{col}' (given as {role.value}): the table has "
                    f"{', '.join(table)}"
                )
            if col in named and named[col] != role:
                raise AnonlabError(
                    f"column '{col}' is given two roles ({named[col].value} and {role.value}):"
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
    """A table with one role per column and its quasi-identifiers encoded."""

    frame: pd.DataFrame
    roles: Mapping[str, Role]
    qis: tuple[EncodedQI, ...]
    source: str | None = None

    @property
    def n(self) -> int:
        """Number of records."""
        return int(self.frame.shape[0])

    @property
    def heights(self) -> NDArray[Any]:
        """Hierarchy heights of the quasi-identifiers."""
        return np.array([q.height for q in self.qis], dtype=np.int64)

    def columns_with(self, role: Role) -> list[str]:
        """Column names with ``role``, in table order."""
        return [c for c in self.frame.columns if self.roles[c] == role]

    def code_matrix(self) -> NDArray[Any]:
        """(n, m) int32 matrix of the quasi-identifiers' codes."""
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
    ) -> Dataset:
        """Assign roles (:func:`assign_roles`) and encode the quasi-identifiers.

        ``hierarchies`` maps each quasi-identifier to its hierarchy (object or
        ARX CSV path). Every other column must be named identifying,
        sensitive or insensitive, or ``other="insensitive"`` makes the
        columns named nowhere insensitive.
        """
        frame = frame.reset_index(drop=True)
        columns = [str(c) for c in frame.columns]
        frame.columns = columns
        twice = [c for i, c in enumerate(columns) if c in columns[:i]]
        if twice:
            raise AnonlabError(f"column '{twice[0]}' appears twice in the table: rename one of "
                               "them")
        if not hierarchies:
            raise AnonlabError("hierarchies is empty: name at least one quasi-identifier and its "
                               "hierarchy", parameter="hierarchies")
        roles = assign_roles(columns, qi=hierarchies.keys(), identifying=identifying,
                             sensitive=sensitive, insensitive=insensitive or (), other=other)
        qis = []
        for col, h in hierarchies.items():
            hier = h if isinstance(h, Hierarchy) else Hierarchy.from_csv(Path(h))
            qis.append(encode_qi(col, frame[col], hier))
        return cls(frame=frame, roles=roles, qis=tuple(qis), source=source)
