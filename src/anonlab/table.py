"""The table model of the record-level methods: one table, every column's role, its encodings.

A :class:`MicrodataTable` is what microaggregation (:func:`anonlab.microaggregate`),
perturbation (the ``perturb``, ``invert`` and ``attack`` runs), the EM4ADOM
evaluation (:func:`anonlab.metrics.evaluate`), fusion (each provider's part:
:func:`anonlab.fusion.provider.load_provider`) and the risk module
(:func:`anonlab.risk.measure_risk`) take. It is built once from a
frame and the column settings (:meth:`MicrodataTable.from_frame`), or from
every column's role where a method derives them from its own settings
(:meth:`MicrodataTable.from_roles`: a fusion provider's part), and holds:

* ``frame``: the table as read;
* ``roles``: the :class:`~anonlab.dataset.Role` of every column. The masked
  (or measured) columns are the quasi-identifiers; every other column is
  identifying, sensitive or insensitive as the settings name it
  (:func:`anonlab.dataset.assign_roles`, one rule for every family);
* ``numeric``: the numeric quasi-identifiers as one float64 matrix
  (:class:`NumericColumns`);
* ``categorical``: the nominal, then the ordinal quasi-identifiers as integer
  codes into their ordered domains (:class:`anonlab.encoding.CategoricalColumn`),
  with their distances (0/1 nominal, o_j ordinal:
  :func:`anonlab.encoding.category_distance`).

Numbers are read by one of two rules (``numbers``):

* ``"parsed"`` (microaggregation, evaluation): each value's text, stripped,
  parsed by pandas (:func:`anonlab.encoding.numeric_matrix`); ``columns =
  "all-numeric"`` picks every column whose values all parse;
* ``"exact"`` (perturbation): Arrow's correctly rounded parse with integer
  columns told apart (:mod:`anonlab.textnumbers`), so that a key can restore
  the input exactly; ``columns=None`` picks every column no role names.

Standardization uses the population standard deviation S_j (ddof=0),
z = (x - mean) / S_j (:meth:`MicrodataTable.standardized`, computed once).
The model imports no method family, so :mod:`anonlab.metrics` stays free of
them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from anonlab.encoding import (
    ALL_NUMERIC,
    CategoricalColumn,
    check_present,
    encode_all,
    encode_like,
    numeric_matrix,
    select_columns,
    standardize,
)
from anonlab.errors import AnonlabError
from anonlab.settings import split_names

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import NDArray

    from anonlab.dataset import Role

NumberRule = Literal["parsed", "exact"]
NUMBER_RULES = ("parsed", "exact")
#: the parameters of :meth:`MicrodataTable.from_frame` that give roles (named in a RoleError)
ROLE_PARAMETERS = ("columns", "nominal", "ordinal", "identifying", "sensitive", "insensitive")


@dataclass(frozen=True)
class NumericColumns:
    """Numeric columns as an ``N x d`` float64 matrix, and which of them hold integers.

    ``integer`` says, per column, whether it holds whole numbers as the rule
    that read it tells: spelled ``[+-]digits`` or of an integer type
    (``"exact"``), of an integer type (``"parsed"``).
    """

    names: list[str]
    values: NDArray[np.float64]
    integer: list[bool]


@dataclass(frozen=True, eq=False)
class MicrodataTable:
    """A table, every column's role and the encodings the record-level methods need.

    Build it with :meth:`from_frame`; see the module docstring.
    """

    frame: pd.DataFrame
    roles: Mapping[str, Role]
    numeric: NumericColumns
    categorical: tuple[CategoricalColumn, ...] = ()
    by_other: tuple[str, ...] = ()
    numbers: NumberRule = "parsed"
    what: str = "table"

    # ------------------------------------------------------------------ views

    @property
    def n(self) -> int:
        """Number of records."""
        return int(self.frame.shape[0])

    @property
    def numeric_names(self) -> list[str]:
        """The numeric quasi-identifiers, in the order of the matrix's columns."""
        return list(self.numeric.names)

    @property
    def nominal(self) -> list[str]:
        """The nominal quasi-identifiers."""
        return [c.name for c in self.categorical if not c.ordinal]

    @property
    def ordinal(self) -> list[str]:
        """The ordinal quasi-identifiers."""
        return [c.name for c in self.categorical if c.ordinal]

    @property
    def orders(self) -> dict[str, list[str]]:
        """Each ordinal column's domain in order (as given, or the natural order)."""
        return {c.name: list(c.domain) for c in self.categorical if c.ordinal}

    def columns_with(self, role: Role) -> list[str]:
        """The columns that have ``role``, in table order."""
        return [c for c, r in self.roles.items() if r == role]

    @cached_property
    def standardized(self) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
        """``(z, mean, std)`` of the numeric columns: z = (x - mean) / S_j, S_j with ddof=0.

        Computed once; a constant column is refused by name (S_j = 0). Without
        numeric columns ``z`` is ``(n, 0)``.
        """
        x = self.numeric.values
        if not self.numeric.names:
            return np.zeros((self.n, 0)), np.zeros(0), np.zeros(0)
        return standardize(x, self.numeric.names, self.what)

    # ----------------------------------------------------------- constructors

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        columns: str | Sequence[str] | None = ALL_NUMERIC,
        *,
        nominal: str | Sequence[str] | None = None,
        ordinal: str | Sequence[str] | None = None,
        orders: Mapping[str, Sequence[str]] | None = None,
        identifying: Sequence[str] = (),
        sensitive: Sequence[str] = (),
        insensitive: Sequence[str] = (),
        other: str | None = None,
        role_parameters: tuple[str, ...] = ROLE_PARAMETERS,
        numbers: NumberRule = "parsed",
        allow_constant: bool = False,
        purpose: str = "microaggregate",
        what: str = "table",
    ) -> MicrodataTable:
        """Check the settings against ``frame``, give every column its role, encode the QIs.

        ``columns`` are the numeric quasi-identifiers: names, or (rule
        ``"parsed"``) ``"all-numeric"`` for every numeric column no other
        parameter names, ``None`` with categorical columns for none; (rule
        ``"exact"``) ``None`` for every column no other parameter names.
        ``nominal`` and ``ordinal`` are the categorical quasi-identifiers,
        ``orders`` an ordinal column's values in order. ``identifying``,
        ``sensitive`` and ``insensitive`` give the other columns' roles;
        ``other="insensitive"`` makes every column named nowhere insensitive
        (:attr:`by_other`), else such a column is refused
        (:class:`~anonlab.dataset.RoleError`, naming ``role_parameters``).
        ``allow_constant`` (rule ``"exact"``) accepts a constant column.
        ``purpose`` and ``what`` say in messages what the columns are for and
        how the table is called.
        """
        from anonlab.dataset import assign_roles, without_role

        if numbers not in NUMBER_RULES:
            raise AnonlabError(
                f"numbers '{numbers}' is not a rule: give 'parsed' or 'exact'", parameter="numbers"
            )
        if frame.shape[0] == 0:
            raise AnonlabError(f"the {what} has no records: give at least one record")
        nom, ordl = split_names(nominal), split_names(ordinal)
        check_present(frame, [*nom, *ordl], what)
        others = [*identifying, *sensitive, *insensitive]
        names = _numeric_names(frame, columns, [*nom, *ordl], others, numbers, purpose)
        roles = assign_roles(
            frame.columns,
            qi=[*names, *nom, *ordl],
            identifying=identifying,
            sensitive=sensitive,
            insensitive=insensitive,
            other=other,
            role_parameters=role_parameters,
        )
        by_other = tuple(without_role(frame.columns, names, [*nom, *ordl], others))
        numeric = read_numbers(frame, names, numbers, allow_constant=allow_constant, what=what)
        cats = tuple(encode_all(frame, nom, ordl, orders, what))
        return cls(frame, roles, numeric, cats, by_other, numbers, what)

    @classmethod
    def from_roles(
        cls,
        frame: pd.DataFrame,
        roles: Mapping[str, Role | str],
        *,
        nominal: Sequence[str] = (),
        ordinal: Sequence[str] = (),
        orders: Mapping[str, Sequence[str]] | None = None,
        by_other: Sequence[str] = (),
        numbers: NumberRule = "parsed",
        allow_constant: bool = False,
        what: str = "table",
    ) -> MicrodataTable:
        """A table whose every column's role is already known (e.g. derived from a config).

        ``roles`` maps every column of ``frame`` (and no other name) to a
        :class:`~anonlab.dataset.Role` or its value. The quasi-identifiers
        named in ``nominal`` or ``ordinal`` are categorical (``orders`` as in
        :meth:`from_frame`); every other quasi-identifier is numeric, read by
        rule ``numbers`` (``allow_constant`` as in :meth:`from_frame`).
        ``by_other`` are the insensitive columns that got their role only
        because no setting named them. Unlike :meth:`from_frame`, a table
        without quasi-identifiers is accepted: a fusion provider may hold
        none of its own (:func:`anonlab.fusion.provider.provider_table`).
        """
        from anonlab.dataset import Role

        if numbers not in NUMBER_RULES:
            raise AnonlabError(
                f"numbers '{numbers}' is not a rule: give 'parsed' or 'exact'", parameter="numbers"
            )
        if frame.shape[0] == 0:
            raise AnonlabError(f"the {what} has no records: give at least one record")
        columns = [str(c) for c in frame.columns]
        given = {str(c): _role(Role, r) for c, r in roles.items()}
        _check_role_names(columns, given, what)
        _check_typed(given, {"nominal": nominal, "ordinal": ordinal, "by_other": by_other}, Role)
        categorical = {*nominal, *ordinal}
        names = [c for c in columns if given[c] == Role.QUASI and c not in categorical]
        numeric = read_numbers(frame, names, numbers, allow_constant=allow_constant, what=what)
        cats = tuple(encode_all(frame, list(nominal), list(ordinal), orders, what))
        return cls(
            frame, {c: given[c] for c in columns}, numeric, cats, tuple(by_other), numbers, what
        )

    def encoded_like(self, frame: pd.DataFrame, what: str = "masked table") -> MicrodataTable:
        """Another table with the same records (e.g. a masked one), encoded as this one is.

        Its numeric columns are read by the same rule; its categorical values
        take this table's codes (a nominal value this table lacks is appended
        to the domain; :func:`anonlab.encoding.encode_like`). Roles are this
        table's for the columns it has.
        """
        numeric = read_numbers(
            frame, self.numeric.names, self.numbers, allow_constant=True, what=what
        )
        cats = tuple(encode_like(c, frame, what) for c in self.categorical)
        roles = {c: r for c, r in self.roles.items() if c in set(map(str, frame.columns))}
        return MicrodataTable(frame, roles, numeric, cats, (), self.numbers, what)


def _role(kind: type[Role], value: Role | str) -> Role:
    """``value`` as a :class:`~anonlab.dataset.Role`; an unknown role is refused by name."""
    try:
        return kind(value)
    except ValueError:
        known = ", ".join(r.value for r in kind)
        raise AnonlabError(
            f"roles gives the role '{value}', which is not a role: give one of {known}",
            parameter="roles",
        ) from None


def _check_role_names(columns: list[str], roles: Mapping[str, Role], what: str) -> None:
    """``roles`` names every column of the table and nothing else."""
    missing = [c for c in columns if c not in roles]
    if missing:
        raise AnonlabError(
            f"column '{missing[0]}' of the {what} has no role: give every column its role in roles",
            parameter="roles",
        )
    stray = [c for c in roles if c not in set(columns)]
    if stray:
        raise AnonlabError(
            f"roles names column '{stray[0]}', which the {what} does not have "
            f"(its columns are {', '.join(columns)})",
            parameter="roles",
        )


def _check_typed(
    roles: Mapping[str, Role], lists: Mapping[str, Sequence[str]], kind: type[Role]
) -> None:
    """Categorical columns are quasi-identifiers of one type; ``by_other`` ones insensitive."""
    from anonlab.dataset import ROLE_NAMES

    both = sorted(set(lists["nominal"]) & set(lists["ordinal"]))
    if both:
        raise AnonlabError(
            f"column '{both[0]}' is named both nominal and ordinal: give each column one type",
            parameter="ordinal",
        )
    wanted = {"nominal": kind.QUASI, "ordinal": kind.QUASI, "by_other": kind.INSENSITIVE}
    for parameter, names in lists.items():
        for name in names:
            role = roles.get(name)
            if role is None:
                raise AnonlabError(
                    f"{parameter} names column '{name}', which the table does "
                    "not have: fix the name",
                    parameter=parameter,
                )
            if role != wanted[parameter]:
                raise AnonlabError(
                    f"{parameter} names column '{name}', whose role is "
                    f"{ROLE_NAMES[role]}, not {ROLE_NAMES[wanted[parameter]]}: give it that "
                    "role in roles or leave it out",
                    parameter=parameter,
                )


def _numeric_names(
    frame: pd.DataFrame,
    columns: str | Sequence[str] | None,
    categorical: list[str],
    others: list[str],
    numbers: NumberRule,
    purpose: str,
) -> list[str]:
    """The numeric quasi-identifiers the settings choose (see :meth:`MicrodataTable.from_frame`)."""
    if numbers == "exact":
        if columns is None:
            named = {*categorical, *others}
            return [str(c) for c in frame.columns if str(c) not in named]
        # names as given: a perturbed column's name may hold a comma
        names = split_names(columns) if isinstance(columns, str) else [str(c) for c in columns]
        check_present(frame, names)
    elif columns is None and categorical:
        names = []
    else:
        names = select_columns(frame, columns, exclude=[*categorical, *others])
    overlap = sorted(set(names) & set(categorical))
    if overlap:
        raise AnonlabError(
            f"column '{overlap[0]}' is named both numeric and categorical: "
            "give each column one type"
        )
    if not names and not categorical:
        raise AnonlabError(
            f"no column to {purpose}: name numeric columns in columns or "
            "categorical ones in nominal or ordinal",
            parameter="columns",
        )
    return names


def read_numbers(
    frame: pd.DataFrame,
    names: Sequence[str],
    numbers: NumberRule = "parsed",
    *,
    allow_constant: bool = False,
    what: str = "table",
) -> NumericColumns:
    """The named columns of ``frame`` as numbers, by rule ``numbers`` (see the module docstring).

    Rule ``"exact"`` refuses a constant column unless ``allow_constant``; rule
    ``"parsed"`` leaves that to :meth:`MicrodataTable.standardized`.
    """
    names = [str(c) for c in names]
    if numbers == "exact":
        from anonlab.textnumbers import exact_matrix

        values, integer = exact_matrix(frame, names, allow_constant=allow_constant)
        return NumericColumns(names, values, integer)
    if not names:
        return NumericColumns([], np.zeros((frame.shape[0], 0)), [])
    values = numeric_matrix(frame, names, what)
    return NumericColumns(names, values, [frame[c].dtype.kind in "iu" for c in names])


def as_table(
    data: pd.DataFrame | MicrodataTable,
    columns: str | Sequence[str] | None,
    *,
    nominal: str | Sequence[str] | None,
    ordinal: str | Sequence[str] | None,
    orders: Mapping[str, Sequence[str]] | None,
    purpose: str,
    what: str = "table",
) -> MicrodataTable:
    """``data`` as a table model: a :class:`MicrodataTable` as it is, a frame encoded.

    A frame's columns that no setting names pass through (insensitive, by
    ``other``), as the frame-taking functions always let them. With a table
    model the column settings come from it: giving them as well is refused.
    """
    if isinstance(data, MicrodataTable):
        given = [
            name
            for name, value in (("nominal", nominal), ("ordinal", ordinal), ("orders", orders))
            if value
        ]
        if columns != ALL_NUMERIC:
            given.insert(0, "columns")
        if given:
            raise AnonlabError(
                f"{given[0]} is given with a MicrodataTable, which already "
                "holds the columns and their types: leave it out",
                parameter=given[0],
            )
        return data
    return MicrodataTable.from_frame(
        data,
        columns,
        nominal=nominal,
        ordinal=ordinal,
        orders=orders,
        other="insensitive",
        purpose=purpose,
        what=what,
    )
