"""Pass 3 output: turning composed i-diffs into SQL statements (PostgreSQL).

Identifiers are quoted through sqlglot; expressions from the view are
re-bound (scan columns -> i-diff instance or base-table aliases) as sqlglot
trees and rendered, never pasted as text.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from ..algebra.plan import BRANCH_COLUMN, IdColumn, Project, refs, scans
from ..algebra.tables import TableInfo
from ..rules.idiff import PRE_MARK, DiffSchema, IDiff
from ..sqltext import DIALECT, ident, qualified

DIFF_ALIAS = "d"
VIEW_ALIAS = "v"
KIND_CODE = {"+": "I", "-": "D", "u": "U"}


def delta_table(captured_id: int) -> str:
    """The per-maintenance i-diff instance table of one captured base table."""
    return f"pg_temp.{ident(f'idivm_delta_{captured_id}')}"


@dataclass
class Target:
    """Everything rendering needs to know about the view being maintained."""

    schema: str
    name: str
    plan: Project
    captured: dict[tuple[str, str], int]  # (schema, table) -> captured table id
    branch: int | None = None  # UNION ALL branch number b, whose rows this target maintains

    @property
    def table(self) -> str:
        return qualified(self.schema, self.name)

    @property
    def scan_alias(self) -> dict[str, str]:
        return {s.alias: f"t{i}" for i, s in enumerate(scans(self.plan), 1)}

    @property
    def tables(self) -> dict[str, TableInfo]:
        return {s.alias: s.table for s in scans(self.plan)}

    def captured_id(self, scan: str) -> int:
        t = self.tables[scan]
        return self.captured[(t.schema, t.name)]

    def delta_of(self, scan: str) -> str:
        return delta_table(self.captured_id(scan))

    def base(self, scan: str) -> str:
        return f"{self.tables[scan].qualified} AS {ident(self.scan_alias[scan])}"

    def ids_of(self, scan: str) -> list[IdColumn]:
        return [i for i in self.plan.ids if i.scan == scan]

    @property
    def columns(self) -> list[str]:
        return [n for n, _ in self.plan.outputs] + [i.name for i in self.plan.ids] + (
            [BRANCH_COLUMN] if self.branch is not None else [])


def bind_with(mapping: dict[str, tuple[str, str]], pre_alias: str | None = None):
    """Rebind scan columns: scan -> (SQL alias, column prefix).

    A pre() mark selects the 'pre__' image, read from pre_alias (the i-diff) if given,
    else from the scan's own alias."""

    def fn(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, exp.Column):
            return node
        t = node.table
        if t.startswith(PRE_MARK):
            return exp.column(f"pre__{node.name}", pre_alias or mapping[t[len(PRE_MARK):]][0], quoted=True)
        if t not in mapping:  # a column of an EXISTS/IN subquery's own table: stays as written
            return node
        alias, prefix = mapping[t]
        return exp.column(f"{prefix}{node.name}", alias, quoted=True)

    return lambda e: e.copy().transform(fn).sql(DIALECT)


def base_mapping(target: Target) -> dict[str, tuple[str, str]]:
    """Every scan read from its post-state base table (its alias, no column prefix)."""
    return {a: (sql_alias, "") for a, sql_alias in target.scan_alias.items()}


def binder(target: Target, origin: str | None, image: str = "post", merged: tuple[str, ...] = ()):
    """Origin scan (and scans merged into it by minimization) -> its i-diff instance (post- or
    pre-image columns), other scans -> base-table aliases."""
    mapping = base_mapping(target)
    if origin is not None:
        for scan in (origin, *merged):
            mapping[scan] = (DIFF_ALIAS, f"{image}__")
    return bind_with(mapping)


def schema_filter(schema: DiffSchema) -> str:
    kind = f"{ident(DIFF_ALIAS)}.{ident('kind')} = '{KIND_CODE[schema.kind]}'"
    if schema.kind != "u":
        return kind
    changed = " OR ".join(
        f"{ident(DIFF_ALIAS)}.{ident('pre__' + a)} IS DISTINCT FROM {ident(DIFF_ALIAS)}.{ident('post__' + a)}"
        for a in schema.attrs
    )
    return f"{kind} AND ({changed})"


def _id_value(target: Target, i: IdColumn, origin: str | None, image: str | None, merged: tuple[str, ...]) -> str:
    """An ID column's value: from the i-diff (image given) for the origin and the scans merged
    into it, else from the scan's base-table alias."""
    scan = origin if i.scan in merged else i.scan
    if image is not None and scan == origin:
        return f"{ident(DIFF_ALIAS)}.{ident(image + '__' + i.column)}"
    return f"{ident(target.scan_alias[scan])}.{ident(i.column)}"


def _where(parts: list[str]) -> str:
    """Conjunction of rendered predicates; each is parenthesized so no operator precedence can leak."""
    return " AND ".join(f"({p})" for p in parts) or "TRUE"


def insert_rows(target: Target, origin: str, joined: list[str], filters: list[str], bind,
                from_sql: str | None = None, id_image: str | None = "post", merged: tuple[str, ...] = ()) -> str:
    """INSERT INTO view SELECT outputs, IDs FROM Δ[origin] ⋈ joined WHERE filters (APPLY Δ+).

    id_image None reads the origin's IDs from its base table alias too (the semijoined form)."""
    outs = [f"{bind(e)} AS {ident(n)}" for n, e in target.plan.outputs]
    outs += [f"{_id_value(target, i, origin, id_image, merged)} AS {ident(i.name)}"
             for i in target.plan.ids]
    if target.branch is not None:
        outs.append(f"{int(target.branch)} AS {ident(BRANCH_COLUMN)}")
    froms = [from_sql or f"{target.delta_of(origin)} AS {ident(DIFF_ALIAS)}"] + [target.base(j) for j in joined]
    cols = ", ".join(ident(c) for c in target.columns)
    conflict = ", ".join(ident(i.name) for i in target.plan.ids)
    if target.branch is not None:  # the branch's partial unique index
        conflict += f") WHERE ({ident(BRANCH_COLUMN)} = {int(target.branch)}"
    return (
        f"INSERT INTO {target.table} AS {ident(VIEW_ALIAS)} ({cols})\nSELECT {', '.join(outs)}\n"
        f"FROM {', '.join(froms)}\nWHERE {_where(filters)}\nON CONFLICT ({conflict}) DO NOTHING"
    )


def render_idiff(target: Target, d: IDiff) -> tuple[int, str]:
    """(phase, SQL) applying one composed view-level i-diff."""
    bind = binder(target, d.origin, merged=d.merged)
    filters = [schema_filter(d.schema)] + [bind(w) for w in d.where]
    v, dd = ident(VIEW_ALIAS), ident(DIFF_ALIAS)
    if d.kind == "+" and d.semijoined:
        # R^post ⋉_I Δ: the origin's columns come from its base table, matched by key to the i-diff
        mapping = base_mapping(target)
        for m in d.merged:
            mapping[m] = mapping[d.origin]
        bind_base = bind_with(mapping, pre_alias=DIFF_ALIAS)
        alias = ident(target.scan_alias[d.origin])
        keys = [f"{alias}.{ident(k)} = {dd}.{ident('post__' + k)}" for k in target.tables[d.origin].key]
        filters = [schema_filter(d.schema)] + keys + [bind_base(w) for w in d.where]
        from_sql = f"{target.delta_of(d.origin)} AS {dd}, {target.base(d.origin)}"
        return 2, insert_rows(target, d.origin, list(d.joined), filters, bind_base, from_sql=from_sql, id_image=None,
                              merged=d.merged)
    if d.kind == "+":
        return 2, insert_rows(target, d.origin, list(d.joined), filters, bind, merged=d.merged)
    match = [f"{v}.{ident(i.name)} = {dd}.{ident(('pre__' if d.kind == '-' else 'post__') + i.column)}"
             for i in target.ids_of(d.origin)]
    if d.kind == "-":
        return 0, (
            f"DELETE FROM {target.table} AS {v}\nUSING {target.delta_of(d.origin)} AS {dd}\n"
            f"WHERE {_where(filters + match)}"
        )
    from ..rules.project import updated_outputs

    names = updated_outputs(target.plan, d)
    exprs = dict(target.plan.outputs)
    others = sorted({a for n in names for a, _ in refs(exprs[n]) if a != d.origin})
    sets = ", ".join(f"{ident(n)} = {bind(exprs[n])}" for n in names)
    other_match = [
        f"{ident(target.scan_alias[o])}.{ident(i.column)} = {v}.{ident(i.name)}" for o in others for i in target.ids_of(o)
    ]
    froms = [f"{target.delta_of(d.origin)} AS {dd}"] + [target.base(o) for o in others]
    return 1, (
        f"UPDATE {target.table} AS {v} SET {sets}\nFROM {', '.join(froms)}\n"
        f"WHERE {_where(filters + match + other_match)}"
    )


def full_query(target: Target, all_ids: list[tuple[str, str]] | None = None) -> str:
    """The defining query extended with hidden IDs, over post-state base tables (initial materialization).

    For a UNION ALL branch, all_ids lists every branch's ID columns with their types: other
    branches' are typed NULLs here (an untyped NULL would resolve to text across branches)."""
    from ..algebra.plan import conjuncts_below

    bind = binder(target, None)
    outs = [f"{bind(e)} AS {ident(n)}" for n, e in target.plan.outputs]
    own = {i.name: f"{ident(target.scan_alias[i.scan])}.{ident(i.column)}" for i in target.plan.ids}
    for n, sql_type in all_ids or [(n, "") for n in own]:
        outs.append(f"{own.get(n) or f'CAST(NULL AS {sql_type})'} AS {ident(n)}")
    if target.branch is not None:
        outs.append(f"{int(target.branch)} AS {ident(BRANCH_COLUMN)}")
    froms = [target.base(s.alias) for s in scans(target.plan)]
    where = [bind(c) for c in conjuncts_below(target.plan)]
    return f"SELECT {', '.join(outs)}\nFROM {', '.join(froms)}\nWHERE {_where(where)}"
