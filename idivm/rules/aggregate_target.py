"""A grouped view as the aggregation rules see it: its intermediate cache, its group keys, and (for
the specialized SUM/COUNT/AVG rules, rules/aggregate_sum.py) the hidden operator-cache columns
its rows carry. Shared by the general rule (rules/aggregate.py) and the specialized ones."""
from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from ..algebra.placeholders import CACHE
from ..algebra.plan import Aggregate
from ..names import SELF, own_part
from ..program.numeric_scale import scale_weight
from ..program.trees import all_of, col, eq
from .spj import MaintainedTable, SpjTarget
from .union import UnionTarget


STATE_N = "__idivm_n"


def state_sum(col_: str) -> str:
    return f"__idivm_s_{col_}"


def state_count(col_: str) -> str:
    return f"__idivm_c_{col_}"


def state_scales(col_: str) -> str:
    return f"__idivm_scales_{col_}"


def state_columns(args: dict[str, bool], scaled: frozenset[str] = frozenset()) -> list[tuple[str, exp.Expression]]:
    """(view column, aggregate over the cache (aliased CACHE_ALIAS) that fills it) for every operator
    cache; a summed column in `scaled` also keeps its values' scales (program/numeric_scale.py)."""
    out: list[tuple[str, exp.Expression]] = [(STATE_N, exp.Count(this=exp.Star()))]
    for c, summed in args.items():
        if summed:
            out.append((state_sum(c), exp.Sum(this=col(CACHE_ALIAS, c))))
        if c in scaled:
            out.append((state_scales(c), exp.Sum(this=scale_weight(col(CACHE_ALIAS, c)))))
        out.append((state_count(c), exp.Count(this=col(CACHE_ALIAS, c))))
    return out



CACHE_ALIAS = "c"


@dataclass
class AggregateTarget(MaintainedTable):
    schema: str
    name: str
    agg: Aggregate
    cache: SpjTarget | UnionTarget  # the intermediate cache: an SPJ view or a UNION ALL
    # set when the specialized SUM/COUNT/AVG rules apply (aggregate_sum.choose_rule): the
    # aggregated cache columns, each with whether it is summed
    sum_args: dict[str, bool] | None = None
    scaled_args: frozenset[str] = frozenset()  # summed columns whose values each have their own scale
    parts: list = field(default_factory=list)  # the targets of the parts it reads (rules/part.py), maintained first

    @property
    def operator(self) -> Aggregate:
        return self.agg

    @property
    def inputs(self) -> list:
        """What it is maintained over (rules.RULES' program rule): its intermediate cache, or nothing
        when it has none (idIVM footnote 6: no cache over a many-to-many join)."""
        return [] if self.agg.no_cache else [self.cache]

    @property
    def _own(self) -> str:
        """"" for the view's own grouping, "_part_<k>" for a part's (their scratch relations differ)."""
        part = own_part(self.name)
        return "" if part == SELF else f"_{part}"

    @property
    def affected(self) -> str:
        """Scratch relation: the groups this maintenance touches."""
        return f"idivm_affected{self._own}"

    @property
    def group_deltas(self) -> str:
        """Scratch relation: per-group sums of the signed changes (specialized rules)."""
        return f"idivm_group_deltas{self._own}"

    @property
    def columns(self) -> list[str]:
        return [n for n, _ in self.agg.outputs] + self.agg.id_names + [n for n, _ in self.state_columns]

    @property
    def state_columns(self) -> list[tuple[str, exp.Expression]]:
        """Hidden operator-cache columns of the view (specialized rules only)."""
        return state_columns(self.sum_args, self.scaled_args) if self.sum_args is not None else []


def bind_cache(e: exp.Expression) -> exp.Expression:
    def fn(node: exp.Expression) -> exp.Expression:
        if CACHE.marks(node):
            return col(CACHE_ALIAS, node.name)
        return node

    return e.transform(fn)


def same_key(a: exp.Expression, b: exp.Expression, nullable: bool = True) -> exp.Expression:
    """Equality of two group-key values. A key that can be NULL needs the null-safe form, written so
    that PostgreSQL can still use an index on either side (a BitmapOr of `= b` and `IS NULL`; IS NOT
    DISTINCT FROM cannot), but that costs an index probe per group and cannot be hashed; a key that
    cannot (Aggregate.never_null_keys) gets plain equality."""
    if not nullable:
        return eq(a, b)
    both_null = exp.And(this=exp.Is(this=a.copy(), expression=exp.null()), expression=exp.Is(this=b.copy(), expression=exp.null()))
    return exp.Paren(this=exp.Or(this=eq(a, b), expression=exp.Paren(this=both_null)))


def match_keys(t: "AggregateTarget", left: str, right: str, left_names: list[str] | None = None) -> exp.Expression:
    """`left` and `right` rows have the same group (left's key columns named left_names, else as the
    keys); TRUE for a global aggregate."""
    never_null = t.agg.never_null_keys()
    names = left_names or t.agg.keys
    return all_of([same_key(col(left, n), col(right, k), k not in never_null) for n, k in zip(names, t.agg.keys)])


