"""EXISTS / IN subqueries in WHERE: validation and normalisation into SubqueryPredicates.

Supported: a subquery over one base table or an inner join of base tables (JOIN ... ON,
or a comma list), with an optional WHERE that may reference the outer query's columns
(correlation), and for IN exactly one output column. Its aliases are renamed to
idivm-owned ones so that they can never shadow the aliases of generated statements;
the join conditions join its WHERE (an inner join's ON means the same there).

An EXISTS / IN subquery that is a conjunct of such a subquery's WHERE joins its FROM first:
`EXISTS (SELECT 1 FROM d WHERE p AND EXISTS (SELECT 1 FROM l WHERE q))` holds exactly when
`EXISTS (SELECT 1 FROM d, l WHERE p AND q)` does (there is a d with p and an l with q for it), and
`x IN (SELECT e FROM l WHERE q)` there is `EXISTS (... WHERE q AND x = e)` (a row whose x = e is
NULL passes neither). EXISTS and IN ask only whether a row exists (or which values occur), so the
rows the join repeats change nothing, whatever the outer subquery's polarity (NOT EXISTS, NOT IN).
"""
from __future__ import annotations

from sqlglot import exp

from ..algebra.plan import PartScan, SubqueryPredicate
from ..algebra.tables import TableInfo
from ..names import PART_SCHEMA
from .checks import refuse
from .clauses import conjuncts

SUBQUERY_ALIAS = "__idivm_sq{}"


def extract_subqueries(tree: exp.Select, infos: dict[tuple[str, str], TableInfo],
                       parts: dict[str, PartScan] | None = None) -> list[SubqueryPredicate]:
    """The EXISTS / IN and scalar subqueries of tree's WHERE; `parts`: the view's parts by name, which
    a subquery may read (an aggregating subquery in its FROM, build_plan.py)."""
    where = tree.args.get("where")
    if where is None:
        return []
    in_queries = {id(n.args["query"]) for n in where.find_all(exp.In) if n.args.get("query")}
    nodes = [n for n in where.find_all(exp.Exists)] + [n for n in where.find_all(exp.In) if n.args.get("query")]
    nodes += [n for n in where.find_all(exp.Subquery) if id(n) not in in_queries]  # scalar subqueries
    nodes = [n for n in nodes if n.parent_select is tree]  # not those inside them (merged into them, or refused)
    return [_extract(node, infos, i, parts or {}) for i, node in enumerate(nodes)]


def extract_having_subqueries(tree: exp.Select, infos: dict[tuple[str, str], TableInfo],
                              start: int) -> list[SubqueryPredicate]:
    """Scalar subqueries in HAVING (nested aggregates compared with a group's aggregates); their
    aliases are numbered from `start`, after those of WHERE."""
    having = tree.args.get("having")
    if having is None:
        return []
    if having.find(exp.Exists) or any(n.args.get("query") for n in having.find_all(exp.In)):
        raise refuse("EXISTS / IN subqueries in HAVING")
    return [_extract(node, infos, start + i, {}) for i, node in enumerate(having.find_all(exp.Subquery))]


def _extract(node: exp.Expression, infos: dict[tuple[str, str], TableInfo], index: int,
             parts: dict[str, PartScan]) -> SubqueryPredicate:
    """One subquery, checked and with its table renamed to idivm's own alias."""
    scalar = isinstance(node, exp.Subquery)
    inner = node.this if isinstance(node, (exp.Exists, exp.Subquery)) else node.args["query"].this
    what = "a scalar subquery" if scalar else "an EXISTS/IN subquery"
    if not isinstance(inner, exp.Select):
        raise refuse("set operations inside a subquery")
    for clause, name in (("group", "GROUP BY"), ("having", "HAVING"), ("distinct", "DISTINCT"),
                         ("limit", "LIMIT"), ("order", "ORDER BY")) + ((("joins", "joins"),) if scalar else ()):
        if inner.args.get(clause):
            raise refuse(f"{name} inside {what}")
    if not scalar:
        _merge_nested(inner)
    if inner.find(exp.Exists) or inner.find(exp.Subquery):
        raise refuse(f"nested subqueries inside {what}")
    if scalar and (len(inner.expressions) != 1 or not inner.expressions[0].find(exp.AggFunc)):
        raise refuse("a scalar subquery that is not one aggregate (SELECT count(*), sum(x), avg(x) ... FROM t WHERE ...)")
    if not scalar and inner.find(exp.AggFunc):
        raise refuse("aggregates inside an EXISTS/IN subquery")
    src = (inner.args.get("from_") or inner.args.get("from")).this
    joins = inner.args.get("joins") or []
    for j in joins:
        if (j.side or "") or (j.kind or "").upper() not in ("", "INNER", "CROSS"):
            raise refuse(f"{(j.side or j.kind).upper()} JOIN inside {what} (only inner joins)")
        if j.args.get("using") or j.args.get("method"):
            raise refuse(f"JOIN ... USING or NATURAL JOIN inside {what} (write the condition with ON)")
    tables = [src] + [j.this for j in joins]
    if not all(isinstance(t, exp.Table) for t in tables):
        raise refuse(f"a subquery in FROM of {what}")
    aliases = [t.alias_or_name for t in tables]
    if len(set(aliases)) != len(aliases):
        raise refuse(f"one alias for two tables inside {what}")
    renamed = {old: SUBQUERY_ALIAS.format(index) + (f"j{k}" if k else "") for k, old in enumerate(aliases)}
    for c in inner.find_all(exp.Column):
        if c.table in renamed:
            c.set("table", exp.to_identifier(renamed[c.table], quoted=True))
    for t, old in zip(tables, aliases):
        t.set("alias", exp.TableAlias(this=exp.to_identifier(renamed[old], quoted=True)))
    ons = [j.args["on"] for j in joins if j.args.get("on") is not None]
    if ons:  # the join conditions belong to the WHERE of the subquery's inner join
        inner.set("where", exp.Where(this=exp.and_(*[exp.paren(c.copy()) for c in ons], *(
            [exp.paren(inner.args["where"].this)] if inner.args.get("where") else []))))
        for j in joins:
            j.set("on", None)
            j.set("kind", "CROSS")
    in_lhs = in_col = None
    if isinstance(node, exp.In):
        if len(inner.expressions) != 1 or isinstance(node.this, exp.Tuple):
            raise refuse("IN (subquery) over several columns")
        in_lhs, in_col = node.this, inner.expressions[0].unalias()
    inner_where = inner.args.get("where")
    return SubqueryPredicate(alias=renamed[aliases[0]], table=infos[(src.db, src.name)],
                             where=inner_where.this if inner_where is not None else None,
                             in_lhs=in_lhs, in_col=in_col,
                             scalar=inner.expressions[0].unalias() if scalar else None,
                             joined=[(renamed[a], infos[(t.db, t.name)]) for t, a in zip(tables[1:], aliases[1:])],
                             parts=[parts[t.name] for t in tables if t.db == PART_SCHEMA and t.name in parts])


def _merge_nested(inner: exp.Select) -> None:
    """The EXISTS / IN subqueries among the conjuncts of inner's WHERE, joined into inner's FROM
    (in place; see the module's docstring), innermost first; the others are left, and refused."""
    where = inner.args.get("where")
    if where is None:
        return
    kept, merged = [], False
    for c in conjuncts(where.this):
        sub = _plain_semijoin(c)
        if sub is None:
            kept.append(c)
            continue
        _merge_nested(sub)
        if sub.find(exp.Exists) or sub.find(exp.Subquery):
            kept.append(c)
            continue
        # fresh aliases for its tables: none that inner, or anything inside it, names already
        taken = {t.alias_or_name for t in inner.find_all(exp.Table)} | {x.table for x in inner.find_all(exp.Column)}
        tables = [(sub.args.get("from_") or sub.args.get("from")).this] + [j.this for j in sub.args.get("joins") or []]
        renamed = {}
        for t in tables:
            new = t.alias_or_name
            while new in taken:
                new += "_"
            taken.add(new)
            renamed[t.alias_or_name] = new
            t.set("alias", exp.TableAlias(this=exp.to_identifier(new, quoted=True)))
        for col in sub.find_all(exp.Column):
            if col.table in renamed:
                col.set("table", exp.to_identifier(renamed[col.table], quoted=True))
        inner.join(tables[0].copy(), join_type="cross", copy=False)
        for j in sub.args.get("joins") or []:  # its inner joins as they are, ON conditions and all
            on = j.args.get("on")
            inner.join(j.this.copy(), on=on.copy() if on is not None else None, join_type=None if on is not None else "cross",
                       copy=False)
        if sub.args.get("where") is not None:
            kept.append(exp.paren(sub.args["where"].this.copy()))
        if isinstance(c, exp.In):
            kept.append(exp.EQ(this=c.this.copy(), expression=sub.expressions[0].unalias().copy()))
        merged = True
    if merged:
        inner.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)


def _plain_semijoin(c: exp.Expression) -> exp.Select | None:
    """The subquery of an EXISTS / IN (subquery) conjunct that reads base tables by inner joins
    only, without grouping, aggregates or limits (what _extract maintains); else None."""
    if isinstance(c, exp.Exists):
        sub = c.this
    elif isinstance(c, exp.In) and c.args.get("query") is not None and not isinstance(c.this, exp.Tuple):
        sub = c.args["query"].this
    else:
        return None
    if not isinstance(sub, exp.Select) or not (sub.args.get("from_") or sub.args.get("from")):
        return None
    if any(sub.args.get(k) for k in ("group", "having", "distinct", "limit", "order", "offset", "with", "with_")):
        return None
    if sub.find(exp.AggFunc) or (isinstance(c, exp.In) and len(sub.expressions) != 1):
        return None
    joins = sub.args.get("joins") or []
    if any((j.side or "") or (j.kind or "").upper() not in ("", "INNER", "CROSS") or j.args.get("using")
           or j.args.get("method") for j in joins):
        return None
    tables = [(sub.args.get("from_") or sub.args.get("from")).this] + [j.this for j in joins]
    return sub if all(isinstance(t, exp.Table) for t in tables) else None
