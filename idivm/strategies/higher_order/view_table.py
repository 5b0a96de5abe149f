"""The table applications read, for a view under the higher-order strategy: rebuilt from the view's
top-level maps (its COUNT(*) map and one map per SUM) wherever a batch touched them.

Layout (ViewTable):
- a grouped view has one row per group whose COUNT(*) map is nonzero, keyed by its group variables:
  by the output column that shows a group variable, or by a hidden ``__idivm_k<i>`` column when no
  output does; a view with aggregates and no GROUP BY has exactly one row (SQL: COUNT of no rows is
  0, SUM and AVG of no rows are NULL);
- an SPJ view is a multiset: a row with COUNT(*) map value n is stored n times, numbered by the
  hidden ``__idivm_n`` (1..n), so that (output keys, __idivm_n) is a primary key and a view over
  this one can capture it.

After the maps phase, the "view from maps" phase rewrites only the rows of the keys the batches
touched (the keys in the increments of the top-level maps): deletes the groups whose count reached
0 (SPJ: the copies numbered above the new count), updates the changed aggregates, inserts new
groups (SPJ: the missing copies).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from ...program import relations as Rl
from ...program.steps import VIEW_FROM_MAPS_PHASE, DeleteMatching, InsertRows, Step, UpdateMatching
from ...program.trees import alias, all_of, col, distinct_from, eq, exists, num, select, subquery
from .to_steps import VALUE
from .translate import Translation

COPY = "__idivm_n"  # an SPJ view's copy number of a row, 1..its multiplicity


@dataclass
class ViewTable:
    """Columns (name, SQL type) in table order; `keys`: (column, group variable) pairs that identify
    a group; `copies`: an SPJ view's rows are numbered copies (COPY)."""

    columns: list[tuple[str, str]] = field(default_factory=list)
    keys: list[tuple[str, str]] = field(default_factory=list)
    copies: bool = False

    @property
    def primary_key(self) -> list[str]:
        return [c for c, _ in self.keys] + ([COPY] if self.copies else [])

    @property
    def values(self) -> list[str]:
        """Columns recomputed from the maps for a group that exists (the rest identify it)."""
        keys = set(self.primary_key)
        return [c for c, _ in self.columns if c not in keys]


def layout(t: Translation) -> ViewTable:
    out = ViewTable(columns=[(n, t.output_type(n)) for n, _ in t.outputs], copies=not t.grouped)
    shown = {}
    for n, (kind, arg) in t.outputs:
        if kind == "var":
            shown.setdefault(arg, n)
    for i, var in enumerate(t.group):
        if var not in shown:
            shown[var] = f"__idivm_k{i}"
            out.columns.append((shown[var], t.types[var]))
        out.keys.append((shown[var], var))
    if out.copies:
        out.columns.append((COPY, "bigint"))
    return out


class ViewFromMaps:
    """Queries and steps that derive the view's rows from its top-level maps."""

    def __init__(self, translation: Translation, table: ViewTable, view: exp.Table, map_table):
        """map_table(translation map name) -> the (abstract) table of the top-level map."""
        self.t, self.table, self.view, self.map_table = translation, table, view, map_table

    def _map(self, name: str, alias_: str) -> exp.Table:
        ref = self.map_table(name).copy()
        ref.set("alias", exp.TableAlias(this=exp.to_identifier(alias_, quoted=True)))
        return ref

    def _sum_aliases(self) -> dict[str, str]:
        names = [arg for _, (kind, arg) in self.t.outputs if kind == "map" and arg != self.t.count_map]
        names += [arg[0] for _, (kind, arg) in self.t.outputs if kind == "avg"]
        return {n: f"s{i}" for i, n in enumerate(dict.fromkeys(names))}

    def _value(self, kind: str, arg, sums: dict[str, str]) -> exp.Expression:
        count = col("c", VALUE)
        if kind == "var":
            return col("c", arg)
        if kind == "map" and arg == self.t.count_map:
            return count if self.t.group else exp.Coalesce(this=count, expressions=[num(0)])
        if kind == "map":
            total = exp.Coalesce(this=col(sums[arg], VALUE), expressions=[num(0)])
            if self.t.group:
                return total
            return exp.Case(ifs=[exp.If(this=exp.Not(this=exp.Is(this=col("c", VALUE), expression=exp.Null())),
                                        true=total)])
        summed, _ = arg
        total = exp.Coalesce(this=col(sums[summed], VALUE), expressions=[num(0)])
        return exp.Div(this=exp.cast(total, "numeric"), expression=count)  # NULL count: no rows, NULL

    def rows(self, touched: exp.Query | None = None) -> exp.Select:
        """The view's rows as the maps say (SPJ: one row per distinct row, its copies added by the
        caller), for every group or only those whose keys `touched` yields."""
        sums = self._sum_aliases()
        outs = [alias(self._value(kind, arg, sums), n) for n, (kind, arg) in self.t.outputs]
        outs += [alias(col("c", var), c) for c, var in self.table.keys if c not in dict(self.t.outputs)]
        if self.t.group:
            q = select(outs, [self._map(self.t.count_map, "c")])
            if touched is not None:
                keys = exp.Tuple(expressions=[col("c", v) for v in self.t.group])
                q = q.where(exp.In(this=keys, query=exp.Subquery(this=touched)), copy=False)
        else:  # one row, whether or not the maps have one
            q = select(outs, [subquery(select([alias(num(1), "one")], []), "u")])
            q = q.join(self._map(self.t.count_map, "c"), on=exp.true(), join_type="left", copy=False)
        for name, a in sums.items():
            on = all_of([eq(col("c", v), col(a, v)) for v in self.t.group]) if self.t.group else exp.true()
            q = q.join(self._map(name, a), on=on, join_type="left", copy=False)
        return q

    def fill(self) -> exp.Query:
        """Every row of the view (the initial fill), in the column order of the table."""
        return self._with_copies(self.rows(), first=None)

    def _with_copies(self, rows: exp.Select, first: exp.Expression | None) -> exp.Select:
        """SPJ views: each row repeated as copies first..COUNT (first: None for 1)."""
        if not self.table.copies:
            return rows
        start = num(1) if first is None else first
        series = exp.Anonymous(this="generate_series", expressions=[start, col("c", VALUE)])
        return rows.select(alias(series, COPY), copy=False)

    def _view(self, alias_: str) -> exp.Table:
        v = self.view.copy()
        v.set("alias", exp.TableAlias(this=exp.to_identifier(alias_, quoted=True)))
        return v

    def _match(self, a: str, b: str, by_var: bool = False) -> exp.Expression:
        """The view row (alias a) has the keys of the row b (a touched-keys row: by variable)."""
        return all_of([eq(col(a, c), col(b, var if by_var else c)) for c, var in self.table.keys])

    def steps(self, touched: exp.Query) -> list[Step]:
        """Rewrite the rows of the touched keys (`touched`: a query of the group variables)."""
        phase, cols = VIEW_FROM_MAPS_PHASE, [c for c, _ in self.table.columns]
        count = self._map(self.t.count_map, "c")
        if not self.t.group:
            now = subquery(self.rows(), "n")
            values = self.table.values
            return [UpdateMatching(
                phase=phase, purpose="the one row of an aggregate without GROUP BY from its maps",
                target=self._view("v"), assignments=[(c, col("n", c)) for c in values], using=[now],
                condition=distinct_from(exp.Tuple(expressions=[col("v", c) for c in values]),
                                        exp.Tuple(expressions=[col("n", c) for c in values])))]
        vars_ = self.t.group
        in_count = all_of([eq(col("c", v), col("a", v)) for v in vars_])
        if self.table.copies:
            multiplicity = exp.Coalesce(this=exp.Subquery(this=select([col("c", VALUE)], [count], [in_count])),
                                        expressions=[num(0)])
            drop = DeleteMatching(phase=phase, purpose="copies above the rows' new multiplicities",
                                  target=self._view("v"), using=[subquery(touched.copy(), "a")],
                                  condition=all_of([self._match("v", "a", by_var=True),
                                                    exp.GT(this=col("v", COPY), expression=multiplicity)]))
            held = select([exp.Max(this=col("w", COPY))], [self._view("w")], [self._match("w", "c", by_var=True)])
            first = exp.Add(this=exp.Coalesce(this=exp.Subquery(this=held), expressions=[num(0)]), expression=num(1))
            add = InsertRows(phase=phase, purpose="the copies the rows' multiplicities gained",
                             target=self.view.copy(), columns=cols,
                             source=self._with_copies(self.rows(touched.copy()), first))
            return [drop, add]
        gone = DeleteMatching(phase=phase, purpose="groups whose COUNT(*) reached 0", target=self._view("v"),
                              using=[subquery(touched.copy(), "a")],
                              condition=all_of([self._match("v", "a", by_var=True),
                                                exp.Not(this=exists(select([num(1)], [count], [in_count])))]))
        steps: list[Step] = [gone]
        values = self.table.values
        if values:
            steps.append(UpdateMatching(
                phase=phase, purpose="changed aggregates of the groups", target=self._view("v"),
                assignments=[(c, col("n", c)) for c in values], using=[subquery(self.rows(touched.copy()), "n")],
                condition=all_of([self._match("v", "n"),
                                  distinct_from(exp.Tuple(expressions=[col("v", c) for c in values]),
                                                exp.Tuple(expressions=[col("n", c) for c in values]))])))
        steps.append(InsertRows(phase=phase, purpose="new groups", target=self.view.copy(), columns=cols,
                                source=self.rows(touched.copy()), unique_on=self.table.primary_key))
        return steps


def touched_keys(group: tuple[str, ...], scratches: list[str]) -> exp.Query:
    """The group variables' values in the increments of the top-level maps (scratch relations)."""
    parts = [select([col(None, v) for v in group], [Rl.scratch(s)]) for s in scratches]
    out = parts[0]
    for p in parts[1:]:
        out = exp.Union(this=out, expression=p, distinct=True)
    return out
