"""A query over one subquery in FROM that only joins, filters and projects, and holds subqueries in
its WHERE, merged into that subquery.

    SELECT g(q.x), count(*) FROM (SELECT e AS x FROM t WHERE c AND NOT EXISTS (...)) AS q WHERE w(q.x) GROUP BY g(q.x)
 -> SELECT g(e), count(*) FROM t WHERE c AND NOT EXISTS (...) AND w(e) GROUP BY g(e)

build_plan.py merges subqueries like this one after the rewrites (sqlglot's merge_subqueries, which
needs the schema), but then the EXISTS / IN and scalar subqueries of its WHERE stand outside the
view's own WHERE for the rewrites that decorrelate them and for the checks. Merged here first, they
are in the view's WHERE (TPC-H Q22's shape: a nested average and a NOT EXISTS filtering the
customers that a grouped query then counts). The query's own clauses must hold no subquery (its
columns are then those of the subquery alone); anything else is left for build_plan.py. Subqueries
in FROM are merged first, so the same holds for a query over an aggregating subquery whose own FROM
is such a subquery (the aggregating subquery is a part of the view, checked as a query of its own).
"""
from __future__ import annotations

from sqlglot import exp

from .clauses import has_aggregation, has_from, inline_columns

_INNER_CLAUSES = ("group", "having", "distinct", "limit", "offset", "order", "with", "with_", "windows", "qualify")


def merge_filtering_subquery(tree: exp.Expression) -> exp.Expression:
    """The query merged into its one subquery in FROM where the module's docstring says (a copy;
    tree unchanged), else tree; each branch of a UNION, EXCEPT or INTERSECT on its own."""
    if isinstance(tree, exp.SetOperation):
        merged = [merge_filtering_subquery(tree.this), merge_filtering_subquery(tree.expression)]
        if merged[0] is tree.this and merged[1] is tree.expression:
            return tree
        tree = tree.copy()
        tree.set("this", merged[0])
        tree.set("expression", merged[1])
        return tree
    if not isinstance(tree, exp.Select) or not has_from(tree):
        return tree
    tree = _merge_held(_merge_held(tree, _ctes), _subqueries_in_from)
    if tree.args.get("joins"):
        return tree
    holder = (tree.args.get("from_") or tree.args.get("from")).this
    if not isinstance(holder, exp.Subquery) or not isinstance(holder.this, exp.Select):
        return tree
    inner = holder.this
    where = inner.args.get("where")
    if (any(inner.args.get(k) for k in _INNER_CLAUSES) or has_aggregation(inner) or where is None
            or not where.find(exp.Exists, exp.Subquery)):
        return tree
    inside = {id(n) for n in holder.walk()}
    if any(id(n) not in inside for n in tree.find_all(exp.Subquery, exp.Exists)):
        return tree  # the query's own clauses hold a subquery
    by_name = {}
    for e in inner.expressions:
        if not isinstance(e, (exp.Alias, exp.Column)) or isinstance(e.unalias(), exp.Star):
            return tree
        by_name[e.alias_or_name] = e.unalias()
    alias = holder.alias_or_name
    merged = inner.copy()
    outputs: list[exp.Expression] = []
    for e in tree.expressions:
        if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)):
            outputs += [exp.alias_(v.copy(), n, quoted=True) for n, v in by_name.items()]
        elif isinstance(e, exp.Alias):
            outputs.append(exp.alias_(inline_columns(e.this, alias, by_name), e.alias, quoted=True))
        elif isinstance(e, exp.Column):
            outputs.append(exp.alias_(inline_columns(e, alias, by_name), e.name, quoted=True))
        else:
            outputs.append(inline_columns(e, alias, by_name))  # unnamed: refused with "needs a name" later
    merged.set("expressions", outputs)
    if tree.args.get("where") is not None:
        merged.set("where", exp.Where(this=exp.and_(exp.paren(where.this.copy()),
                                                    exp.paren(inline_columns(tree.args["where"].this, alias, by_name)))))
    for clause in ("group", "having", "distinct", "order", "limit", "offset"):
        if tree.args.get(clause) is not None:
            merged.set(clause, inline_columns(tree.args[clause], alias, by_name))
    return merged


def _merge_held(tree: exp.Select, held) -> exp.Select:
    """tree with the query each node of held(tree) holds (its `this`) merged where the module's
    docstring says (a copy; tree itself when none is)."""
    holders = held(tree)
    merged = [merge_filtering_subquery(h.this) for h in holders]
    if all(m is h.this for m, h in zip(merged, holders)):
        return tree
    copy = tree.copy()
    for m, h, c in zip(merged, holders, held(copy)):
        if m is not h.this:
            c.set("this", m)
    return copy


def _subqueries_in_from(tree: exp.Select) -> list[exp.Subquery]:
    sources = [tree.args.get("from_") or tree.args.get("from")] + (tree.args.get("joins") or [])
    return [j.this for j in sources if isinstance(j.this, exp.Subquery)]


def _ctes(tree: exp.Select) -> list[exp.CTE]:
    """A CTE is inlined as a subquery in FROM only later (ctes.py), after the check that refuses
    subqueries outside the view's own WHERE: its query is merged here as a subquery's is."""
    ctes = tree.args.get("with_") or tree.args.get("with")
    return list(ctes.expressions) if ctes is not None else []


def typed_number_outputs(tree: exp.Select) -> exp.Select:
    """A grouped query's subqueries in FROM with each output that is a bare number (`7 AS a`) written
    as that number cast to the type PostgreSQL gives it (`CAST(7 AS INT) AS a`): the same value of
    the same type. sqlglot's merge_subqueries leaves a subquery unmerged when the grouping of the
    query over it reads such an output (merged, a bare number in GROUP BY would be an output's
    position, not a value), and build_plan.py refuses a subquery left in FROM; a cast is a value
    wherever it lands. Changes tree in place (build_plan.py's own qualified copy); returns it."""
    for select in tree.find_all(exp.Select):
        if not select.args.get("group"):
            continue
        for source in [select.args.get("from_"), *(select.args.get("joins") or [])]:
            inner = source.this.this if source is not None and isinstance(source.this, exp.Subquery) else None
            if not isinstance(inner, exp.Select) or not has_from(inner):
                continue
            for output in inner.expressions:
                value = output.this if isinstance(output, exp.Alias) else None
                if value is not None and value.is_number:
                    value.replace(exp.Cast(this=value.copy(), to=exp.DataType.build(_number_type(value))))
    return tree


def _number_type(value: exp.Expression) -> str:
    """The type PostgreSQL's parser gives a number literal (a minus sign does not change it)."""
    text = (value.this if isinstance(value, exp.Neg) else value).this
    if not text.isdigit():
        return "NUMERIC"
    return "INT" if int(text) < 2 ** 31 else "BIGINT" if int(text) < 2 ** 63 else "NUMERIC"
