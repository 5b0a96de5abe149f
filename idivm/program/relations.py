"""Abstract relations inside a Δ-program's sqlglot trees, and the i-diff instance's column convention.

A program's sources are sqlglot expression trees, but the relations they read
and write stay abstract until an engine binds them: the same step reads
``Δ[parts]`` from a session temp table on PostgreSQL and from a DataFrame on
Spark. A relation is an ``exp.Table`` whose catalog part names its kind
(``@delta``, ``@base``, ``@view``, ``@scratch``, ``@returned``); the rest says
which one. Such a table prints (and parses back) as ordinary SQL, e.g.
``"@delta"."public.parts"``, so a program survives a JSON round trip through
sqlglot's own tree serialization.

The compiler names relations without any catalog id: a base table's Δ by the
table (``"@delta"."public.parts"``), the view's own tables symbolically
(``"@view"."self"``, ``"@view"."self.cache"``), scratch relations by their
purpose. Registration binds a compiled program to the view's ids
(program/bind.py): ``"@delta"."17"``, ``"idivm"."view_5"``, and so on.

An i-diff instance (paper Section 5: effective diffs of one base table) has one
row per changed key: ``kind`` (I, D or U) and ``pre__c`` / ``post__c`` for every
column c of the table. This module is the one place that spells those names.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from ..names import PART_SCHEMA, display_name, own_table
from .trees import ident

DELTA, BASE, VIEW, SCRATCH, RETURNED = "@delta", "@base", "@view", "@scratch", "@returned"
KINDS = (DELTA, BASE, VIEW, SCRATCH, RETURNED)

KIND_COLUMN = "kind"
INSERTED, DELETED, UPDATED = "I", "D", "U"
KIND_CODE = {"+": INSERTED, "-": DELETED, "u": UPDATED}  # i-diff schema kinds (rules/idiff.py) -> codes
PRE, POST = "pre", "post"


def image_column(image: str, column: str) -> str:
    """The instance column holding one image (PRE or POST) of a base-table column."""
    return f"{image}__{column}"


def imaged_column(instance_column: str) -> str | None:
    """The base-table column an i-diff instance's column holds an image of (pre__c, post__c -> c);
    None for the instance's other columns (the change kind)."""
    for image in (PRE, POST):
        prefix = image_column(image, "")
        if instance_column.startswith(prefix):
            return instance_column[len(prefix):]
    return None


def pre(column: str) -> str:
    return image_column(PRE, column)


def post(column: str) -> str:
    return image_column(POST, column)


def _table(kind: str, name: str, schema: str | None = None, alias: str | None = None) -> exp.Table:
    return exp.Table(this=ident(name), db=ident(schema) if schema is not None else None, catalog=ident(kind),
                     alias=exp.TableAlias(this=ident(alias)) if alias else None)


def delta(schema: str, name: str, alias: str | None = None) -> exp.Table:
    """Δ[t]: the i-diff instance of base table t for this maintenance, named by the table
    (table_key) as the compiler names it; registration binds it to t's captured id. A part's
    (names.PART_SCHEMA) is a scratch relation its own steps fill (rules/part.py)."""
    if schema == PART_SCHEMA:
        return scratch(part_delta(name), alias)
    return _table(DELTA, table_key(schema, name), alias=alias)


def is_part(key: str) -> bool:
    """Whether a table key (table_key) names a part's table rather than a base table."""
    return key.startswith(table_key(PART_SCHEMA, "x")[:-1])


def part_delta(part: str) -> str:
    """The scratch relation holding the i-diff of a part's table (its rows' changes in this maintenance)."""
    return f"idivm_delta_{part}"


def captured_delta(captured_id: int, of: str, alias: str | None = None) -> exp.Table:
    """Δ[t] bound to the captured table's id, as a registered view's program holds it (`of`: the
    table's key, for the printer only)."""
    return _table(DELTA, str(int(captured_id)), of, alias)


def table_key(schema: str, name: str) -> str:
    """How a compiled program names a base table (its Δ, the table whose i-diff drives a step):
    the name as typed back, unambiguous (public.parts, public."Big Parts")."""
    return display_name(schema, name)


def base(schema: str, name: str, alias: str | None = None) -> exp.Table:
    """A base table in the post-state (the maintenance snapshot); a part's (names.PART_SCHEMA):
    the view's own table that holds it, as its steps left it."""
    if schema == PART_SCHEMA:
        return view(*own_table(None, name), alias)
    return _table(BASE, name, schema, alias)


def view(schema: str, name: str, alias: str | None = None) -> exp.Table:
    """A maintained table: the view itself, or one of its caches."""
    return _table(VIEW, name, schema, alias)


def scratch(name: str, alias: str | None = None) -> exp.Table:
    """A relation that lives only during one maintenance (affected groups, signed changes)."""
    return _table(SCRATCH, name, alias=alias)


def returned(alias: str | None = None) -> exp.Table:
    """The rows a step's write just changed (its recorded image), read by the step's Record."""
    return _table(RETURNED, "changed", alias=alias)


@dataclass(frozen=True)
class Relation:
    """Which relation an abstract table stands for."""

    kind: str
    name: str
    schema: str | None = None

    def captured_id(self) -> int | None:
        """A Δ's captured table id once the program is bound (bind.py); None as compiled, where the
        Δ is named by its table."""
        return int(self.name) if self.kind == DELTA and self.name.isdigit() else None

    def label(self) -> str:
        """How the printer shows it: Δ[public.parts], public.parts, view public.v, scratch x."""
        full = f"{self.schema}.{self.name}" if self.schema else self.name
        return {DELTA: f"Δ[{self.schema or self.name}]", BASE: full, VIEW: full, SCRATCH: f"scratch {self.name}",
                RETURNED: "changed"}[self.kind]


def relation_of(node: exp.Expression) -> Relation | None:
    """The abstract relation a table node stands for, or None for any other node."""
    if not isinstance(node, exp.Table) or node.catalog not in KINDS:
        return None
    return Relation(node.catalog, node.name, node.db or None)


def relations(tree: exp.Expression) -> list[Relation]:
    """The abstract relations a tree reads, each once, in order of appearance."""
    out = []
    for node in tree.find_all(exp.Table):
        rel = relation_of(node)
        if rel is not None and rel not in out:
            out.append(rel)
    return out


def bind_relations(tree: exp.Expression, bind) -> exp.Expression:
    """A copy of tree where every abstract relation is replaced by bind(relation) (an exp.Table or any
    from-item), keeping its alias."""
    def fn(node: exp.Expression) -> exp.Expression:
        rel = relation_of(node)
        if rel is None:
            return node
        bound = bind(rel).copy()
        if node.alias:
            bound.set("alias", node.args["alias"].copy())
        return bound

    return tree.transform(fn)  # transform copies the tree first (copy=True)


