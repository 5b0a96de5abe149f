"""Pass 3's output: each composed view-level i-diff (rules/idiff.py) becomes one Δ-program step:
Δ- a delete by the origin's IDs, Δu an update by them, Δ+ an insert of new rows (skipping IDs the
view holds)."""
from __future__ import annotations

from sqlglot import exp

from ..algebra.plan import BRANCH_COLUMN, IdColumn, refs
from ..program import relations as R
from ..program.steps import DeleteMatching, InsertRows, Step, UpdateMatching
from ..program.trees import alias, all_of, col, eq, num, select, shown_differently, string
from .idiff import DiffSchema, IDiff
from .project import updated_outputs
from .spj import DIFF_ALIAS, VIEW_ALIAS, SpjTarget, base_mapping, bind_with, binder


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
    return shown_differently([col(alias, R.pre(a)) for a in columns], [col(alias, R.post(a)) for a in columns])


def schema_filter(schema: DiffSchema) -> exp.Expression:
    kind = kind_is(R.KIND_CODE[schema.kind])
    if schema.kind != "u":
        return kind
    return all_of([kind, changed_any(schema.attrs)])


def _id_value(target: SpjTarget, i: IdColumn, origin: str | None, image: str | None, merged: tuple[str, ...]):
    """An ID column's value: from the i-diff (image given) for the origin and the scans merged
    into it, else from the scan's base-table alias."""
    scan = origin if i.scan in merged else i.scan
    if image is not None and scan == origin:
        return col(DIFF_ALIAS, R.image_column(image, i.column))
    return col(target.scan_alias[scan], i.column)


def insert_rows(target: SpjTarget, origin: str | None, joined: list[str], filters: list[exp.Expression], bind,
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


def idiff_step(target: SpjTarget, d: IDiff, **step) -> Step:
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
    names = updated_outputs(target.plan, d)
    exprs = dict(target.plan.outputs)
    others = sorted({a for n in names for a, _ in refs(exprs[n]) if a != d.origin})
    other_match = [eq(col(target.scan_alias[o], i.column), col(VIEW_ALIAS, i.name))
                   for o in others for i in target.ids_of(o)]
    return UpdateMatching(target=target.ref(), assignments=[(n, bind(exprs[n])) for n in names],
                          using=[target.delta_of(d.origin)] + [target.base(o) for o in others],
                          condition=all_of(filters + match + other_match), phase=1, **step)
