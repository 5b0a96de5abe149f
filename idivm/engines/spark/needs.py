"""Which relations a query reads, and which of their columns: Spark reads those columns only
(over JDBC every column read is a column shipped), from the program's trees alone."""
from __future__ import annotations

from sqlglot import exp

from ...program import relations as R


def occurrences(tree: exp.Expression) -> list[R.Relation]:
    """The abstract relations a tree reads, once per place that reads it."""
    return [rel for rel in map(R.relation_of, tree.find_all(exp.Table)) if rel is not None]


def needed_columns(trees: list[exp.Expression]) -> dict[R.Relation, set[str] | None]:
    """Per relation the steps read, the columns they name (None: all of them, where a column is
    not qualified by an alias, a star reads every column, or one alias names different relations
    in different parts of a step, e.g. UNION branches)."""
    out: dict[R.Relation, set[str] | None] = {}
    for tree in trees:
        aliases: dict[str, set[R.Relation]] = {}
        for node in tree.find_all(exp.Table):
            rel = R.relation_of(node)
            if rel is not None:
                aliases.setdefault(node.alias_or_name, set()).add(rel)
                out.setdefault(rel, set())
        everything = any(not isinstance(s.parent, exp.Count)  # count(*) reads no column
                         and not (isinstance(s.parent, exp.Column) and s.parent.table not in aliases)  # sq.*
                         for s in tree.find_all(exp.Star))
        for c in tree.find_all(exp.Column):
            rels = aliases.get(c.table, set())
            everything = everything or not c.table
            for rel in rels:
                if len(rels) > 1:
                    out[rel] = None
                elif out[rel] is not None:
                    out[rel].add(c.name)
        if everything:
            for rels in aliases.values():
                for rel in rels:
                    out[rel] = None
    return out
