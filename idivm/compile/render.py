"""Pass 3 output: turning composed i-diffs into Δ-program steps.

Expressions from the view are re-bound (scan columns -> i-diff instance or
base-table aliases) as sqlglot trees; relations stay abstract
(program/relations.py) until an engine renders the steps.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from ..algebra.plan import BRANCH_COLUMN, IdColumn, Project, conjuncts_below, refs, scans
from ..algebra.tables import TableInfo
from ..program import relations as R
from ..program.steps import DeleteMatching, InsertRows, Step, UpdateMatching
from ..program.trees import alias, all_of, any_of, col, distinct_from, eq, num, select, string
from ..rules.idiff import PRE_MARK, DiffSchema, IDiff

DIFF_ALIAS = "d"
VIEW_ALIAS = "v"


@dataclass
class Target:
    """Everything rendering needs to know about the view being maintained."""

    schema: str
    name: str
    plan: Project
    captured: dict[tuple[str, str], int]  # (schema, table) -> captured table id
    branch: int | None = None  # UNION ALL branch number b, whose rows this target maintains

    def ref(self, alias: str | None = VIEW_ALIAS) -> exp.Table:
        """The maintained table (view or cache) as an abstract relation."""
        return R.view(self.schema, self.name, alias)

    @property
    def label(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def scan_alias(self) -> dict[str, str]:
        return {s.alias: f"t{i}" for i, s in enumerate(scans(self.plan), 1)}

    @property
    def tables(self) -> dict[str, TableInfo]:
        return {s.alias: s.table for s in scans(self.plan)}

    def captured_id(self, scan: str) -> int:
        t = self.tables[scan]
        return self.captured[(t.schema, t.name)]

    def delta_of(self, scan: str, alias: str | None = DIFF_ALIAS) -> exp.Table:
        t = self.tables[scan]
        return R.delta(self.captured_id(scan), alias, of=f"{t.schema}.{t.name}")

    def base(self, scan: str) -> exp.Table:
        t = self.tables[scan]
        return R.base(t.schema, t.name, self.scan_alias[scan])

    def ids_of(self, scan: str) -> list[IdColumn]:
        return [i for i in self.plan.ids if i.scan == scan]

    @property
    def columns(self) -> list[str]:
        return [n for n, _ in self.plan.outputs] + [i.name for i in self.plan.ids] + (
            [BRANCH_COLUMN] if self.branch is not None else [])


def bind_with(mapping: dict[str, tuple[str, str]], pre_alias: str | None = None):
    """Rebind scan columns: scan -> (alias, column prefix); returns a function from a view expression
    to its rebound tree.

    A pre() mark selects the pre-image, read from pre_alias (the i-diff) if given, else from the
    scan's own alias."""

    def fn(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and node.db and R.relation_of(node) is None:
            # the table of an EXISTS/IN subquery: a base table like the view's scans
            return R.base(node.db, node.name, node.alias or None)
        if not isinstance(node, exp.Column):
            return node
        t = node.table
        if t.startswith(PRE_MARK):
            return col(pre_alias or mapping[t[len(PRE_MARK):]][0], R.pre(node.name))
        if t not in mapping:  # a column of an EXISTS/IN subquery's own table: stays as written
            return node
        alias_, prefix = mapping[t]
        return col(alias_, f"{prefix}{node.name}")

    return lambda e: e.copy().transform(fn)


def base_mapping(target: Target) -> dict[str, tuple[str, str]]:
    """Every scan read from its post-state base table (its alias, no column prefix)."""
    return {a: (sql_alias, "") for a, sql_alias in target.scan_alias.items()}


def binder(target: Target, origin: str | None, image: str = R.POST, merged: tuple[str, ...] = ()):
    """Origin scan (and scans merged into it by minimization) -> its i-diff instance (post- or
    pre-image columns), other scans -> base-table aliases."""
    mapping = base_mapping(target)
    if origin is not None:
        for scan in (origin, *merged):
            mapping[scan] = (DIFF_ALIAS, R.image_column(image, ""))
    return bind_with(mapping)


def kind_is(*codes: str, alias: str = DIFF_ALIAS) -> exp.Expression:
    """The i-diff row's change kind is one of codes."""
    k = col(alias, R.KIND_COLUMN)
    if len(codes) == 1:
        return eq(k, string(codes[0]))
    return exp.In(this=k, expressions=[string(c) for c in codes])


def kind_is_not(code: str, alias: str = DIFF_ALIAS) -> exp.Expression:
    return exp.NEQ(this=col(alias, R.KIND_COLUMN), expression=string(code))


def changed_any(columns, alias: str = DIFF_ALIAS) -> exp.Expression:
    """Some of the columns differ between the i-diff row's pre- and post-image."""
    return any_of([distinct_from(col(alias, R.pre(a)), col(alias, R.post(a))) for a in columns])


def schema_filter(schema: DiffSchema) -> exp.Expression:
    kind = kind_is(R.KIND_CODE[schema.kind])
    if schema.kind != "u":
        return kind
    return all_of([kind, changed_any(schema.attrs)])


def _id_value(target: Target, i: IdColumn, origin: str | None, image: str | None, merged: tuple[str, ...]):
    """An ID column's value: from the i-diff (image given) for the origin and the scans merged
    into it, else from the scan's base-table alias."""
    scan = origin if i.scan in merged else i.scan
    if image is not None and scan == origin:
        return col(DIFF_ALIAS, R.image_column(image, i.column))
    return col(target.scan_alias[scan], i.column)


def insert_rows(target: Target, origin: str | None, joined: list[str], filters: list[exp.Expression], bind,
                froms: list[exp.Expression] | None = None, id_image: str | None = R.POST,
                merged: tuple[str, ...] = (), **step) -> InsertRows:
    """INSERT INTO view SELECT outputs, IDs FROM Δ[origin] ⋈ joined WHERE filters (APPLY Δ+), skipping
    rows whose IDs the view holds.

    id_image None reads the origin's IDs from its base table alias too (the semijoined form)."""
    outs = [alias(bind(e), n) for n, e in target.plan.outputs]
    outs += [alias(_id_value(target, i, origin, id_image, merged), i.name) for i in target.plan.ids]
    if target.branch is not None:
        outs.append(alias(num(int(target.branch)), BRANCH_COLUMN))
    froms = (froms or [target.delta_of(origin)]) + [target.base(j) for j in joined]
    where = None
    if target.branch is not None:  # the branch's partial unique index
        where = eq(exp.column(BRANCH_COLUMN, quoted=True), num(int(target.branch)))
    return InsertRows(target=target.ref(), columns=target.columns, source=select(outs, froms, filters),
                      unique_on=[i.name for i in target.plan.ids], unique_where=where, **step)


def idiff_step(target: Target, d: IDiff, **step) -> Step:
    """The step applying one composed view-level i-diff."""
    bind = binder(target, d.origin, merged=d.merged)
    filters = [schema_filter(d.schema)] + [bind(w) for w in d.where]
    if d.kind == "+" and d.semijoined:
        # R^post ⋉_I Δ: the origin's columns come from its base table, matched by key to the i-diff
        mapping = base_mapping(target)
        for m in d.merged:
            mapping[m] = mapping[d.origin]
        bind_base = bind_with(mapping, pre_alias=DIFF_ALIAS)
        a = target.scan_alias[d.origin]
        keys = [eq(col(a, k), col(DIFF_ALIAS, R.post(k))) for k in target.tables[d.origin].key]
        filters = [schema_filter(d.schema)] + keys + [bind_base(w) for w in d.where]
        froms = [target.delta_of(d.origin), target.base(d.origin)]
        return insert_rows(target, d.origin, list(d.joined), filters, bind_base, froms=froms, id_image=None,
                           merged=d.merged, phase=2, **step)
    if d.kind == "+":
        return insert_rows(target, d.origin, list(d.joined), filters, bind, merged=d.merged, phase=2, **step)
    image = R.PRE if d.kind == "-" else R.POST
    match = [eq(col(VIEW_ALIAS, i.name), col(DIFF_ALIAS, R.image_column(image, i.column)))
             for i in target.ids_of(d.origin)]
    if d.kind == "-":
        return DeleteMatching(target=target.ref(), using=[target.delta_of(d.origin)],
                              condition=all_of(filters + match), phase=0, **step)
    from ..rules.project import updated_outputs

    names = updated_outputs(target.plan, d)
    exprs = dict(target.plan.outputs)
    others = sorted({a for n in names for a, _ in refs(exprs[n]) if a != d.origin})
    other_match = [eq(col(target.scan_alias[o], i.column), col(VIEW_ALIAS, i.name))
                   for o in others for i in target.ids_of(o)]
    return UpdateMatching(target=target.ref(), assignments=[(n, bind(exprs[n])) for n in names],
                          using=[target.delta_of(d.origin)] + [target.base(o) for o in others],
                          condition=all_of(filters + match + other_match), phase=1, **step)


def full_query(target: Target, all_ids: list[tuple[str, str]] | None = None) -> exp.Select:
    """The defining query extended with hidden IDs, over post-state base tables (initial materialization).

    For a UNION ALL branch, all_ids lists every branch's ID columns with their types: other
    branches' are typed NULLs here (an untyped NULL would resolve to text across branches)."""
    bind = binder(target, None)
    outs = [alias(bind(e), n) for n, e in target.plan.outputs]
    own = {i.name: col(target.scan_alias[i.scan], i.column) for i in target.plan.ids}
    for n, sql_type in all_ids or [(n, "") for n in own]:
        outs.append(alias(own.get(n) or exp.Cast(this=exp.null(), to=exp.DataType.build(sql_type, dialect="postgres", udt=True)), n))
    if target.branch is not None:
        outs.append(alias(num(int(target.branch)), BRANCH_COLUMN))
    froms = [target.base(s.alias) for s in scans(target.plan)]
    return select(outs, froms, [bind(c) for c in conjuncts_below(target.plan)])
