"""Logical plan operators for the SPJ core and a printer for them.

Expressions inside operators are sqlglot trees whose columns are qualified by
scan alias (``alias.column``). Operators are plain dataclasses; the rule
modules in ``idivm.rules`` give each its i-diff propagation rules.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterator

from sqlglot import exp

from .placeholders import CACHE, printable
from ..names import PART_SCHEMA
from .tables import TableInfo


@dataclass
class Scan:
    alias: str
    table: TableInfo

    @property
    def ids(self) -> list[tuple[str, str]]:
        """ID inference (Table 1): SCAN(R) -> key(R)."""
        return [(self.alias, k) for k in self.table.key]


# The row number that identifies a part's rows (PartScan) and the rows of a maintained view without
# a primary key of its own columns, which views over it read (engines/postgres/materialize.py).
ROW_KEY = "__idivm_row"


@dataclass
class PartScan(Scan):
    """A subquery that aggregates, read like a base table: joined with other tables (aggregation
    below a join) or aggregated again (nested aggregation). Its grouped plan (`plan`) is maintained
    first, as one of the view's own tables (`part`: "part_<k>", the table self.part_<k>), by the
    rules of any grouped view; what that maintenance changed in its rows is the i-diff the
    operators above read, as they read a base table's (idIVM's rules need of an input only its
    post-state and the i-diff of its changes, Section 5). Its rows are identified by a row
    number (ROW_KEY), never NULL where group keys may be. `definition` is the subquery as the
    frontend qualified it: the part's query over base tables, for what asks PostgreSQL about a
    query that reads the part before the part exists (column types, volatility)."""

    plan: "Aggregate | None" = None
    part: str = ""
    definition: exp.Select | None = None


@dataclass
class Join:
    """Inner theta-join; a comma join is a Join with no conjuncts."""

    left: "Node"
    right: "Node"
    conjuncts: list[exp.Expression] = field(default_factory=list)


@dataclass
class Select:
    child: "Node"
    conjuncts: list[exp.Expression]


@dataclass
class IdColumn:
    """A hidden ID column of the maintained table: the key column of one scan."""

    scan: str
    column: str
    name: str


@dataclass
class SubqueryPredicate:
    """An EXISTS or IN subquery over a base table R, or an inner join R ⋈ S ⋈ ..., in the view's
    WHERE (semijoin/antijoin).

    Its conjunct stays in the plan as an opaque condition for the rules of the other
    operators; changes of R (or of a table joined to it) affect the outer rows that ``affected``
    selects (see rules/semijoin.py). ``alias`` is idivm's own alias for R inside the
    subquery; ``joined`` the others' (alias, table), their join conditions part of ``where``."""

    alias: str
    table: TableInfo
    where: exp.Expression | None  # the subquery's WHERE (and its joins' ON), over its aliases and outer scans
    in_lhs: exp.Expression | None = None  # for `lhs [NOT] IN (SELECT col ...)`
    in_col: exp.Expression | None = None
    scalar: exp.Expression | None = None  # a scalar subquery's aggregate (the higher-order strategy's plans keep them)
    joined: list[tuple[str, TableInfo]] = field(default_factory=list)
    parts: list = field(default_factory=list)  # the PartScans among its tables (an aggregating subquery in its FROM)

    def tables(self) -> list[tuple[str, TableInfo]]:
        """Every (alias, table) the subquery reads, R first."""
        return [(self.alias, self.table)] + list(self.joined)

    def affected(self) -> exp.Expression:
        """Outer rows whose membership may change when an R row with these values appears or goes.

        EXISTS: the subquery's condition holds for them. IN: additionally the value matches, or
        either side is NULL (NOT IN turns NULL for every row once the set holds a NULL)."""
        parts = [self.where.copy()] if self.where is not None else []
        if self.in_col is not None:
            col, lhs = self.in_col, self.in_lhs
            parts.append(exp.Paren(this=exp.or_(
                exp.NullSafeEQ(this=col.copy(), expression=lhs.copy()),
                exp.Is(this=col.copy(), expression=exp.Null()),
                exp.Is(this=lhs.copy(), expression=exp.Null()), copy=False)))
        if not parts:
            return exp.true()
        return exp.and_(*[exp.Paren(this=p) for p in parts], copy=False)  # fresh copies: no second copy


@dataclass
class Project:
    """Generalized projection; after pass 1 it also outputs the hidden ID columns.

    ``stable`` names outputs that must never be updated in place (the group keys of an
    intermediate cache below an aggregate): an update of an attribute they read becomes a
    delete plus an insert, so every row change reports its old and its new group."""

    child: "Node"
    outputs: list[tuple[str, exp.Expression]]
    ids: list[IdColumn] = field(default_factory=list)
    stable: frozenset[str] = frozenset()
    subqueries: list[SubqueryPredicate] = field(default_factory=list)

    def never_null_outputs(self) -> frozenset[str]:
        """Outputs that cannot be NULL: a base column declared NOT NULL or in its primary key (joins
        are inner, so nothing below makes it NULL), or a COALESCE with such an argument (NATURAL/USING
        joins). Group keys among them are matched by plain equality; a maintained table declares
        them NOT NULL, so that a grouped view over it can have a primary key."""
        by_alias = {s.alias: s.table for s in scans(self)}

        def never(e: exp.Expression) -> bool:
            if isinstance(e, exp.Paren):
                return never(e.this)
            if isinstance(e, exp.Coalesce):
                return any(never(a) for a in [e.this, *e.expressions])
            return isinstance(e, exp.Column) and e.table in by_alias and by_alias[e.table].never_null(e.name)

        return frozenset(n for n, e in self.outputs if never(e))


@dataclass
class Union:
    """Bag union of SPJ branches (UNION ALL, footnote 2 of the paper).

    Rows carry the branch attribute b (hidden column ``__idivm_b``); the IDs are the
    union of the branches' IDs plus b (Table 1). Each branch keeps its own hidden ID
    columns (NULL in other branches' rows) and is maintained by its own rules."""

    branches: list[Project]
    outer_join: bool = False  # the branches of an outer join (frontend/outer_joins.py), not a written UNION

    @property
    def outputs(self) -> list[tuple[str, exp.Expression]]:
        return self.branches[0].outputs

    def never_null_outputs(self) -> frozenset[str]:
        """Outputs that no branch can make NULL (a NULL-padded column of an outer join's branch is a
        typed NULL literal, never a column: frontend/outer_joins.py)."""
        return frozenset.intersection(*[b.never_null_outputs() for b in self.branches])


BRANCH_COLUMN = "__idivm_b"


@dataclass
class Aggregate:
    """γ_G,f(X) with its final projection and HAVING (Table 7), over an intermediate cache.

    The cache (Example 4.6) is the SPJ input below the aggregate, projected onto the group
    keys ``g<i>`` and the aggregate arguments ``a<j>``; ``outputs`` and ``having`` are written
    over cache placeholders (``placeholders.CACHE``). The view's IDs are the group keys (Table 1)."""

    cache: "Project | Union"
    keys: list[str]  # cache columns that are group keys, in GROUP BY order
    outputs: list[tuple[str, exp.Expression]]
    having: exp.Expression | None = None
    # why the intermediate cache is skipped (footnote 6: a many-to-many join), None if it is kept
    no_cache: str | None = None
    # scalar subqueries of HAVING, each in `having` as a placeholders.SUBQUERY, their correlated
    # columns written as cache placeholders of group keys (the higher-order strategy's plans keep them)
    having_subqueries: list[SubqueryPredicate] = field(default_factory=list)

    @property
    def id_names(self) -> list[str]:
        return [f"__idivm_{k}" for k in self.keys]

    def never_null_keys(self) -> frozenset[str]:
        """Group keys that cannot be NULL: a column of a base table that is declared NOT NULL or in
        its primary key (joins are inner, so nothing below makes it NULL; an outer join's padded
        columns are NULL literals), or a COALESCE with such an argument (NATURAL/USING joins).
        Their affected groups are matched by plain equality, which PostgreSQL can hash or look up
        in an index."""
        return frozenset(k for k in self.keys if k in self.cache.never_null_outputs())

    def never_null_outputs(self) -> frozenset[str]:
        """Outputs of the grouped view that cannot be NULL: never-null group keys and COUNTs."""
        keys = self.never_null_keys()

        def never(e: exp.Expression) -> bool:
            if isinstance(e, exp.Paren):
                return never(e.this)
            if isinstance(e, exp.Count):
                return True
            return CACHE.marks(e) and e.name in keys

        return frozenset(n for n, e in self.outputs if never(e))

    def sum_count_args(self) -> dict[str, bool] | None:
        """If every aggregate is COUNT(*), COUNT(a), SUM(a) or AVG(a) (no DISTINCT) and there is
        no HAVING, the cache columns they read, each with whether it is summed; else None.

        Such views can use the specialized rules of Tables 9, 11 and 12 (see
        rules/aggregate_sum.py); HAVING needs the state of groups that are not in the view."""
        if self.having is not None or not isinstance(self.cache, (Project, Union)) or self.no_cache:
            return None
        args: dict[str, bool] = {}
        for _, e in self.outputs:
            for agg in e.find_all(exp.AggFunc):
                if not isinstance(agg, (exp.Count, exp.Sum, exp.Avg)):
                    return None
                arg = agg.this
                if isinstance(arg, exp.Star) or (isinstance(agg, exp.Count) and arg is None):
                    continue
                if not CACHE.marks(arg):
                    return None  # DISTINCT, or an expression left over the cache
                args[arg.name] = args.get(arg.name, False) or not isinstance(agg, exp.Count)
        return args


Node = "Scan | Join | Select | Project | Union"


def children(node: Node) -> list[Node]:
    if isinstance(node, Scan):
        return []
    if isinstance(node, Union):
        return list(node.branches)
    if isinstance(node, Join):
        return [node.left, node.right]
    return [node.child]


def scans(node: Node) -> list[Scan]:
    """Scans below (and including) node, left to right."""
    if isinstance(node, Scan):
        return [node]
    return [s for c in children(node) for s in scans(c)]


def base_tables(node) -> list[TableInfo]:
    """Every base table a plan reads: its scans (a part's: those of its own plan) and the tables of
    its EXISTS/IN subqueries."""
    if isinstance(node, Aggregate):
        return base_tables(node.cache) + [q.table for q in node.having_subqueries]
    out = [t for s in scans(node) for t in (base_tables(s.plan) if isinstance(s, PartScan) else [s.table])]
    scanned = {s.part for s in scans(node) if isinstance(s, PartScan)}
    read = part_scans(node)
    out += [t for p in read if p.part not in scanned for t in base_tables(p.plan)]  # read in a subquery only
    parts = {p.table for p in read}
    for n in walk(node):
        if isinstance(n, Project):  # a subquery over a part (an outer join's NOT EXISTS, EXISTS / IN over a
            out += [t for q in n.subqueries for _, t in q.tables() if t not in parts]  # grouping) reads its table
    return out


def part_scans(plan) -> list[PartScan]:
    """The parts a view's plan reads (PartScan), in the plan's order, each once (an outer join's
    branches share theirs), then those only its EXISTS / IN subqueries read."""
    node = plan.cache if isinstance(plan, Aggregate) else plan
    found = [s for s in scans(node) if isinstance(s, PartScan)]
    found += [p for n in walk(node) if isinstance(n, Project) for q in n.subqueries for p in q.parts]
    return list({s.part: s for s in found}.values())


def all_parts(plan) -> list[PartScan]:
    """Every part a view's plan reads, its parts' own parts (a part in the FROM of a part) before
    the part that reads them: the order their programs run and their tables are created in."""
    out: dict[str, PartScan] = {}
    for s in part_scans(plan):
        for p in all_parts(s.plan) + [s]:
            out.setdefault(p.part, p)
    return list(out.values())


def bind_parts(plan, view_id: int, own_table) -> None:
    """Name each part's table as registration made it (own_table(view_id, part) -> (schema, name)),
    in place: the queries that fill the view's tables then read it like any table."""
    def bound(t: TableInfo) -> TableInfo:
        return replace(t, **dict(zip(("schema", "name"), own_table(view_id, t.name)))) if t.schema == PART_SCHEMA else t

    def rename(e: exp.Expression | None) -> None:
        for t in e.find_all(exp.Table) if e is not None else []:
            if t.db == PART_SCHEMA:
                schema, name = own_table(view_id, t.name)
                t.set("db", exp.to_identifier(schema, quoted=True))
                t.set("this", exp.to_identifier(name, quoted=True))

    for s in part_scans(plan):
        s.table = bound(s.table)
    for node in walk(plan.cache if isinstance(plan, Aggregate) else plan):  # an outer join's NOT EXISTS over a part
        for c in getattr(node, "conjuncts", []):
            rename(c)
        for sq in node.subqueries if isinstance(node, Project) else []:
            sq.table, sq.joined = bound(sq.table), [(a, bound(t)) for a, t in sq.joined]
            rename(sq.where)


def has_nested_aggregates(plan) -> bool:
    """Whether a plan keeps a scalar subquery compared in WHERE or HAVING (a nested aggregate)."""
    return bool(nested_aggregates(plan))


def nested_aggregates(plan) -> list[SubqueryPredicate]:
    """The scalar subqueries compared in WHERE or HAVING that a plan keeps (the higher-order
    strategy's plans: the first-order ones read them decorrelated into parts)."""
    where = [sq for p in walk(plan.cache if isinstance(plan, Aggregate) else plan)
             if isinstance(p, Project) for sq in p.subqueries if sq.scalar is not None]
    return where + (list(plan.having_subqueries) if isinstance(plan, Aggregate) else [])


def has_subquery(e: exp.Expression) -> bool:
    return e.find(exp.Exists, exp.Subquery) is not None


def walk(node: Node) -> Iterator[Node]:
    yield node
    for c in children(node):
        yield from walk(c)


def conjuncts_below(node: Node) -> list[exp.Expression]:
    """All selection/join conjuncts in the subtree rooted at node."""
    own = list(node.conjuncts) if isinstance(node, (Join, Select)) else []
    return own + [c for ch in children(node) for c in conjuncts_below(ch)]


def refs(expression: exp.Expression) -> set[tuple[str, str]]:
    """(scan alias, column) pairs an expression reads."""
    return {(c.table, c.name) for c in expression.find_all(exp.Column)}


def parent_chain(root: Node, target: Node) -> list[Node]:
    """Operators from target's parent up to root (the path a base i-diff travels)."""
    path: list[Node] = []

    def visit(node: Node) -> bool:
        if node is target:
            return True
        for c in children(node):
            if visit(c):
                path.append(node)
                return True
        return False

    visit(root)
    return path


def sql(e: exp.Expression) -> str:
    """e as the plan printer shows it, placeholders spelled out."""
    return printable(e).sql("postgres")


def format_plan(node, indent: int = 0) -> str:
    """Human-readable plan with IDs (what `idivm explain` prints)."""
    pad = "  " * indent
    if isinstance(node, Aggregate):
        outs = ", ".join(f"{sql(e)} AS {n}" for n, e in node.outputs)
        having = f"  HAVING {sql(node.having)}" if node.having is not None else ""
        keys = ", ".join(node.keys) or "()"
        if node.no_cache:
            how = "general rule: affected groups recomputed from the base tables"
            cache = f"NO INTERMEDIATE CACHE (footnote 6: {node.no_cache}); its input:"
        else:
            how = ("specialized SUM/COUNT/AVG rules over operator caches if the summed arguments are exact numbers, "
                   "else the general rule" if node.sum_count_args() is not None
                   else "general rule: affected groups recomputed from the cache")
            cache = "INTERMEDIATE CACHE (an SPJ view maintained by the rules below)"
        return "\n".join([
            f"{pad}PROJECT {outs}{having}",
            f"{pad}  GROUP BY {keys}  IDs: {{{keys}}}  ({how})",
            f"{pad}    {cache}",
            format_plan(node.cache, indent + 3),
        ])
    if isinstance(node, Union):
        parts = [f"{pad}UNION ALL  IDs: {{b, " + ", ".join(i.name for b in node.branches for i in b.ids) + "}"]
        for k, b in enumerate(node.branches, 1):
            parts.append(f"{pad}  branch b = {k}:")
            parts.append(format_plan(b, indent + 2))
        return "\n".join(parts)
    if isinstance(node, PartScan):
        return "\n".join([f"{pad}SCAN PART self.{node.part} AS {node.alias}  IDs: {_ids(node.ids)}  (a subquery that "
                          "aggregates, maintained first as the view's own table; its changes are the i-diff read here)",
                          format_plan(node.plan, indent + 2)])
    if isinstance(node, Scan):
        head = f"{pad}SCAN {node.table.qualified} AS {node.alias}  IDs: {_ids(node.ids)}"
    elif isinstance(node, Join):
        cond = " AND ".join(sql(c) for c in node.conjuncts) or "TRUE"
        head = f"{pad}JOIN ON {cond}  IDs: {_ids(node_ids(node))}"
    elif isinstance(node, Select):
        head = f"{pad}SELECT WHERE {' AND '.join(sql(c) for c in node.conjuncts)}  IDs: {_ids(node_ids(node))}"
    else:
        outs = ", ".join(f"{sql(e)} AS {n}" for n, e in node.outputs)
        hidden = ", ".join(f"{i.scan}.{i.column} AS {i.name}" for i in node.ids)
        head = f"{pad}PROJECT {outs}" + (f"  + hidden IDs: {hidden}" if hidden else "")
    return "\n".join([head] + [format_plan(c, indent + 1) for c in children(node)])


def node_ids(node: Node) -> list[tuple[str, str]]:
    """ID inference (pass 1, Table 1): σ and π keep their input's IDs, ⋈ unions both sides'."""
    return [i for s in scans(node) for i in s.ids]


def _ids(ids: list[tuple[str, str]]) -> str:
    return "{" + ", ".join(f"{a}.{c}" for a, c in ids) + "}"
