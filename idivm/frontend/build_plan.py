"""SQL text -> logical plan (Project over Select over left-deep inner Joins of Scans).

sqlglot parses, qualifies every column with its scan alias (expanding *,
USING and NATURAL joins), and merges SPJ subqueries in FROM into the outer
query; we never hand-parse SQL.
"""
from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlalchemy.engine import Connection
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError
from sqlglot.optimizer.merge_subqueries import merge_subqueries
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from ..algebra.ids import infer_ids
from ..algebra.plan import Aggregate, Join, Node, Project, Scan, Select
from ..errors import IdivmError, UnknownObject, UnsupportedQuery
from .aggregates import build_aggregate, has_aggregation
from .checks import check_deterministic, check_statement, refuse
from .ctes import inline_ctes
from .reflect import TableInfo, reflect_table


@dataclass
class CompiledView:
    sql: str
    plan: Project | Aggregate  # Aggregate: the view is grouped; its cache is an SPJ Project
    tables: dict[str, TableInfo]  # scan alias -> table

    @property
    def spj(self) -> Project:
        """The SPJ plan maintained by the i-diff rules: the view itself, or its intermediate cache."""
        return self.plan.cache if isinstance(self.plan, Aggregate) else self.plan


def parse_one(sql: str) -> exp.Expression:
    try:
        statements = [s for s in sqlglot.parse(sql, read="postgres") if s is not None]
    except ParseError as e:
        first = str(e).splitlines()[0]
        raise IdivmError(f"could not parse the view's SQL: {first}") from None
    if len(statements) != 1:
        raise IdivmError(f"a view is defined by exactly one SELECT statement, got {len(statements)} statements")
    return statements[0]


def _require_names(select: exp.Select) -> None:
    for e in select.expressions:
        if isinstance(e, (exp.Alias, exp.Column, exp.Star)):
            continue
        raise UnsupportedQuery(
            f"output expression {e.sql('postgres')} needs a name; write it as `{e.sql('postgres')} AS some_name`"
        )


def _conjuncts(e: exp.Expression | None) -> list[exp.Expression]:
    if e is None:
        return []
    return [c.unnest() for c in e.flatten()] if isinstance(e, exp.And) else [e.unnest()]


def compile_view_sql(conn: Connection, sql: str) -> CompiledView:
    tree = normalize_identifiers(parse_one(sql), dialect="postgres")
    if isinstance(tree, exp.Select):
        tree = inline_ctes(tree)
    select = check_statement(tree)
    _require_names(select)

    infos: dict[tuple[str, str], TableInfo] = {}
    for table in select.find_all(exp.Table):
        info = reflect_table(conn, table.db or None, table.name)
        infos[(info.schema, info.name)] = info
        table.set("db", exp.to_identifier(info.schema, quoted=True))
        table.set("this", exp.to_identifier(info.name, quoted=True))
        if not table.alias:
            table.set("alias", exp.TableAlias(this=exp.to_identifier(info.name, quoted=True)))
    schema = {s: {} for s, _ in infos}
    for (s, n), info in infos.items():
        schema[s][n] = {c: "unknown" for c in info.column_names}
    try:
        # reflected names are exact (already case-folded by PostgreSQL): do not normalize them again
        mapping = MappingSchema(schema, dialect="postgres", normalize=False)
        tree = qualify(select, schema=mapping, dialect="postgres", quote_identifiers=True, validate_qualify_columns=True)
    except OptimizeError as e:
        raise UnknownObject(f"{e}".replace("Column", "column").strip()) from None
    tree = merge_subqueries(tree)
    if tree.find(exp.Subquery):
        raise refuse("this subquery in FROM (it could not be merged into the outer query)")
    check_deterministic(conn, tree)

    aliases: dict[str, TableInfo] = {}

    def scan_of(t: exp.Expression) -> Scan:
        if not isinstance(t, exp.Table):
            raise refuse(f"{t.key} in FROM")
        info = infos[(t.db, t.name)]
        aliases[t.alias_or_name] = info
        return Scan(alias=t.alias_or_name, table=info)

    node: Node = scan_of(tree.args["from_"].this if "from_" in tree.args else tree.args["from"].this)
    for j in tree.args.get("joins") or []:
        node = Join(left=node, right=scan_of(j.this), conjuncts=_conjuncts(j.args.get("on")))
    where = _conjuncts(tree.args["where"].this) if tree.args.get("where") else []
    if where:
        node = Select(child=node, conjuncts=where)

    outputs: list[tuple[str, exp.Expression]] = []
    for e in tree.expressions:
        name = e.alias_or_name
        outputs.append((name, e.this if isinstance(e, exp.Alias) else e))
    seen: set[str] = set()
    for name, _ in outputs:
        if name in seen:
            raise UnsupportedQuery(f'output column "{name}" appears twice; give the columns distinct names with AS')
        seen.add(name)
    if has_aggregation(tree):
        agg = build_aggregate(tree, node, outputs)
        infer_ids(agg.cache)
        return CompiledView(sql=sql, plan=agg, tables=aliases)
    plan = infer_ids(Project(child=node, outputs=outputs))
    return CompiledView(sql=sql, plan=plan, tables=aliases)
