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


def kinds_allowed(sel: exp.Select, alias: str) -> set[str] | None:
    """The change kinds the SELECT's WHERE lets through for the Δ aliased `alias` (None: any)."""
    where = sel.args.get("where")
    allowed: set[str] | None = None
    for c in conjuncts(where.this if where else None):
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


def yields_nothing(query: exp.Expression, kinds: dict[int, set[str]]) -> bool:
    """Whether a query certainly returns no rows, given which change kinds (I, D, U) each Δ
    instance holds (`kinds`, by captured table; a Δ not named there holds nothing): a SELECT whose
    inner-join operands include a Δ that its WHERE restricts to kinds the instance lacks, or an
    empty subquery; a UNION whose branches are all empty. E.g. a batch of price updates computes
    no `kind = 'I'` insert."""
    if isinstance(query, exp.Subquery):
        return yields_nothing(query.this, kinds)
    if isinstance(query, exp.Union):
        return yields_nothing(query.this, kinds) and yields_nothing(query.expression, kinds)
    if not isinstance(query, exp.Select):
        return False
    if not query.args.get("group") and any(e.find(exp.AggFunc) for e in query.expressions):
        return False  # an aggregate without GROUP BY returns its one row even over no rows
    if any(j.args.get("side") for j in query.args.get("joins") or []):
        return False
    for item in froms(query):
        if isinstance(item, exp.Subquery) and yields_nothing(item, kinds):
            return True
        rel = R.relation_of(item) if isinstance(item, exp.Table) else None
        if rel is not None and rel.kind == R.DELTA:
            allowed = kinds_allowed(query, item.alias_or_name)
            present = kinds.get(int(rel.name), set())
            if not present or (allowed is not None and not allowed & present):
                return True
    return False


def probe(step: Step) -> exp.Query | None:
    """A query that returns no rows only if the step changes nothing (None: no such query): an
    insert's, a merge's or a map increment's source; for a delete or an update by matching, its target joined
    with its USING list under its condition. A step's recorded changes come from the rows it
    changed, so they are empty too."""
    if isinstance(step, (InsertRows, AddToMap, MergeRows)):
        return step.source
    if isinstance(step, (DeleteMatching, UpdateMatching)):
        return select([num(1)], [step.target.copy()] + [u.copy() for u in step.using], [step.condition.copy()])
    return None


def driving_masks(step: Step) -> frozenset[int]:
    """The kind masks (BIT) of its driving Δ (`step.driven_by`) under which the step may change
    anything; ANY_MASK where the analysis cannot restrict it. Every other Δ the step reads counts as
    holding every kind. The caller still skips the step when its driving Δ is empty (mask 0)."""
    query = probe(step) if step.driven_by is not None else None
    if query is None:
        return ANY_MASK
    deltas = {int(rel.name) for rel in map(R.relation_of, query.find_all(exp.Table))
              if rel is not None and rel.kind == R.DELTA}
    if step.driven_by not in deltas:
        return ANY_MASK
    masks = set()
    for mask in ANY_MASK:
        kinds = {cid: set(KINDS) for cid in deltas}
        kinds[step.driven_by] = {k for k in KINDS if mask & BIT[k]}
        if not yields_nothing(query, kinds):
            masks.add(mask)
    return frozenset(masks)
