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


class Unbound(exp.Column):
    """A value a later stage binds (the base of every placeholder; not sqlglot's exp.Placeholder, a query
    parameter); ``spelled`` is how the printers show it (``label."name"``)."""
    label = "?"

    def spelled(self) -> exp.Column:
        return exp.Column(this=self.this.copy(), table=exp.to_identifier(self.label))


class CacheColumn(Unbound):
    """Column ``name`` of the intermediate cache below an aggregate (algebra/plan.py's Aggregate:
    its outputs and HAVING are written over the cache's group keys ``g<i>`` and arguments ``a<j>``)."""
    label = "cache"


class SubqueryValue(Unbound):
    """The value of the scalar subquery of HAVING whose alias is ``name``
    (Aggregate.having_subqueries); the strategy that maintains the aggregate binds it."""
    label = "subquery"


class PreImage(Unbound):
    """Column ``name`` of scan ``table`` as it was before the change: read from the pre-state
    image of that scan's i-diff (rules/idiff.py's ``pre``), where an unmarked column reads the
    post-state."""

    def spelled(self) -> exp.Column:
        return exp.Column(this=self.this.copy(), table=exp.to_identifier(f"pre:{self.table}", quoted=True))


def cache_column(name: str) -> CacheColumn:
    return CacheColumn(this=exp.to_identifier(name, quoted=True))


def subquery_value(alias: str) -> SubqueryValue:
    return SubqueryValue(this=exp.to_identifier(alias, quoted=True))


def pre_image(column: exp.Column) -> PreImage:
    return PreImage(this=column.this.copy(), table=column.args["table"].copy())


def printable(e: exp.Expression) -> exp.Expression:
    """e with its placeholders spelled as the printers show them: ``cache."g0"``,
    ``subquery."alias"``, ``"pre:p"."price"``, the higher-order strategy's ``var."a.x"``."""
    if not any(isinstance(node, Unbound) for node in e.walk()):
        return e  # most printed expressions have none: no copy
    return e.transform(lambda node: node.spelled() if isinstance(node, Unbound) else node)
