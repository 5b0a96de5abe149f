"""The table applications read, for a view under the higher-order strategy: derived from the
view's top-level maps (its COUNT(*) map, and a map per SUM and per COUNT of a nullable argument)
wherever a batch touched them.

Layout (ViewTable): the view's output columns (typed as PostgreSQL types the defining query), then
hidden columns where needed:
- a grouped view has one row per group whose COUNT(*) map is nonzero and whose HAVING holds, keyed
  by its group variables: by the output column that shows a group variable as it is, or by a
  hidden ``__idivm_k<i>`` column; a view with aggregates and no GROUP BY has one row (none if its
  HAVING fails): COUNT of no rows is 0, SUM and AVG of no rows are NULL;
- an SPJ view is a multiset: the rows computed from a key with COUNT(*) map value n are stored n
  times, numbered by the hidden ``__idivm_n`` (1..n), so that (keys, __idivm_n) identify a row.
Keys that may be NULL are matched null-safely and indexed with NULLS NOT DISTINCT.

After the maps phase, the "view from maps" phase rewrites only the rows of the keys the batches
touched (the keys in the increments of the top-level maps): groups that no longer exist are
deleted, changed values updated, new groups inserted (SPJ: copies above the new multiplicity
deleted, missing copies inserted). Output expressions and HAVING are evaluated here, by the
database, over the maps' values (re-evaluated, not maintained: they are functions of the maps).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from ...program import relations as Rl
from ...program.steps import VIEW_FROM_MAPS_PHASE, DeleteMatching, InsertRows, Step, UpdateMatching
from ...program.numeric_scale import shown_sum, zero_of_scale
from ...program.trees import alias, aliased, all_of, col, exists, num, select, shown_differently, subquery, union_all
from .to_steps import VALUE
from .nesting import NestedValue
from .scope import SlotValue, Variable, same
from .translate import Translation

COPY = "__idivm_n"  # an SPJ view's copy number of a row, 1..its multiplicity


@dataclass
class ViewTable:
    """`outputs` (their types come from the defining query); `hidden`: (name, SQL type or None for the
    type of the group variable's column in the COUNT(*) map) after them;
    `keys`: (column, group variable) pairs that identify a group; `nullable`: key columns that may
    be NULL; `copies`: an SPJ view's rows are numbered copies (COPY)."""

    outputs: list[str] = field(default_factory=list)
    hidden: list[tuple[str, str]] = field(default_factory=list)
    keys: list[tuple[str, str]] = field(default_factory=list)
    nullable: set[str] = field(default_factory=set)
    copies: bool = False

    @property
    def columns(self) -> list[str]:
        return self.outputs + [c for c, _ in self.hidden]

    @property
    def primary_key(self) -> list[str]:
        return [c for c, _ in self.keys] + ([COPY] if self.copies else [])

    @property
    def values(self) -> list[str]:
        """Columns recomputed from the maps for a group that exists (the rest identify it)."""
        keys = set(self.primary_key)
        return [c for c in self.columns if c not in keys]


def layout(t: Translation) -> ViewTable:
    out = ViewTable(outputs=[n for n, _ in t.outputs], copies=not t.grouped)
    shown: dict[str, str] = {}
    for n, _ in t.outputs:
        var = t.shown_var(n)
        if var is not None:
            shown.setdefault(var, n)
    for i, var in enumerate(t.group):
        if var not in shown:
            shown[var] = f"__idivm_k{i}"
            out.hidden.append((shown[var], t.types.get(var)))  # None: a GROUP BY expression's, found by the engine
        out.keys.append((shown[var], var))
        if var in t.nullable:
            out.nullable.add(shown[var])
    if out.copies:
        out.hidden.append((COPY, "bigint"))
    return out


class ViewFromMaps:
    """Queries and steps that derive the view's rows from its top-level maps."""

    def __init__(self, translation: Translation, table: ViewTable, view: exp.Table, map_table, nested_value=None):
        """map_table(translation map name) -> the (abstract) table the view reads that map from;
        nested_value(variable, row alias) -> a HAVING subquery's value for the group in that row."""
        self.t, self.table, self.view, self.map_table = translation, table, view, map_table
        self.nested_value = nested_value
        named = [m for s in translation.slots.values() if not s.over_values for m in s.maps
                 if m != translation.count_map]
        self.aliases = {m: f"m{i}" for i, m in enumerate(dict.fromkeys(named))}

    def _map(self, name: str, alias_: str) -> exp.Table:
        return aliased(self.map_table(name), alias_)

    def _keys_equal(self, a: str, b: str) -> exp.Expression:
        """Rows a and b (both with a column per group variable) have the same keys."""
        return all_of([same(col(a, v), col(b, v), v in self.t.nullable) for v in self.t.group])

    def _count(self, name: str) -> exp.Expression:
        """A COUNT map's value for the row at hand; NULL where it is 0 (the map has no row)."""
        return col("c" if name == self.t.count_map else self.aliases[name], VALUE)

    def _slot(self, name: str) -> exp.Expression:
        """A slot's value, of the type PostgreSQL gives its aggregate (maps hold numeric values:
        COUNT(*) / 2 must divide bigints, as the query does)."""
        s = self.t.slots[name]
        if s.over_values:
            return self._over_values(s)
        if s.kind == "count":
            if s.maps[0] == self.t.count_map and self.t.group:
                return exp.cast(col("c", VALUE), "bigint")
            return exp.cast(exp.Coalesce(this=self._count(s.maps[0]), expressions=[num(0)]), "bigint")
        # a map keeps no zero: absent, the sum is 0 with the scale the query shows (0.00 for a
        # numeric(p, 2)), as any other sum of an unconstrained numeric (program/numeric_scale.py)
        zero = zero_of_scale(s.scale) if s.type == "numeric" and s.scale is not None else num(0)
        total = exp.cast(exp.Coalesce(this=col(self.aliases[s.maps[0]], VALUE), expressions=[zero]), s.type)
        if s.scale is None:
            total = shown_sum(total, col(self.aliases[s.maps[2]], VALUE))
        count = self._count(s.maps[1])
        if s.kind == "avg":
            return exp.Div(this=exp.cast(total, "numeric"), expression=count)
        if s.maps[1] == self.t.count_map and self.t.group:
            return total  # the group exists: its COUNT(*) is not 0, nor is its COUNT(arg) (never NULL)
        return exp.Case(ifs=[exp.If(this=exp.Not(this=exp.Is(this=count, expression=exp.Null())), true=total)])

    def _over_values(self, s) -> exp.Expression:
        """MIN / MAX / COUNT, SUM or AVG(DISTINCT) of the group (row c) from its values map: the keys
        are its distinct values, so SUM / AVG of them is the query's (typed as the query types it:
        the keys have the argument's type)."""
        agg = {"min": exp.Min, "max": exp.Max, "sum_distinct": exp.Sum, "avg_distinct": exp.Avg}.get(s.kind)
        value = agg(this=col("w", s.vars[0])) if agg else exp.Count(this=exp.Star())  # a key a row
        return exp.Subquery(this=select([value], [self._map(s.maps[0], "w")],
                                        [self._keys_equal("w", "c")] if self.t.group else None))

    def _maps_read(self, e: exp.Expression | None) -> set[str]:
        if e is None:
            return set()
        slots = [self.t.slots[c.name] for c in SlotValue.find_all(e)]
        return {m for s in slots if not s.over_values for m in s.maps}

    def _over_maps(self, e: exp.Expression) -> exp.Expression:
        def put(node: exp.Expression) -> exp.Expression:
            if Variable.marks(node):
                return col("c", node.name)
            if SlotValue.marks(node):
                return self._slot(node.name)
            if NestedValue.marks(node):
                return self.nested_value(node.name, "c")
            return node

        return e.transform(put)

    def _from_maps(self, outputs: list[exp.Expression], where: list[exp.Expression],
                   joined: exp.Expression | None | bool = True) -> exp.Select:
        """SELECT outputs FROM the COUNT(*) map joined with the other top-level maps WHERE ...; without
        group variables, one row whether or not the maps have one. `joined`: True joins every map
        the outputs read; an expression (or None), only the maps it reads (an existence test)."""
        if self.t.group:
            q = select(outputs, [self._map(self.t.count_map, "c")])
        else:
            q = select(outputs, [subquery(select([alias(num(1), "one")], []), "u")])
            q = q.join(self._map(self.t.count_map, "c"), on=exp.true(), join_type="left", copy=False)
        needed = set(self.aliases) if joined is True else self._maps_read(joined)
        for name, a in self.aliases.items():
            if name not in needed:
                continue
            on = self._keys_equal("c", a) if self.t.group else exp.true()
            q = q.join(self._map(name, a), on=on, join_type="left", copy=False)
        conds = list(where) + ([self._over_maps(self.t.having)] if self.t.having is not None else [])
        return q.where(all_of(conds), copy=False) if conds else q

    def rows(self, touched: exp.Query | None = None) -> exp.Select:
        """The view's rows as the maps say, in the table's column order (SPJ: one per key, its
        copies added by the caller), for every group or only those whose keys `touched` yields."""
        outs = [alias(self._over_maps(e), n) for n, e in self.t.outputs]
        outs += [alias(col("c", var), c) for c, var in self.table.keys if c not in self.table.outputs]
        where = []
        if touched is not None and self.t.group:
            if self.t.nullable & set(self.t.group):
                where.append(exists(select([num(1)], [subquery(touched, "a")], [self._keys_equal("c", "a")])))
            else:
                keys = exp.Tuple(expressions=[col("c", v) for v in self.t.group])
                where.append(exp.In(this=keys, query=exp.Subquery(this=touched.copy())))
        return self._from_maps(outs, where)

    def fill(self) -> exp.Query:
        """Every row of the view (the initial fill), in the column order of the table."""
        return self._with_copies(self.rows(), first=None)

    def _with_copies(self, rows: exp.Select, first: exp.Expression | None) -> exp.Select:
        """SPJ views: each row repeated as copies first..COUNT (first: None for 1)."""
        if not self.table.copies:
            return rows
        start = num(1) if first is None else first
        series = exp.GenerateSeries(start=start, end=col("c", VALUE))  # sqlglot's node: each engine its own form
        return rows.select(alias(series, COPY), copy=False)

    def _view(self, alias_: str) -> exp.Table:
        return aliased(self.view, alias_)

    def _match(self, a: str, b: str, by_var: bool) -> exp.Expression:
        """The view row (alias a) has the keys of the row b (b: by group variable, or by column)."""
        return all_of([same(col(a, c), col(b, var if by_var else c), c in self.table.nullable)
                       for c, var in self.table.keys])

    def steps(self, touched: exp.Query | None) -> list[Step]:
        """Rewrite the rows of the touched keys (`touched`: a query of the group variables; None
        without group variables: the one row)."""
        if self.table.copies:
            return self._copy_steps(touched)
        phase, view = VIEW_FROM_MAPS_PHASE, self._view("v")
        values = self.table.values
        changed = shown_differently([col("v", c) for c in values], [col("n", c) for c in values])
        steps: list[Step] = []
        if self.t.group:
            still = exists(self._from_maps([num(1)], [self._keys_equal("c", "a")], joined=self.t.having))
            steps.append(DeleteMatching(phase=phase, purpose="groups that no longer exist (COUNT(*) 0 or HAVING false)",
                                        target=view.copy(), using=[subquery(touched.copy(), "a")],
                                        condition=all_of([self._match("v", "a", by_var=True), exp.Not(this=still)])))
            if values:
                steps.append(UpdateMatching(
                    phase=phase, purpose="changed values of the groups", target=view.copy(),
                    assignments=[(c, col("n", c)) for c in values], using=[subquery(self.rows(touched.copy()), "n")],
                    condition=all_of([self._match("v", "n", by_var=False), changed])))
            steps.append(InsertRows(phase=phase, purpose="new groups", target=self.view.copy(), columns=self.table.columns,
                                    source=self.rows(touched.copy()), unique_on=self.table.primary_key))
            return steps
        if self.t.having is not None:
            steps.append(DeleteMatching(phase=phase, purpose="the row, if its HAVING no longer holds", target=view.copy(),
                                        using=[], condition=exp.Not(this=exists(self.rows()))))
        steps.append(UpdateMatching(phase=phase, purpose="the one row of an aggregate without GROUP BY",
                                    target=view.copy(), assignments=[(c, col("n", c)) for c in values],
                                    using=[subquery(self.rows(), "n")], condition=changed))
        missing = self.rows().where(exp.Not(this=exists(select([num(1)], [self._view("w")]))), copy=False)
        steps.append(InsertRows(phase=phase, purpose="the row, if it was missing", target=self.view.copy(),
                                columns=self.table.columns, source=missing))
        return steps

    def _copy_steps(self, touched: exp.Query | None) -> list[Step]:
        """An SPJ view's rows are copies of each key's row: those above its multiplicity go, those
        below are added (touched None: a view without group variables, whose one row every
        change touches)."""
        phase = VIEW_FROM_MAPS_PHASE
        count = self._map(self.t.count_map, "c")
        using = [subquery(touched.copy(), "a")] if touched is not None else []
        multiplicity = exp.Coalesce(
            this=exp.Subquery(this=select([col("c", VALUE)], [count], [self._keys_equal("c", "a")])),
            expressions=[num(0)])
        drop = DeleteMatching(phase=phase, purpose="copies above the rows' new multiplicities",
                              target=self._view("v"), using=using,
                              condition=all_of([self._match("v", "a", by_var=True),
                                                exp.GT(this=col("v", COPY), expression=multiplicity)]))
        held = select([exp.Max(this=col("w", COPY))], [self._view("w")], [self._match("w", "c", by_var=True)])
        first = exp.Add(this=exp.Coalesce(this=exp.Subquery(this=held), expressions=[num(0)]), expression=num(1))
        add = InsertRows(phase=phase, purpose="the copies the rows' multiplicities gained",
                         target=self.view.copy(), columns=self.table.columns,
                         source=self._with_copies(self.rows(touched.copy() if touched is not None else None), first))
        return [drop, add]


def touched_keys(group: tuple[str, ...], scratches: list[str]) -> exp.Query:
    """The group variables' values in the increments of the top-level maps (scratch relations)."""
    parts = [select([col(None, v) for v in group], [Rl.scratch(s)]) for s in scratches]
    return union_all(parts, distinct=True)
