"""An SPJ view (or intermediate cache, or UNION ALL branch) as compilation sees it: its plan, its
scans' aliases and base tables, and the binding of the view's expressions to relations.

Expressions from the view are re-bound (scan columns -> i-diff instance or base-table aliases) as
sqlglot trees; relations stay abstract (program/relations.py) until an engine renders the steps.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from ..algebra.placeholders import PRE
from ..algebra.plan import BRANCH_COLUMN, IdColumn, Project, conjuncts_below, scans
from ..algebra.tables import TableInfo
from ..program import relations as R
from ..program.trees import alias, col, num, rebuilt, select

DIFF_ALIAS = "d"
VIEW_ALIAS = "v"


class MaintainedTable:
    """A target's table (view, cache or UNION ALL view), which its program's steps write."""

    schema: str
    name: str

    def ref(self, alias: str | None = VIEW_ALIAS) -> exp.Table:
        """The maintained table as an abstract relation."""
        return R.view(self.schema, self.name, alias)


@dataclass
class SpjTarget(MaintainedTable):
    """An SPJ view (a grouped view's intermediate cache, a UNION ALL branch) as the i-diff rules
    maintain it: its plan with IDs, the table its rows live in (symbolic until bound), and for a
    branch its number."""

    schema: str
    name: str
    plan: Project
    branch: int | None = None  # UNION ALL branch number b, whose rows this target maintains
    parts: list = field(default_factory=list)  # the targets of the parts it reads (rules/part.py), maintained first

    @property
    def operator(self) -> Project:
        return self.plan

    @property
    def scan_alias(self) -> dict[str, str]:
        return {s.alias: f"t{i}" for i, s in enumerate(scans(self.plan), 1)}

    @property
    def tables(self) -> dict[str, TableInfo]:
        return {s.alias: s.table for s in scans(self.plan)}

    def table_key(self, scan: str) -> str:
        """The scan's base table as a program names it (the table whose i-diff drives a step)."""
        t = self.tables[scan]
        return R.table_key(t.schema, t.name)

    def delta_of(self, scan: str, alias: str | None = DIFF_ALIAS) -> exp.Table:
        t = self.tables[scan]
        return R.delta(t.schema, t.name, alias)

    def base(self, scan: str) -> exp.Table:
        t = self.tables[scan]
        return R.base(t.schema, t.name, self.scan_alias[scan])

    def ids_of(self, scan: str) -> list[IdColumn]:
        return [i for i in self.plan.ids if i.scan == scan]

    @property
    def columns(self) -> list[str]:
        return [n for n, _ in self.plan.outputs] + [i.name for i in self.plan.ids] + (
            [BRANCH_COLUMN] if self.branch is not None else [])

    def query(self) -> exp.Select:
        """The view's defining query over post-state base tables, with its IDs (its initial contents)."""
        return full_query(self)


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
        if PRE.marks(node):
            return col(pre_alias or mapping[t][0], R.pre(node.name))
        if t not in mapping:  # a column of an EXISTS/IN subquery's own table: stays as written
            return node
        alias_, prefix = mapping[t]
        return col(alias_, f"{prefix}{node.name}")

    return lambda e: rebuilt(e, fn)


def base_mapping(target: SpjTarget) -> dict[str, tuple[str, str]]:
    """Every scan read from its post-state base table (its alias, no column prefix)."""
    return {a: (sql_alias, "") for a, sql_alias in target.scan_alias.items()}


def binder(target: SpjTarget, origin: str | None, image: str = R.POST, merged: tuple[str, ...] = ()):
    """Origin scan (and scans merged into it by minimization) -> its i-diff instance (post- or
    pre-image columns), other scans -> base-table aliases."""
    mapping = base_mapping(target)
    if origin is not None:
        for scan in (origin, *merged):
            mapping[scan] = (DIFF_ALIAS, R.image_column(image, ""))
    return bind_with(mapping)


def full_query(target: SpjTarget, all_ids: list[tuple[str, str]] | None = None) -> exp.Select:
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
