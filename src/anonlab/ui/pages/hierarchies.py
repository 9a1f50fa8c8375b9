"""The Hierarchies step: build, load, preview, edit and save a hierarchy for a table's column.

Routes (``{table}`` is a loaded table's id, the column goes in ``?column=`` or
the form's ``column``, since a column's name may hold any character):

* ``GET /hierarchies``: every loaded table's columns, their roles and the
  hierarchy attached to each;
* ``GET /hierarchies/{table}?column=C``: the column's page: a builder's form
  (interval, grouping, taxonomy, date, redaction) with a live preview, the
  loading of an ARX CSV file, the draft with its levels, the values it misses,
  its groups to edit, and save;
* ``POST /hierarchies/{table}/preview``: the preview of the form's hierarchy,
  an HTML fragment (``static/hierarchies.js`` asks for it as the form changes);
* ``POST /hierarchies/{table}/build`` and ``/load``: the form's hierarchy or
  a file (uploaded, or a path on this machine) becomes the column's draft;
* ``POST /hierarchies/{table}/rename``, ``/move``, ``/undo``: edits of the draft
  (a move at level 1 of a value the draft lacks adds it to the group);
* ``POST /hierarchies/{table}/save``: the draft written as ARX CSV into the
  workspace and attached to the column; ``/detach`` forgets the attachment;
* ``GET /hierarchies/{table}/download?column=C``: the saved file.

The logic is :mod:`anonlab.ui.hierarchy_preview`'s, over the library's builders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from anonlab.errors import AnonlabError
from anonlab.hierarchy import Hierarchy, parse_rows
from anonlab.hierarchy_date import DATE_LEVELS
from anonlab.runs.hierarchy import HIERARCHY_BUILDERS
from anonlab.ui.forms import number, text
from anonlab.ui.hierarchy_preview import (
    ColumnData,
    Draft,
    HierarchyStore,
    LevelSummary,
    Preview,
    add_value,
    as_read,
    build,
    cli_line,
    hierarchy_path,
    load_file,
    move_member,
    natural_order,
    preview,
    rename_group,
    save_draft,
)
from anonlab.ui.templating import render, render_text
from anonlab.ui.workspace import LoadedTable, Workspace


def _workspace(request: Request) -> Workspace:
    workspace: Workspace = request.app.state.workspace
    return workspace


def _store(request: Request) -> HierarchyStore:
    """The app's hierarchy store, made on first use."""
    store = getattr(request.app.state, "hierarchy_store", None)
    if store is None:
        store = HierarchyStore()
        request.app.state.hierarchy_store = store
    return store


def _page_url(table: LoadedTable, column: str) -> str:
    return f"/hierarchies/{quote(table.id)}?column={quote(column, safe='')}"


def column_names(table: LoadedTable) -> list[str]:
    """The table's columns as the load step listed them (else those the roles name)."""
    names = [str(c["name"]) for c in table.columns if isinstance(c, dict) and "name" in c]
    return names or list(table.roles)


# ---------------------------------------------------------------------------
# the form's builder settings
# ---------------------------------------------------------------------------


def _lines(form: FormData, name: str) -> list[str] | None:
    """A textarea's non-empty lines, each stripped; ``None`` when there is none."""
    value = form.get(name)
    if not isinstance(value, str):
        return None
    lines = [line.strip() for line in value.splitlines() if line.strip()]
    return lines or None


def builder_params(form: FormData) -> tuple[str, dict[str, Any]]:
    """The chosen builder and its settings values, as a TOML file for
    ``anonlab hierarchy BUILDER`` would hold them (parameters left empty left out)."""
    kind = text(form, "builder") or ""
    if kind not in HIERARCHY_BUILDERS:
        raise AnonlabError(
            f"builder: choose one of {', '.join(HIERARCHY_BUILDERS)}", parameter="builder"
        )
    params: dict[str, Any] = {}
    if kind == "interval":
        params["widths"] = text(form, "widths")
    elif kind == "grouping":
        params["sizes"] = text(form, "sizes")
        params["order"] = _lines(form, "order")
    elif kind == "taxonomy":
        params["groups"] = _lines(form, "groups")
        params["mapping"] = text(form, "mapping")
    elif kind == "date":
        levels = [v for v in form.getlist("levels") if isinstance(v, str) and v]
        params["levels"] = levels or None
        params["date_format"] = text(form, "date_format")
    return kind, {k: v for k, v in params.items() if v is not None}


async def _table_and_column(
    request: Request, form: FormData | None = None
) -> tuple[LoadedTable, str]:
    table = _workspace(request).table(request.path_params["table"])
    column = (form.get("column") if form is not None else None) or request.query_params.get(
        "column"
    )
    if not isinstance(column, str) or not column:
        raise AnonlabError("column: choose the column whose hierarchy to make", parameter="column")
    return table, column


async def _column_data(request: Request, table: LoadedTable, column: str) -> ColumnData:
    data: ColumnData = await run_in_threadpool(_store(request).column, table, column)
    return data


# ---------------------------------------------------------------------------
# pages
# ---------------------------------------------------------------------------


async def overview(request: Request) -> Response:
    """Every loaded table's columns with their role and attached hierarchy (only the table
    ``?table=`` names, when it names one, as the Roles step's link does)."""
    workspace = _workspace(request)
    wanted = request.query_params.get("table")
    chosen = [workspace.table(wanted)] if wanted else list(workspace.tables.values())
    tables = [{"table": table, "columns": column_names(table)} for table in chosen]
    return render(request, "hierarchies.html", tables=tables, page_url=_page_url)


async def column_page(request: Request) -> Response:
    """One column: the builder's form with its live preview, loading, the draft, save."""
    table, column = await _table_and_column(request)
    data = await _column_data(request, table, column)
    store = _store(request)
    draft = store.draft(table.id, column)
    attached = table.hierarchies.get(column)
    problem = None
    if draft is None and attached is not None:
        try:
            draft = await run_in_threadpool(
                load_file, table, column, Path(attached), Path(attached).name, ";"
            )
        except AnonlabError as exc:  # the file the Roles step named cannot be used
            problem = str(exc)
        else:
            store.put(draft)
    context = _column_context(request, table, data, draft)
    return render(request, "hierarchies_column.html", problem=problem, **context)


def _column_context(
    request: Request, table: LoadedTable, data: ColumnData, draft: Draft | None
) -> dict[str, Any]:
    column = data.column
    attached = table.hierarchies.get(column)
    pv, error = None, None
    if draft is not None:
        try:
            pv = preview(draft.hierarchy, data, draft.warnings)
        except AnonlabError as exc:  # a draft whose file a run could not read
            error = str(exc)
    saved = False
    if draft is not None and pv is not None and attached is not None:
        saved = _same_as_file(draft, Path(attached))
    params = draft.params if draft is not None and draft.kind in HIERARCHY_BUILDERS else {}
    kind = draft.kind if draft is not None and draft.kind in HIERARCHY_BUILDERS else "interval"
    numeric = all(v == "" or _is_number(v) for v in data.values)
    return {
        "table": table,
        "column": column,
        "role": table.roles.get(column),
        "data": data,
        "draft": draft,
        "pv": pv,
        "error": error,
        "editable": draft is not None and draft.editable and pv is not None,
        "edit_levels": _edit_levels(pv),
        "taxonomy_example": _taxonomy_example(data),
        "attached": attached,
        "saved": saved,
        "kind": kind if numeric or kind != "interval" else "taxonomy",
        "params": params,
        "builders": list(HIERARCHY_BUILDERS),
        "date_levels": DATE_LEVELS,
        "order_hint": "" if numeric else "\n".join(natural_order(data.values)),
        "numeric": numeric,
        "cli": cli_line(table, draft, f"hierarchy_{column}.csv") if draft is not None else None,
        "page_url": _page_url(table, column),
        "members_of": _members,
        "base": f"/hierarchies/{quote(table.id)}",
    }


def _same_as_file(draft: Draft, path: Path) -> bool:
    """Whether a run reading ``path`` gets the draft's hierarchy (the same rows as read)."""
    try:
        return Hierarchy.from_csv(path).rows == as_read(draft.hierarchy, draft.column).rows
    except AnonlabError:
        return False


def _edit_levels(pv: Preview | None) -> list[LevelSummary]:
    """The levels the page offers to edit: all but a top of one group (nothing to move or
    merge there), and level 1 while values are missing (they can join its groups)."""
    if pv is None:
        return []
    return [
        lv
        for lv in pv.levels
        if not (lv.level == pv.height and lv.count == 1) or (lv.level == 1 and pv.uncovered)
    ]


def _taxonomy_example(data: ColumnData) -> str:
    """An example of the taxonomy's lines with the column's own values."""
    values = [v for v in data.sorted_values if v != "" and "," not in v][:5]
    if len(values) < 2:
        return "1:Group A=V1,V2\n1:Group B=V3\n2:Any=Group A,Group B"
    half = (len(values) + 1) // 2
    return (
        f"1:Group A={','.join(values[:half])}\n1:Group B={','.join(values[half:])}\n"
        "2:Any=Group A,Group B"
    )


def _members(level: LevelSummary) -> list[str]:
    """The members of a level's groups (labels one level down), sorted."""
    return sorted({m for g in level.groups for m in g.members})


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


async def preview_fragment(request: Request) -> Response:
    """The preview of the form's hierarchy (not stored): a fragment, or the error in one line."""
    form = await request.form()
    table, column = await _table_and_column(request, form)
    data = await _column_data(request, table, column)
    try:
        kind, params = builder_params(form)
        output = hierarchy_path(_workspace(request), table, column)
        draft = await run_in_threadpool(build, table, data, kind, params, output)
        pv = preview(draft.hierarchy, data, draft.warnings)
    except AnonlabError as exc:
        page = render_text(
            "hierarchies_preview.html", pv=None, error=str(exc), data=data, editable=False
        )
        return HTMLResponse(page, status_code=200)
    page = render_text("hierarchies_preview.html", pv=pv, error=None, data=data, editable=False)
    return HTMLResponse(page)


async def build_draft(request: Request) -> Response:
    """The form's hierarchy becomes the column's draft."""
    form = await request.form()
    table, column = await _table_and_column(request, form)
    data = await _column_data(request, table, column)
    kind, params = builder_params(form)
    output = hierarchy_path(_workspace(request), table, column)
    draft = await run_in_threadpool(build, table, data, kind, params, output)
    preview(draft.hierarchy, data)  # refuses a hierarchy whose saved file a run misreads
    _store(request).put(draft)
    return RedirectResponse(_page_url(table, column) + "#draft", status_code=303)


async def load_draft(request: Request) -> Response:
    """An ARX CSV file (uploaded, or a path on this machine) becomes the column's draft."""
    async with request.form() as form:
        table, column = await _table_and_column(request, form)
        delimiter = text(form, "hierarchy_delimiter") or ";"
        path = text(form, "path")
        upload = form.get("file")
        name, raw = None, b""
        if isinstance(upload, UploadFile) and upload.filename:
            name, raw = upload.filename, await upload.read()
    if name is not None:
        draft = _uploaded(table, column, name, raw, delimiter)
    else:
        if path is None:
            raise AnonlabError(
                "file: choose a hierarchy file to upload, or type its path", parameter="file"
            )
        draft = await run_in_threadpool(
            load_file, table, column, Path(path).expanduser(), path, delimiter
        )
    _store(request).put(draft)
    return RedirectResponse(_page_url(table, column) + "#draft", status_code=303)


def _uploaded(table: LoadedTable, column: str, name: str, raw: bytes, delimiter: str) -> Draft:
    """The draft of an uploaded hierarchy file, validated as a file on disk is."""
    try:
        content = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise AnonlabError(f"hierarchy file '{name}' is not UTF-8 text: re-save it") from None
    lines: list[int] = []
    rows = parse_rows(content, name, delimiter, lines)
    hierarchy = Hierarchy(rows, source=name, lines=tuple(lines))
    return Draft(
        table_id=table.id,
        column=column,
        kind="csv",
        params={},
        source=f"file {name}",
        history=[hierarchy],
    )


async def _editable_draft(request: Request) -> tuple[FormData, LoadedTable, Draft]:
    form = await request.form()
    table, column = await _table_and_column(request, form)
    draft = _store(request).draft(table.id, column)
    if draft is None:
        raise AnonlabError(f"no hierarchy of '{column}' to edit: build or load one first")
    return form, table, draft


def _raw(form: FormData, name: str) -> str:
    """A form field's text as given (a group label may be empty: the missing value's)."""
    value = form.get(name)
    return value if isinstance(value, str) else ""


async def rename(request: Request) -> Response:
    """Rename a group of one level of the draft."""
    form, table, draft = await _editable_draft(request)
    _check_editable(draft)
    level = number(form, "level", int) or 0
    old, new = _raw(form, "group"), _raw(form, "label")
    edited = rename_group(draft.hierarchy, draft.column, level, old, new)
    draft.history.append(edited)
    draft.edits.append(f"level {level}: group '{old}' renamed '{new.strip()}'")
    return RedirectResponse(_page_url(table, draft.column) + "#draft", status_code=303)


async def move(request: Request) -> Response:
    """Move a member (a value, or a group of the level below) to another group of a level;
    at level 1 a value of the column that the hierarchy lacks is added to the group."""
    form, table, draft = await _editable_draft(request)
    _check_editable(draft)
    level = number(form, "level", int) or 0
    member, group = _raw(form, "member"), _raw(form, "target")
    data = await _column_data(request, table, draft.column)
    if level == 1 and member not in draft.hierarchy and member in data.counts:
        edited = add_value(draft.hierarchy, draft.column, member, group)
        done = f"level 1: '{member}' (not in the hierarchy) added to group '{group.strip()}'"
    else:
        edited = move_member(draft.hierarchy, draft.column, level, member, group)
        done = f"level {level}: '{member}' moved to group '{group.strip()}'"
    draft.history.append(edited)
    draft.edits.append(done)
    return RedirectResponse(_page_url(table, draft.column) + "#draft", status_code=303)


def _check_editable(draft: Draft) -> None:
    if not draft.editable:
        raise AnonlabError(
            f"the groups of a {draft.kind} hierarchy are computed from the values: change "
            "its settings instead (grouping, taxonomy and loaded hierarchies can be edited)"
        )


async def undo(request: Request) -> Response:
    """Drop the draft's last edit."""
    _, table, draft = await _editable_draft(request)
    if not draft.edits:
        raise AnonlabError("nothing to undo: the hierarchy has no edit")
    draft.history.pop()
    draft.edits.pop()
    return RedirectResponse(_page_url(table, draft.column) + "#draft", status_code=303)


async def save(request: Request) -> Response:
    """Write the draft as ARX CSV into the workspace and attach it to the column."""
    _, table, draft = await _editable_draft(request)
    await run_in_threadpool(save_draft, _workspace(request), table, draft)
    return RedirectResponse(_page_url(table, draft.column) + "#saved", status_code=303)


async def detach(request: Request) -> Response:
    """Forget the column's hierarchy (the saved file stays until the session ends)."""
    form = await request.form()
    table, column = await _table_and_column(request, form)
    table.hierarchies.pop(column, None)
    _store(request).drop(table.id, column)
    return RedirectResponse(_page_url(table, column), status_code=303)


async def download(request: Request) -> Response:
    """The column's saved hierarchy file, as an attachment."""
    table, column = await _table_and_column(request)
    attached = table.hierarchies.get(column)
    if attached is None or not Path(attached).is_file():
        raise AnonlabError(f"no hierarchy of '{column}' is saved: save it first")
    body = Path(attached).read_bytes()
    name = Path(hierarchy_path(_workspace(request), table, column)).name
    return Response(
        body,
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


ROUTES: list[BaseRoute] = [
    Route("/hierarchies", overview),
    Route("/hierarchies/{table}", column_page),
    Route("/hierarchies/{table}/preview", preview_fragment, methods=["POST"]),
    Route("/hierarchies/{table}/build", build_draft, methods=["POST"]),
    Route("/hierarchies/{table}/load", load_draft, methods=["POST"]),
    Route("/hierarchies/{table}/rename", rename, methods=["POST"]),
    Route("/hierarchies/{table}/move", move, methods=["POST"]),
    Route("/hierarchies/{table}/undo", undo, methods=["POST"]),
    Route("/hierarchies/{table}/save", save, methods=["POST"]),
    Route("/hierarchies/{table}/detach", detach, methods=["POST"]),
    Route("/hierarchies/{table}/download", download),
]
