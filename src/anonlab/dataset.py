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

import numpy as np
import pandas as pd

from anonlab.errors import AnonlabError
from anonlab.hierarchy import Hierarchy
from anonlab.io import PathLike, read_table


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
    codes: np.ndarray  # (n,) int32 code of each row's value
    level_codes: tuple[np.ndarray, ...]  # level -> (len(values),) group code
    level_labels: tuple[tuple[str, ...], ...]  # level -> group code -> label
    frequencies: np.ndarray  # (len(values),) count of each value in the data

    @property
    def height(self) -> int:
        """Height of the hierarchy (the top level's number)."""
        return self.hierarchy.height

    def cardinality(self, level: int) -> int:
        """Number of distinct groups at ``level`` among the data's values."""
        return len(self.level_labels[level])

    def lift(self, lower: int, upper: int) -> np.ndarray:
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
    def qi_names(self) -> list[str]:
        """Quasi-identifier names, in the order given."""
        return [q.name for q in self.qis]

    @property
    def heights(self) -> np.ndarray:
        """Hierarchy heights of the quasi-identifiers."""
        return np.array([q.height for q in self.qis], dtype=np.int64)

    def columns_with(self, role: Role) -> list[str]:
        """Column names with ``role``, in table order."""
        return [c for c in self.frame.columns if self.roles[c] == role]

    def code_matrix(self) -> np.ndarray:
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
        source: str | None = None,
    ) -> Dataset:
        """Assign roles and encode the quasi-identifiers.

        ``hierarchies`` maps each quasi-identifier to its hierarchy (object or
        ARX CSV path). Columns not named in any role are insensitive.
        """
        frame = frame.reset_index(drop=True)
        columns = [str(c) for c in frame.columns]
        frame.columns = columns
        twice = [c for i, c in enumerate(columns) if c in columns[:i]]
        if twice:
            raise AnonlabError(f"column '{twice[0]}' appears twice in the table: rename one of "
                               "them")
        if not hierarchies:
            raise AnonlabError("no quasi-identifier given: name at least one with --qi COLUMN=FILE")
        named: dict[str, Role] = {}
        groups: list[tuple[Role, Iterable[str]]] = [
            (Role.QUASI, hierarchies.keys()),
            (Role.IDENTIFYING, identifying),
            (Role.SENSITIVE, sensitive),
            (Role.INSENSITIVE, insensitive or ()),
        ]
        for role, names in groups:
            for col in names:
                if col not in columns:
                    raise AnonlabError(
                        f"unknown column '{col}' (given as {role.value}): the table has "
                        f"{', '.join(columns)}"
                    )
                if col in named and named[col] != role:
                    raise AnonlabError(
                        f"column '{col}' is given two roles ({named[col].value} and {role.value}):"
                        " give each column one role"
                    )
                named[col] = role
        roles = {c: named.get(c, Role.INSENSITIVE) for c in columns}
        qis = []
        for col, h in hierarchies.items():
            hier = h if isinstance(h, Hierarchy) else Hierarchy.from_csv(Path(h))
            qis.append(encode_qi(col, frame[col], hier))
        return cls(frame=frame, roles=roles, qis=tuple(qis), source=source)

    @classmethod
    def from_file(
        cls,
        path: PathLike,
        hierarchies: Mapping[str, Hierarchy | PathLike],
        *,
        delimiter: str | None = None,
        identifying: Iterable[str] = (),
        sensitive: Iterable[str] = (),
        insensitive: Iterable[str] | None = None,
    ) -> Dataset:
        """Read a CSV/Parquet file (all values as text) and build the dataset."""
        frame = read_table(path, delimiter=delimiter)
        return cls.from_frame(
            frame,
            hierarchies,
            identifying=identifying,
            sensitive=sensitive,
            insensitive=insensitive,
            source=str(path),
        )
