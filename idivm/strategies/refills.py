"""What recomputes a registered view's tables (program/steps.Refill): each table with the query that
fills it, in the order registration fills them (engines/postgres/materialize.py), so that a query
reading another of the view's tables (an aggregate over its cache, a view over its parts, the view
over its maps) reads it refilled."""
from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from ..program.steps import CACHE_ROLE, MAP_UNIT, VIEW_ROLE, Refill
from ..program.trees import alias, select, subquery
from ..rules.aggregate import group_select
from ..rules.aggregate_target import AggregateTarget
from ..rules.spj import SpjTarget, full_query
from ..rules.union import UnionTarget
from ..sqltext import table_expr
from .higher_order.target import HigherOrderTarget


def refills(target) -> list[Refill]:
    """A bound target's refills: its parts' (each a cache of the view), then its own."""
    return [r for part in getattr(target, "parts", None) or [] for r in _own(part, CACHE_ROLE)] + _own(target, VIEW_ROLE)


def map_fill(keys: list[str], query: exp.Query) -> exp.Query:
    """A map's contents from its definition: a map without keys keyed by the constant MAP_UNIT."""
    if keys:
        return query
    return select([alias(exp.true(), MAP_UNIT), exp.Column(this=exp.Star(), table=exp.to_identifier("f"))],
                  [subquery(query, "f")])


def _own(target, role: str) -> list[Refill]:
    if isinstance(target, HigherOrderTarget):
        out = []
        for name, keys, nullable, query in target.map_fills():
            filled = map_fill(keys, query)
            out.append(Refill(target=table_expr("idivm", name), columns=([] if keys else [MAP_UNIT]) + query.named_selects,
                              source=filled, keys=[k for k in keys if k not in nullable] if keys else [MAP_UNIT],
                              role=CACHE_ROLE))
        layout = target.table
        return out + [Refill(target=table_expr(target.schema, target.name), columns=layout.columns,
                             source=target.view_from_maps.fill(),
                             keys=[k for k in layout.primary_key if k not in layout.nullable], role=role)]
    if isinstance(target, AggregateTarget):
        never_null = target.agg.never_null_keys()
        keys = [h for k, h in zip(target.agg.keys, target.agg.id_names) if k in never_null]
        cache = [] if target.agg.no_cache else _own(target.cache, CACHE_ROLE)
        # the view's rows without its cache (program/steps.Refill.direct): the aggregate over the
        # cache's query, as without a cache (rules/aggregate.input_source); not over parts, which
        # would be left stale with it, nor over a UNION ALL cache
        direct = None
        if cache and role == VIEW_ROLE and not getattr(target, "parts", None) and isinstance(target.cache, SpjTarget):
            direct = group_select(replace(target, agg=replace(target.agg, no_cache="recomputed")), restrict=False)
        return cache + [Refill(target=table_expr(target.schema, target.name), columns=target.columns,
                               source=group_select(target, restrict=False), keys=keys, role=role, direct=direct)]
    if isinstance(target, UnionTarget):  # its rows are one branch's (BRANCH_COLUMN): only whole rows identify them
        query = target.query()
        return [Refill(target=table_expr(target.schema, target.name), columns=query.named_selects, source=query,
                       keys=[], role=role)]
    assert isinstance(target, SpjTarget), type(target)
    query = full_query(target)
    return [Refill(target=table_expr(target.schema, target.name), columns=query.named_selects, source=query,
                   keys=[i.name for i in target.plan.ids], role=role)]
