"""When a query or a step certainly does nothing, from the change kinds its i-diffs hold.

An i-diff instance holds rows of three kinds: I (inserted), D (deleted), U (updated): the effective
changes of one table (idIVM Section 5). Most rules read only some kinds of their driving i-diff:
the Δ- steps the deleted and updated rows' pre-images, the Δ+ steps the inserted and updated rows'
post-images (Appendix B's i-diff schemas). A batch of single-row INSERTs holds only I rows, so the
steps that read `kind = 'D'` or `kind = 'U'` would run and find nothing. Both engines use this:
the PostgreSQL engine guards each compiled statement by the kinds its driving i-diff must hold
for it to do anything (`driving_masks`; a statement costs tens of microseconds in a single-row
write even when it finds nothing), the Spark engine does not send Spark a query that returns
nothing (`yields_nothing`).

The analysis is conservative: a query is called empty only when a Δ it joins (as an operand of
inner joins, not an outer join, not inside a condition) is restricted by a conjunct of its WHERE to
kinds the instance lacks, or when a subquery in its FROM is empty, or every branch of its UNION is.
Anything it cannot read (aggregates without GROUP BY, outer joins, EXCEPT, OR of kinds) counts as
possibly returning rows.
"""
from __future__ import annotations

from sqlglot import exp

from . import relations as R
from .steps import AddToMap, DeleteMatching, InsertRows, MergeRows, Step, UpdateMatching
from .trees import conjuncts, froms, num, select

KINDS = (R.INSERTED, R.DELETED, R.UPDATED)
BIT = {R.INSERTED: 1, R.DELETED: 2, R.UPDATED: 4}  # a Δ instance's kinds as a bit mask
ANY_MASK = frozenset(range(1, 8))  # every non-empty combination of kinds


# What a query's emptiness depends on, read once from its tree: a SELECT is empty when one of its
# Δ operands holds none of the kinds its WHERE lets through, or one of its FROM subqueries is
# empty; a UNION when every branch is; None: it may return rows whatever the Δs hold.
Shape = tuple  # ("select", ((captured id, allowed kinds or None), ...), (subquery shapes, ...)) | ("union", (shapes))


def kinds_allowed(where: list[exp.Expression], alias: str) -> set[str] | None:
    """The change kinds these WHERE conjuncts let through for the Δ aliased `alias` (None: any)."""
    allowed: set[str] | None = None
    for c in where:
        if isinstance(c, exp.Paren):
            c = c.this
        column, values = None, None
        if isinstance(c, exp.EQ) and isinstance(c.expression, exp.Literal) and c.expression.is_string:
            column, values = c.this, {c.expression.this}
        elif isinstance(c, exp.In) and not c.args.get("query") and all(
                isinstance(v, exp.Literal) and v.is_string for v in c.expressions):
            column, values = c.this, {v.this for v in c.expressions}
        elif isinstance(c, exp.NEQ) and isinstance(c.expression, exp.Literal) and c.expression.is_string:
            column, values = c.this, set(KINDS) - {c.expression.this}
        if isinstance(column, exp.Column) and column.name == R.KIND_COLUMN and column.table == alias:
            allowed = values if allowed is None else allowed & values
    return allowed


def shape(query: exp.Expression) -> Shape | None:
    if isinstance(query, exp.Subquery):
        return shape(query.this)
    if isinstance(query, exp.Union):
        branches = (shape(query.this), shape(query.expression))
        return None if None in branches else ("union", branches)
    if not isinstance(query, exp.Select):
        return None
    if not query.args.get("group") and any(e.find(exp.AggFunc) for e in query.expressions):
        return None  # an aggregate without GROUP BY returns its one row even over no rows
    if any(j.args.get("side") for j in query.args.get("joins") or []):
        return None
    where = query.args.get("where")
    return _select_shape(froms(query), conjuncts(where.this if where else None))


def _select_shape(items: list[exp.Expression], where: list[exp.Expression]) -> Shape:
    deltas, subqueries = [], []
    for item in items:
        if isinstance(item, exp.Subquery):
            sub = shape(item)
            if sub is not None:
                subqueries.append(sub)
        rel = R.relation_of(item) if isinstance(item, exp.Table) else None
        if rel is not None and rel.kind == R.DELTA:
            deltas.append((int(rel.name), kinds_allowed(where, item.alias_or_name)))
    return ("select", tuple(deltas), tuple(subqueries))


def empty(s: Shape | None, kinds: dict[int, set[str]]) -> bool:
    """Whether a query of this shape certainly returns no rows, given which change kinds (I, D, U)
    each Δ instance holds (`kinds`, by captured table; a Δ not named there holds nothing)."""
    if s is None:
        return False
    if s[0] == "union":
        return all(empty(b, kinds) for b in s[1])
    _, deltas, subqueries = s
    for cid, allowed in deltas:
        present = kinds.get(cid, set())
        if not present or (allowed is not None and not allowed & present):
            return True
    return any(empty(sub, kinds) for sub in subqueries)


def yields_nothing(query: exp.Expression, kinds: dict[int, set[str]]) -> bool:
    """Whether a query certainly returns no rows, given which change kinds each Δ instance holds:
    a SELECT whose inner-join operands include a Δ that its WHERE restricts to kinds the instance
    lacks, or an empty subquery; a UNION whose branches are all empty. E.g. a batch of price
    updates computes no `kind = 'I'` insert."""
    return empty(shape(query), kinds)


def step_shape(step: Step) -> Shape | None:
    """The shape of a query that returns no rows only if the step changes nothing (None: no such
    query): an insert's, a merge's or a map increment's source; for a delete or an update by
    matching, its target joined with its USING list under its condition. A step's recorded changes
    come from the rows it changed, so they are empty too. Read from the step's own trees, uncopied."""
    if isinstance(step, (InsertRows, AddToMap, MergeRows)):
        return shape(step.source)
    if isinstance(step, (DeleteMatching, UpdateMatching)):
        return _select_shape([step.target] + list(step.using), conjuncts(step.condition))
    return None


def probe(step: Step) -> exp.Query | None:
    """step_shape's query as a tree of its own (a copy; the tests check the two agree)."""
    if isinstance(step, (InsertRows, AddToMap, MergeRows)):
        return step.source
    if isinstance(step, (DeleteMatching, UpdateMatching)):
        return select([num(1)], [step.target.copy()] + [u.copy() for u in step.using], [step.condition.copy()])
    return None


def driving_masks(step: Step) -> frozenset[int]:
    """The kind masks (BIT) of its driving Δ (`step.driven_by`) under which the step may change
    anything; ANY_MASK where the analysis cannot restrict it. Every other Δ the step reads counts as
    holding every kind. The caller still skips the step when its driving Δ is empty (mask 0)."""
    s = step_shape(step) if step.driven_by is not None else None
    if s is None:
        return ANY_MASK
    deltas = _deltas(s)
    if step.driven_by not in deltas:
        return ANY_MASK
    masks = set()
    for mask in ANY_MASK:
        kinds = {cid: set(KINDS) for cid in deltas}
        kinds[step.driven_by] = {k for k in KINDS if mask & BIT[k]}
        if not empty(s, kinds):
            masks.add(mask)
    return frozenset(masks)


def _deltas(s: Shape) -> set[int]:
    if s[0] == "union":
        return set().union(*(_deltas(b) for b in s[1]))
    return {cid for cid, _ in s[1]} | set().union(*(_deltas(sub) for sub in s[2]))
