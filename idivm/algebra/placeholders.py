"""Placeholders: expression nodes that stand for a value the compiler binds later.

Each is a subclass of sqlglot's ``exp.Column``, so every walk that looks at
columns still sees it, while its type says what it stands for; no user-written
name can be mistaken for one. sqlglot renders a node by its exact class, so a
placeholder that reached a rendered statement would fail loudly ("Unsupported
expression type") instead of becoming a column of some table: every stage binds
the ones it introduced before rendering, and ``printable`` spells them out for
the printers of plans and i-diffs.
"""
from __future__ import annotations

from sqlglot import exp


class CacheColumn(exp.Column):
    """Column ``name`` of the intermediate cache below an aggregate (algebra/plan.py's Aggregate:
    its outputs and HAVING are written over the cache's group keys ``g<i>`` and arguments ``a<j>``)."""


class SubqueryValue(exp.Column):
    """The value of the scalar subquery of HAVING whose alias is ``name``
    (Aggregate.having_subqueries); the strategy that maintains the aggregate binds it."""


class PreImage(exp.Column):
    """Column ``name`` of scan ``table`` as it was before the change: read from the pre-state
    image of that scan's i-diff (rules/idiff.py's ``pre``), where an unmarked column reads the
    post-state."""


_PLACEHOLDERS = (CacheColumn, SubqueryValue, PreImage)


def cache_column(name: str) -> CacheColumn:
    return CacheColumn(this=exp.to_identifier(name, quoted=True))


def subquery_value(alias: str) -> SubqueryValue:
    return SubqueryValue(this=exp.to_identifier(alias, quoted=True))


def pre_image(column: exp.Column) -> PreImage:
    return PreImage(this=column.this.copy(), table=column.args["table"].copy())


def printable(e: exp.Expression) -> exp.Expression:
    """e with its placeholders spelled as the printers show them: ``cache."g0"``,
    ``subquery."alias"``, ``"pre:p"."price"``."""
    def spell(node: exp.Expression) -> exp.Expression:
        if isinstance(node, CacheColumn):
            return exp.Column(this=node.this.copy(), table=exp.to_identifier("cache"))
        if isinstance(node, SubqueryValue):
            return exp.Column(this=node.this.copy(), table=exp.to_identifier("subquery"))
        if isinstance(node, PreImage):
            return exp.Column(this=node.this.copy(), table=exp.to_identifier(f"pre:{node.table}", quoted=True))
        return node

    if not any(isinstance(node, _PLACEHOLDERS) for node in e.walk()):
        return e  # most printed expressions have none: no copy
    return e.transform(spell)
