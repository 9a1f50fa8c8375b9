"""Every column of a fusion has one role: the rule of every family, for ``fuse`` and ``party``.

The roles follow from the configuration (:mod:`anonlab.fusion.config`):

- **quasi-identifying**: every column of some anonymity template; the fusion
  generalizes it to the final cut (a ``"continuous"`` taxonomy makes
  intervals of a numeric column);
- **identifying**: named in ``identifying`` (``[fusion]`` or its provider's
  ``[[parties]]`` entry); the column never leaves its provider and the fused
  table lacks it. The record-id column is identifying unless ``keep_id``;
- **sensitive**: named in ``sensitive``; released as it is. The class
  attribute is sensitive unless named in ``insensitive``: it is the
  attribute the released table is meant to predict, which ARX and sdcMicro
  treat as the sensitive attribute (its l and t are measured);
- **insensitive**: named in ``insensitive``, or given no role while
  ``other = "insensitive"``; released as it is, by explicit choice. A kept
  record id (``keep_id = true``) is insensitive too: ``keep_id`` is that choice.

A provider column with none of these is refused (:class:`FusionRoleError`),
with one line naming every such column and how to give it a role. The
check reads the configuration only, so each party of a networked run makes
it before it connects.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from anonlab.dataset import Role, RoleError, assign_roles, roles_report, without_role
from anonlab.errors import AnonlabError
from anonlab.fusion.config import ROLE_LISTS, FusionConfig, PartyConfig

#: the parameters that give a fusion's roles besides the templates
ROLE_PARAMETERS = ROLE_LISTS


class FusionRoleError(RoleError):
    """Provider columns in no template and given no role: one line naming each with its provider.

    The message is the same from Python and on the command line: roles are
    given in the configuration file (``party`` takes no role flags, so that
    every party runs with the same roles).
    """

    def __init__(self, columns: list[str], owners: dict[str, str]) -> None:
        self.owners = dict(owners)
        super().__init__(columns, ROLE_PARAMETERS)

    def _text(self, givers: list[str], escape: str) -> str:
        plural = len(self.columns) != 1
        names = ", ".join(f"{c} ({self.owners.get(c, '?')})" for c in self.columns)
        them = "them" if plural else "it"
        return (
            f"column{'s' if plural else ''} {names} {'are' if plural else 'is'} given no "
            f"role: put {them} in a template's qid (quasi-identifier) or name "
            f"{'each' if plural else 'it'} in identifying, sensitive or insensitive (under "
            f'[fusion] or the provider\'s [[parties]] entry), or set other = "insensitive" '
            f"to release {them} unchanged"
        )

    def for_flags(self, flags: dict[str, str] | None = None) -> str:
        """The same message: the roles of a fusion live in its configuration file."""
        return self.message


@dataclass(frozen=True)
class FusionRoles:
    """The role of every column of a fusion, in fused-table order (id, providers', class).

    ``by_other`` are the columns insensitive only because of ``other``.
    """

    roles: dict[str, Role]
    by_other: list[str]
    other: str | None

    @property
    def released(self) -> list[str]:
        """The columns of the fused table (every role but identifying), in table order."""
        return [c for c, r in self.roles.items() if r != Role.IDENTIFYING]

    @property
    def sensitive(self) -> list[str]:
        """The sensitive columns, in table order."""
        return [c for c, r in self.roles.items() if r == Role.SENSITIVE]

    def report(self) -> dict[str, Any]:
        """The report keys ``roles``, ``other``, ``insensitive_by_other`` and
        ``released_unchanged`` (:func:`anonlab.dataset.roles_report`)."""
        return roles_report(self.roles, self.other, self.by_other)


def fusion_roles(config: FusionConfig) -> FusionRoles:
    """The role of every column of ``config``'s fusion (see the module docstring).

    Raises :class:`AnonlabError` for a role list naming an unknown column, a
    column given two roles, the record id or the class given a role they
    cannot have, or a helper with role lists; and :class:`FusionRoleError`
    naming every provider column given no role (unless ``other``).
    """
    _check_helpers(config)
    _check_shared_columns(config)
    _check_fusion_lists(config)
    missing: dict[str, str] = {}
    provider_roles: dict[str, Role] = {}
    by_other: list[str] = []
    for party in config.providers:
        roles, unnamed = _provider_roles(config, party)
        other = party.other or config.fusion.other
        if other is None:
            missing.update({c: party.id for c in unnamed})
        else:
            by_other += unnamed
        provider_roles.update(roles)
    if missing:
        raise FusionRoleError(list(missing), missing)
    out: dict[str, Role] = {}
    if config.fusion.id:
        out[config.fusion.id] = Role.INSENSITIVE if config.fusion.keep_id else Role.IDENTIFYING
    out.update(provider_roles)
    named_insensitive = config.class_column in config.fusion.insensitive
    out[config.class_column] = Role.INSENSITIVE if named_insensitive else Role.SENSITIVE
    return FusionRoles(roles=out, by_other=by_other, other=config.fusion.other)


def _provider_roles(config: FusionConfig, party: PartyConfig) -> tuple[dict[str, Role], list[str]]:
    """One provider's columns by role (those given none as insensitive), and those given none.

    The ``[fusion]`` lists apply to the names among this provider's columns;
    its own lists must name its own columns (:func:`anonlab.dataset.assign_roles`
    refuses an unknown name and a column given two roles).
    """
    columns = party.columns
    qid = [c for c in config.qid_attributes if c in columns]
    lists = {
        name: [*(c for c in shared if c in columns), *own]
        for (name, shared), own in zip(
            config.fusion.named().items(), party.named().values(), strict=True
        )
    }
    _check_own_lists(party, config)
    roles = assign_roles(
        columns,
        qi=qid,
        identifying=lists["identifying"],
        sensitive=lists["sensitive"],
        insensitive=lists["insensitive"],
        other="insensitive",
        role_parameters=("templates", *ROLE_PARAMETERS),
    )
    return roles, without_role(columns, qid, *lists.values())


def _check_helpers(config: FusionConfig) -> None:
    """A helper holds no data, so it gives no roles."""
    for helper in config.helpers:
        if any(helper.named().values()) or helper.other is not None:
            raise AnonlabError(
                f"helper '{helper.id}' gives column roles: a helper holds no "
                "columns; move its identifying, sensitive, insensitive or other "
                "to [fusion] or a provider"
            )


def _check_shared_columns(config: FusionConfig) -> None:
    """The record id takes its role from ``keep_id``; the class is released, by every fusion."""
    ident, target = config.fusion.id, config.class_column
    if target in config.fusion.sensitive and target in config.fusion.insensitive:
        raise AnonlabError(
            f"[fusion] names the class attribute '{target}' in sensitive and in "
            "insensitive: give it one role"
        )
    for party in [None, *config.providers]:
        lists = (config.fusion if party is None else party).named()
        where = "[fusion]" if party is None else f"party '{party.id}'"
        for name, columns in lists.items():
            if ident and ident in columns:
                raise AnonlabError(
                    f"{where} names the record id '{ident}' in {name}: its role follows keep_id "
                    "(false: identifying, dropped; true: released, insensitive); remove it "
                    f"from {name}"
                )
            if target in columns and (party is not None or name == "identifying"):
                raise AnonlabError(
                    f"{where} names the class attribute '{target}' in {name}: every fusion "
                    "releases the class (the score needs it); it is sensitive unless named in "
                    "insensitive under [fusion]"
                )


def _check_fusion_lists(config: FusionConfig) -> None:
    """Every name in a ``[fusion]`` role list is a provider's column (or the class)."""
    known = {c for p in config.providers for c in p.columns} | {config.class_column}
    for name, columns in config.fusion.named().items():
        _refuse_unknown(columns, known, f"fusion.{name}", sorted(known))


def _check_own_lists(party: PartyConfig, config: FusionConfig) -> None:
    """A party's role lists name its own columns only."""
    owners = {c: p.id for p in config.providers for c in p.columns}
    for name, columns in party.named().items():
        for column in columns:
            if column not in party.columns and column in owners:
                raise AnonlabError(
                    f"party '{party.id}' names column '{column}' in {name}, a column of "
                    f"provider '{owners[column]}': give it its role there or under [fusion]"
                )
        _refuse_unknown(columns, set(party.columns), f"party '{party.id}' {name}", party.columns)


def _refuse_unknown(
    names: Iterable[str], known: set[str], where: str, listed: Sequence[str]
) -> None:
    """Refuse the first of ``names`` that is not ``known``."""
    for column in names:
        if column not in known:
            raise AnonlabError(
                f"{where} names column '{column}', which no provider lists: fix "
                f"the name (the columns are {', '.join(listed)})"
            )
