"""A view's checked SELECTs -> its logical plan with IDs (Project over Select over left-deep inner
Joins of Scans; a Union of such branches; an Aggregate over either as its cache).

Each SELECT is qualified with sqlglot against the schema provider (every column with its scan
alias, expanding *, USING and NATURAL joins), its SPJ subqueries in FROM are merged into it, and
its EXISTS / IN subqueries extracted; the stages before this are driver.py's.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.merge_subqueries import merge_subqueries
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from ..algebra.functional import many_to_many
from ..algebra.ids import infer_ids
from ..algebra.ids import hidden_name
from ..algebra.placeholders import cache_column
from ..algebra.plan import ROW_KEY, Aggregate, Join, Node, PartScan, Project, Scan, Select, Union, scans
from ..errors import UnknownObject, UnsupportedQuery
from ..names import PART_SCHEMA
from .aggregates import build_aggregate
from .checks import refuse
from .schema_checks import check_comparable, check_deterministic
from .derived_tables import typed_number_outputs
from .clauses import aggregating_subqueries, conjuncts, from_item, has_aggregation, where_conjuncts
from .outer_joins import (OUTER_SIDES, expand as expand_outer_joins, guard_derived_outputs, has_outer_join,
                          merge_filtered_sides, side_of)
from .semijoins import extract_having_subqueries, extract_subqueries
from .schema import SchemaProvider
from ..algebra.tables import TableInfo


# Without a cache, the pre-state groups are found by joining every table's pre-state, one join per
# choice of changed/unchanged rows of the other tables (2^(n-1) per table): beyond this, keep the cache.
MAX_CACHELESS_SCANS = 5


@dataclass
class CompiledView:
    sql: str
    plan: Project | Union | Aggregate  # Aggregate: the view is grouped; its cache is a Project or Union
    tables: dict[str, TableInfo]  # scan alias -> table

    @property
    def spj(self) -> Project | Union:
        """The plan maintained by the i-diff rules: the view itself, or its intermediate cache."""
        return self.plan.cache if isinstance(self.plan, Aggregate) else self.plan


def _require_names(select: exp.Select) -> None:
    for e in select.expressions:
        if isinstance(e, (exp.Alias, exp.Column, exp.Star)):
            continue
        raise UnsupportedQuery(
            f"output expression {e.sql('postgres')} needs a name; write it as `{e.sql('postgres')} AS some_name`"
        )


def build_view(schema: SchemaProvider, sql: str, selects: list[exp.Select], distinct: bool | None) -> CompiledView:
    """The view's plan from its checked SELECTs (checks.checked_branches): one SELECT (distinct is
    None), or the branches of a UNION [ALL]."""
    parts: list[PartScan] = []  # the view's parts, numbered across its branches
    if distinct is None:
        plan, aliases = _compile_select(schema, selects[0], first=True, parts=parts)
        return CompiledView(sql=sql, plan=plan, tables=aliases)
    branches: list[Project] = []
    aliases: dict[str, TableInfo] = {}
    for k, branch in enumerate(selects, 1):
        if has_aggregation(branch):  # a grouped branch is a part of the view, which a branch of its own reads
            if k > 1:  # whose outputs the first branch names: an unnamed one (count(*)) takes any name
                taken = {e.alias_or_name for e in branch.expressions}
                branch.set("expressions", [e if isinstance(e, (exp.Alias, exp.Column)) or f"c{i}_{k}" in taken
                                           else exp.alias_(e, f"c{i}_{k}") for i, e in enumerate(branch.expressions)])
            branch = exp.select(exp.Star()).from_(exp.Subquery(this=branch, alias=exp.TableAlias(
                this=exp.to_identifier(f"__idivm_branch{k}"))), copy=False)
        plan, more = _compile_select(schema, branch, first=k == 1, parts=parts)
        aliases.update(more)
        if isinstance(plan, Union):
            raise refuse("outer joins inside a UNION branch")
        if not isinstance(plan, Project):
            raise refuse("GROUP BY, aggregates or DISTINCT inside a UNION branch")
        if branches and len(plan.outputs) != len(branches[0].outputs):
            raise UnsupportedQuery(f"each UNION branch must have the same number of columns: branch {k} has "
                                   f"{len(plan.outputs)}, branch 1 has {len(branches[0].outputs)}")
        names = [n for n, _ in (branches[0] if branches else plan).outputs]
        plan.outputs = [(n, e) for n, (_, e) in zip(names, plan.outputs)]
        for pos, i in enumerate(plan.ids):  # IDs of different branches never share a column
            i.name = hidden_name(f"b{k}_{i.scan}", i.column, pos + 1000 * k)
        branches.append(plan)
    if not distinct:
        return CompiledView(sql=sql, plan=Union(branches=branches), tables=aliases)
    # UNION = DISTINCT over UNION ALL: group on every output column, over the union as the cache
    names = [n for n, _ in branches[0].outputs]
    keys = [f"g{i}" for i in range(len(names))]
    for b in branches:
        b.outputs = [(k, e) for k, (_, e) in zip(keys, b.outputs)]
        b.stable = frozenset(keys)
    agg = Aggregate(cache=Union(branches=branches), keys=keys,
                    outputs=[(n, cache_column(k)) for n, k in zip(names, keys)])
    return CompiledView(sql=sql, plan=agg, tables=aliases)




def _merge_joined_subqueries(tree: exp.Select) -> exp.Select:
    """Merge subqueries that join tables and stand on the right of a join, which sqlglot leaves.

    Inner joins commute: every ON condition moves to WHERE (a conjunct there means the same) and
    the subquery moves to the front of FROM, where merge_subqueries can merge it. With LEFT joins
    after them, the inner joins before the first LEFT one still commute: they form its preserved
    side, whose rows a WHERE conjunct over their columns keeps or drops alike before or after it
    (a scalar subquery decorrelated into a LEFT JOIN, scalar_subqueries.py, makes this shape).
    Not with RIGHT or FULL joins: those pad the inner joins' columns with NULLs, which a condition
    moved to WHERE would drop."""
    joins = tree.args.get("joins") or []
    if any(side_of(j) in ("RIGHT", "FULL") for j in joins):
        return tree  # outer joins that pad the inner joins' side do not commute with them
    for _ in range(len(joins)):
        joins = tree.args.get("joins") or []
        inner = list(itertools.takewhile(lambda j: side_of(j) not in OUTER_SIDES, joins))
        target = next((j for j in inner if isinstance(j.this, exp.Subquery)), None)
        src = tree.args.get("from_") or tree.args.get("from")
        if target is None or src is None or isinstance(src.this, exp.Subquery):
            break
        conds = [j.args["on"] for j in inner if j.args.get("on") is not None]
        for j in inner:
            j.set("on", None)
            j.set("kind", "CROSS")
        first = src.this
        src.set("this", target.this)
        target.set("this", first)
        if conds:
            tree.where(exp.and_(*conds), copy=False)
        tree = merge_subqueries(tree)
    return tree


def _extract_parts(provider: SchemaProvider, select: exp.Select,
                   parts: list[PartScan]) -> dict[str, tuple[PartScan, dict[str, TableInfo]]]:
    """Each aggregating subquery in the SELECT's FROM compiled as a part of the view (PartScan),
    typed as PostgreSQL types the subquery's outputs, and replaced by a reference to its table;
    by part name, the part and the tables it reads (by alias, prefixed with the part's name)."""
    found: dict[str, tuple[PartScan, dict[str, TableInfo]]] = {}
    for sq in aggregating_subqueries(select):
        alias = sq.args.get("alias")
        if alias is None or not alias.name:
            raise UnsupportedQuery("a subquery in FROM needs an alias: (SELECT ...) AS name")
        if alias.columns:
            raise refuse("a column list on the alias of a subquery that aggregates, AS q(a, b)")
        definition = sq.this.copy()
        plan, inner = _compile_select(provider, sq.this.copy(), first=True, parts=parts)
        types = provider.output_types(definition)
        if [n for n, _ in types] != [n for n, _ in plan.outputs]:
            raise refuse(f"the subquery {alias.name} in FROM, whose output names PostgreSQL reads otherwise")
        name = f"part_{len(parts) + 1}"
        table = TableInfo(PART_SCHEMA, name, tuple(types) + ((ROW_KEY, "bigint"),), (ROW_KEY,),
                          frozenset(plan.never_null_outputs()))
        part = PartScan(alias=alias.name, table=table, plan=plan, part=name, definition=definition)
        parts.append(part)
        found[name] = (part, {f"{name}.{a}": t for a, t in inner.items()})
        sq.replace(exp.Table(this=exp.to_identifier(name, quoted=True), db=exp.to_identifier(PART_SCHEMA, quoted=True),
                             alias=exp.TableAlias(this=exp.to_identifier(alias.name, quoted=True))))
    return found


def _with_definitions(tree: exp.Expression, found: dict) -> exp.Expression:
    """The query with each part's table replaced by its subquery again: what PostgreSQL can run."""
    def fn(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and node.db == PART_SCHEMA and node.name in found:
            return exp.Subquery(this=found[node.name][0].definition.copy(), alias=node.args["alias"].copy())
        return node

    return tree.transform(fn)


def _compile_select(provider: SchemaProvider, select: exp.Select, first: bool,
                    parts: list[PartScan]) -> tuple[Project | Union | Aggregate, dict]:
    """One SELECT (a whole view, or a UNION branch) -> its plan and scan aliases."""
    if first:
        _require_names(select)
    found = _extract_parts(provider, select, parts)
    infos: dict[tuple[str, str], TableInfo] = {(PART_SCHEMA, n): p.table for n, (p, _) in found.items()}
    for table in select.find_all(exp.Table):
        if table.db == PART_SCHEMA:
            continue
        info = provider.table(table.db or None, table.name, only=bool(table.args.get("only")))
        infos[(info.schema, info.name)] = info
        table.set("db", exp.to_identifier(info.schema, quoted=True))
        table.set("this", exp.to_identifier(info.name, quoted=True))
        if not table.alias:
            table.set("alias", exp.TableAlias(this=exp.to_identifier(info.name, quoted=True)))
    schema = {s: {} for s, _ in infos}
    for (s, n), info in infos.items():  # a part's row number is no column of its query (SELECT * skips it)
        schema[s][n] = {c: "unknown" for c in info.column_names if s != PART_SCHEMA or c != ROW_KEY}
    try:
        # reflected names are exact (already case-folded by PostgreSQL): do not normalize them again
        mapping = MappingSchema(schema, dialect="postgres", normalize=False)
        tree = qualify(select, schema=mapping, dialect="postgres", quote_identifiers=True, validate_qualify_columns=True)
    except OptimizeError as e:
        raise UnknownObject(f"{e}".replace("Column", "column").strip()) from None
    tree = guard_derived_outputs(tree, lambda t: infos[(t.db, t.name)].key[0])
    tree = merge_filtered_sides(_merge_joined_subqueries(merge_subqueries(typed_number_outputs(tree))))
    if any(isinstance(sq.parent, (exp.From, exp.Join)) for sq in tree.find_all(exp.Subquery)):
        raise refuse("this subquery in FROM (it could not be merged into the outer query)")
    check_deterministic(provider, _with_definitions(tree, found) if found else tree)
    check_comparable(provider, tree, infos)

    aliases: dict[str, TableInfo] = {}

    def scan_of(t: exp.Expression) -> Scan:
        if not isinstance(t, exp.Table):
            raise refuse(f"{t.key} in FROM")
        if t.db == PART_SCHEMA:
            part, read = found[t.name]
            aliases.update(read)  # the tables it reads, not a table of its own
            return part
        info = infos[(t.db, t.name)]
        aliases[t.alias_or_name] = info
        return Scan(alias=t.alias_or_name, table=info)

    def subqueries_of(spj: exp.Select) -> list:
        out = extract_subqueries(spj, infos, {n: p for n, (p, _) in found.items()})
        for p in (p for q in out for p in q.parts):
            aliases.update(found[p.part][1])  # the tables it reads, as for a part in FROM
        return out

    outputs = _outputs(tree, first)
    if has_outer_join(tree):
        return _compile_outer_joins(tree, infos, outputs, scan_of, subqueries_of), aliases
    subqueries = subqueries_of(tree)
    node = _spj_node(tree, scan_of)
    if has_aggregation(tree):
        having_subqueries = extract_having_subqueries(tree, infos, len(subqueries))
        agg = build_aggregate(tree, node, outputs, having_subqueries)
        agg.cache.subqueries = subqueries
        infer_ids(agg.cache)
        # footnote 6: no cache over a many-to-many join, where the general rule would re-read
        # large groups from it; the specialized rules never re-read groups, so they keep it
        if agg.keys and agg.sum_count_args() is None and not subqueries and len(scans(node)) <= MAX_CACHELESS_SCANS:
            agg.no_cache = many_to_many(node)
        return agg, aliases
    return infer_ids(Project(child=node, outputs=outputs, subqueries=subqueries)), aliases


def _spj_node(tree: exp.Select, scan_of) -> Node:
    """The FROM, JOINs (inner) and WHERE of a SELECT as Scans, Joins and a Select."""
    node: Node = scan_of(from_item(tree))
    for j in tree.args.get("joins") or []:
        node = Join(left=node, right=scan_of(j.this), conjuncts=conjuncts(j.args.get("on")))
    where = where_conjuncts(tree)
    if where:
        node = Select(child=node, conjuncts=where)
    return node


def _compile_outer_joins(tree: exp.Select, infos: dict, outputs: list[tuple[str, exp.Expression]],
                         scan_of, subqueries_of) -> Union | Aggregate:
    """A SELECT with outer joins: a UNION ALL of its NULL-padded inner-join branches (outer_joins.py),
    under the query's grouping if it has one. The grouping is compiled once, over the query as
    written, so that every branch's cache has the same columns; each branch pads its own."""
    if tree.args.get("having") and tree.args["having"].find(exp.Subquery):
        raise refuse("subqueries in HAVING together with outer joins")
    grouped = build_aggregate(tree, scan_of(from_item(tree)), outputs) if has_aggregation(tree) else None
    # what every branch projects: the grouped query's cache columns, else the query's outputs
    shape, stable = (grouped.cache.outputs, grouped.cache.stable) if grouped is not None else (outputs, frozenset())
    projects: list[Project] = []
    for k, branch in enumerate(expand_outer_joins(tree, lambda t: infos[(t.db, t.name)]), 1):
        spj = branch.select()
        subqueries = subqueries_of(spj)
        plan = infer_ids(Project(child=_spj_node(spj, scan_of), outputs=[(n, branch.pad(e)) for n, e in shape],
                                 stable=stable, subqueries=subqueries))
        for pos, i in enumerate(plan.ids):  # IDs of different branches never share a column
            i.name = hidden_name(f"b{k}_{i.scan}", i.column, pos + 1000 * k)
        projects.append(plan)
    union = Union(branches=projects, outer_join=True)
    if grouped is None:
        return union
    grouped.cache = union
    return grouped


def _outputs(tree: exp.Select, first: bool) -> list[tuple[str, exp.Expression]]:
    outputs: list[tuple[str, exp.Expression]] = []
    for e in tree.expressions:
        name = e.alias_or_name
        outputs.append((name, e.this if isinstance(e, exp.Alias) else e))
    seen: set[str] = set()
    for name, _ in outputs:
        if first and name in seen:
            raise UnsupportedQuery(f'output column "{name}" appears twice; give the columns distinct names with AS')
        seen.add(name)
    return outputs
