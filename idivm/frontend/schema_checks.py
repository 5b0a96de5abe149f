"""Refusals that need the schema provider's answers about the qualified query: functions whose value
may change while no table changes (volatile and stable calls, as the database resolves their
overloads), and columns whose type has no equality (a view's rows are compared and grouped).
The frontend runs them on each SELECT once its columns are qualified (build_plan.py); the
refusals of the parsed statement's shape are checks.py's."""
from __future__ import annotations

from sqlglot import exp

from ..errors import UnsupportedQuery


def check_comparable(schema, tree: exp.Expression, infos: dict) -> None:
    """Refuse columns the view reads whose type has no equality (json, point, xml, json[], ...):
    maintenance compares a column's old and new values and matches rows by value, which PostgreSQL
    cannot do for them. The column is named, with what works. Columns the view does not read may
    have any type (capture compares whole rows as jsonb). schema: a frontend/schema.SchemaProvider."""
    by_alias = {t.alias_or_name: infos[(t.db, t.name)] for t in tree.find_all(exp.Table) if (t.db, t.name) in infos}
    used: dict[str, list[str]] = {}
    for c in tree.find_all(exp.Column):
        info = by_alias.get(c.table)
        if info is None:
            continue
        typ = dict(info.columns).get(c.name)
        if typ is not None:
            used.setdefault(typ, []).append(f"{info.schema}.{info.name}.{c.name}")
    for typ, columns in sorted(used.items()):
        if not schema.has_equality(typ):
            instead = typ.replace("json", "jsonb", 1) if typ.startswith("json") and not typ.startswith("jsonb") \
                else "text"
            raise UnsupportedQuery(
                f"column {sorted(set(columns))[0]} has type {typ}, which has no equality operator, so "
                "maintenance could not tell its changes (even under a cast: it compares the column itself); "
                f"change the column's type to {instead}, or read a generated column "
                f"(GENERATED ALWAYS AS (CAST(... AS {instead})) STORED) instead")


def check_deterministic(schema, tree: exp.Expression) -> None:
    """Refuse volatile and stable functions: their value can change without any table changing.

    Judged by the overload the database resolves for the argument types, not by name: extract(year
    FROM date_col) calls an immutable date_part, date_part('year', timestamptz_col) a stable one
    (it depends on the session's TimeZone). schema: a frontend/schema.SchemaProvider."""
    bad = schema.non_immutable_calls(tree)
    if bad:
        names = ", ".join(fn for fn, _ in bad)
        why = ("volatile in PostgreSQL (its result can change from one call to the next)"
               if any(v == "v" for _, v in bad) else
               "stable in PostgreSQL for these argument types (its result depends on session settings such as "
               "TimeZone or DateStyle, or on the database's state)")
        raise UnsupportedQuery(f"function {names} is {why}, so a maintained view could not stay equal to its "
                               "query; maintained views use immutable functions only")
