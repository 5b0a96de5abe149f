"""Placeholders: expression nodes that stand for a value the compiler binds later.

A placeholder is an ``exp.Column`` that carries its kind as an argument of its own (``KEY``), so
every walk that looks at columns still sees it, while tree equality and hashing (which cover all
of a node's arguments) tell it from any column a user wrote, whatever its name. It is not a
subclass: sqlglot's compiled build (sqlglotc, which idivm installs where it has wheels) refuses
instances of Python subclasses of its nodes. A placeholder that reached a rendered statement
fails loudly (engines/postgres/render.py refuses it) instead of becoming a column of some table:
every stage binds the ones it introduced before rendering, and ``printable`` spells them out for
the printers of plans and i-diffs.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sqlglot import exp

KEY = "idivm_placeholder"  # the argument of an exp.Column that makes it a placeholder: its kind's label
_LABELS: set[str] = set()


@dataclass(frozen=True)
class Kind:
    """A kind of placeholder; ``label`` is how the printers show its table part (``label."name"``)."""
    label: str

    def __post_init__(self) -> None:
        if self.label in _LABELS:
            raise ValueError(f"two kinds of placeholder are labelled {self.label!r}")
        _LABELS.add(self.label)

    def __call__(self, name: str | exp.Identifier, table: exp.Identifier | None = None) -> exp.Column:
        """A placeholder of this kind named ``name`` (a string: quoted as given; an identifier: as it
        is written), ``table`` the scan it belongs to, if any."""
        this = name.copy() if isinstance(name, exp.Identifier) else exp.to_identifier(name, quoted=True)
        return exp.Column(this=this, table=table, **{KEY: self.label})

    def marks(self, node: exp.Expression) -> bool:
        return isinstance(node, exp.Column) and node.args.get(KEY) == self.label

    def find_all(self, tree: exp.Expression) -> Iterator[exp.Column]:
        return (node for node in tree.find_all(exp.Column) if self.marks(node))


def is_placeholder(node: exp.Expression) -> bool:
    """Whether node is a placeholder of any kind."""
    return isinstance(node, exp.Column) and node.args.get(KEY) is not None


CACHE = Kind("cache")  # column `name` of the intermediate cache below an aggregate (algebra/plan.py's
# Aggregate: its outputs and HAVING are written over the cache's group keys g<i> and arguments a<j>)
SUBQUERY = Kind("subquery")  # the value of the scalar subquery of HAVING whose alias is `name`
# (Aggregate.having_subqueries); the strategy that maintains the aggregate binds it
PRE = Kind("pre")  # column `name` of scan `table` as it was before the change: read from the
# pre-state image of that scan's i-diff (rules/idiff.py's `pre`), where an unmarked column reads the post-state


def cache_column(name: str) -> exp.Column:
    return CACHE(name)


def subquery_value(alias: str) -> exp.Column:
    return SUBQUERY(alias)


def pre_image(column: exp.Column) -> exp.Column:
    return PRE(column.this, column.args["table"].copy())


def spelled(node: exp.Column) -> exp.Column:
    """A placeholder as the printers show it: ``cache."g0"``, ``"pre:p"."price"``."""
    label = node.args[KEY]
    table = f"pre:{node.table}" if label == PRE.label else label
    return exp.Column(this=node.this.copy(), table=exp.to_identifier(table, quoted=label == PRE.label))


def printable(e: exp.Expression) -> exp.Expression:
    """e with its placeholders spelled as the printers show them: ``cache."g0"``,
    ``subquery."alias"``, ``"pre:p"."price"``, the higher-order strategy's ``var."a.x"``."""
    if not any(is_placeholder(node) for node in e.walk()):
        return e  # most printed expressions have none: no copy
    return e.transform(lambda node: spelled(node) if is_placeholder(node) else node)
