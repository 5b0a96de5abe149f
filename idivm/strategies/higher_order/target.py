"""A view maintained by the higher-order strategy: its AGCA translation, the maps the viewlet
transform chose, the tables they live in, and its Δ-program (VLDBJ'14 Section 4: one trigger
program per base relation; here one per captured table's batch, run one table after another).

Maps are tables ``idivm.map_<view id>_<map>`` (symbolic, ``self.map_<map>``, as compiled) with the map's keys (named by their variables) and
``__value``; the view table is derived from the top-level maps (view_table.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from ...algebra.columns_read import columns_read
from ...algebra.placeholders import is_placeholder
from ...algebra.plan import Aggregate, scans
from ...calculus.expr import Atom, Cmp, DeltaRel, Var
from ...calculus.printer import show
from ...names import own_table
from ...program import relations as Rl
from ...program.steps import CACHE_ROLE, VIEW_FROM_MAPS_PHASE, AddToMap, CreateScratch, InsertRows, Program
from ...program.trees import alias, aliased, any_of, col, exists, num, select, subquery, union_all
from .nesting import (Contribution, changed_keys, contribution_fill, contribution_value, correlated_groups, decision,
                      nested_value, reevaluated, restricted, view_fill)
from .scope import Variable, relation_name_of, same, variable
from .to_steps import VALUE, BaseTable, Binder, definition_query, trigger_steps
from .translate import Translation, translate
from .view_table import ViewFromMaps, ViewTable, layout, touched_keys
from .viewlet import Compiled, compile_queries, expand

STRATEGY = "higher-order"


def map_table_name(view_id: int | None, map_name: str) -> str:
    """A map's table (idivm/names.py, own_table): symbolic as compiled (view_id None)."""
    return own_table(view_id, f"map_{map_name.lower()}")[1]


@dataclass
class HigherOrderTarget:
    schema: str
    name: str
    view_id: int | None  # None as compiled; the view's id once registration bound it (targets.bind_target)
    translation: Translation
    compiled: Compiled
    tables: dict[str, BaseTable]  # calculus relation name -> base table
    definition: str  # the view's SQL, which types its columns
    nullable: frozenset[str]  # variables that may hold NULL

    @property
    def table(self) -> ViewTable:
        return layout(self.translation)

    def count_map_table(self) -> str:
        """The table of the COUNT(*) map (its key columns type the view's hidden keys)."""
        return map_table_name(self.view_id, self.compiled.top[self.translation.count_map])

    def map_table(self, map_name: str) -> exp.Table:
        return Rl.view(*own_table(self.view_id, f"map_{map_name.lower()}"))

    @property
    def binder(self) -> Binder:
        return Binder(self.tables, self.map_table, {m.name: m.keys for m in self.compiled.maps}, self.nullable)

    @property
    def view_from_maps(self) -> ViewFromMaps:
        return ViewFromMaps(self.translation, self.table, Rl.view(self.schema, self.name), self.view_level_map,
                            self.having_value)

    def having_value(self, var: str, row: str) -> exp.Expression:
        """A HAVING subquery's nested value for the group in row `row` of the view's maps."""
        t = self.translation
        i, n = next((i, n) for i, n in enumerate(t.having_nested) if n.var == var)
        return nested_value(n, self.map_table(self.compiled.top[t.having_map(i)]), row)

    def touched_by_having(self, written: list[tuple[str, str]]) -> list[exp.Query]:
        """Groups whose HAVING subqueries' values a batch changed."""
        t, top = self.translation, self.compiled.top
        counts = self.view_level_map(t.count_map)
        return [correlated_groups(n, t.group, counts, scratch) for i, n in enumerate(t.having_nested)
                for m, scratch in written if m == top[t.having_map(i)]]

    def view_level_map(self, name: str) -> exp.Table:
        """A map the view table reads: its top-level map, or under nesting its V (nesting.py)."""
        if self.translation.nesting is not None:
            return self.contributions()[name].view
        return self.map_table(self.compiled.top[name])

    def view_level_names(self) -> list[str]:
        t = self.translation
        nested = {t.nested_map(i) for i in range(len(t.nesting.nested))} if t.nesting else set()
        nested |= {t.having_map(i) for i in range(len(t.having_nested))}
        return [n for n in t.maps if n not in nested]

    def nested_tables(self) -> list[exp.Table]:
        t = self.translation
        return [self.map_table(self.compiled.top[t.nested_map(i)]) for i in range(len(t.nesting.nested))]

    def contributions(self) -> dict[str, Contribution]:
        """Under nesting, each view-level map's contributions C and its V (nesting.py)."""
        t, top, out = self.translation, self.compiled.top, {}
        for name in self.view_level_names():
            extra = tuple(v for v in t.value_vars.get(name, ()) if v not in t.group)
            keys = self.compiled.map(top[name]).keys
            out[name] = Contribution(name, keys, t.group + extra, self.map_table(top[name]),
                                     self.map_table(f"c_{name}"), self.map_table(f"v_{name}"),
                                     frozenset(k for k in keys if k in self.nullable))
        return out

    def map_fills(self) -> list[tuple[str, list[str], list[str], exp.Query]]:
        """Each map's table name, keys, keys that may be NULL, and initial contents (its definition
        over the base tables)."""
        b = self.binder
        out = [(map_table_name(self.view_id, m.name), list(m.keys), [k for k in m.keys if k in self.nullable],
                definition_query(m, b)) for m in self.compiled.maps]
        if self.translation.nesting is not None:
            nested = self.nested_tables()
            for c in self.contributions().values():
                out.append((c.contributions.name, list(c.keys), sorted(c.nullable),
                            contribution_fill(self.translation.nesting, c, nested)))
                out.append((c.view.name, list(c.group), [k for k in c.group if k in c.nullable], view_fill(c)))
        return out

    def map_lookups(self) -> dict[str, list[tuple[str, ...]]]:
        """Per map table, the key subsets by which trigger programs look it up beyond its primary key
        (the map's variables the batch's atom binds in one monomial, directly or through equality
        comparisons), each worth an index."""
        out: dict[str, list[tuple[str, ...]]] = {}
        keys = {m.name: m.keys for m in self.compiled.maps}
        for stmts in self.compiled.triggers.values():
            for _, e in stmts:
                for _, _, factors in expand(e):
                    bound = _equal_closure({v for f in factors if isinstance(f, DeltaRel) for v in f.vars}, factors)
                    for f in factors:
                        if isinstance(f, Atom) and not isinstance(f, DeltaRel) and f.name in keys:
                            cols = tuple(v for v in keys[f.name] if v in bound)
                            pk = keys[f.name]
                            self._lookup(out, f.name, pk, cols)
        t = self.translation
        if t.nesting is not None:  # changed_keys finds outer rows by the variables the correlation reads
            for name in self.view_level_names():
                outer = self.compiled.top[name]
                for n in t.nesting.nested:
                    used = {c.name for e in n.correlation for c in Variable.find_all(e)}
                    self._lookup(out, outer, keys[outer], tuple(v for v in keys[outer] if v in used))
        return out

    def _lookup(self, out: dict, map_name: str, pk: tuple[str, ...], cols: tuple[str, ...]) -> None:
        if cols and cols != pk[:len(cols)]:
            found = out.setdefault(map_table_name(self.view_id, map_name), [])
            if cols not in found:
                found.append(cols)

    def catalog_ids(self) -> list[list[str]]:
        """The view table's identifying columns, as the catalog records IDs: [kind, source, column]."""
        t = self.table
        return [["group", var, c] for c, var in t.keys] + ([["copy", "n", "__idivm_n"]] if t.copies else [])

    def describe(self) -> list[str]:
        """What explain shows before the program: the view in AGCA, the maps and trigger programs."""
        t = self.translation
        lines = ["view in AGCA:"]
        lines += [f"  {name} := {show(q)}" for name, q in t.maps.items()]
        # nesting.py: the view re-evaluated from its maps (VLDBJ'14 Figure 1's rule 4: nested
        # aggregates materialized on their own)
        if t.nesting is not None:
            for i, n in enumerate(t.nesting.nested):
                corr = " AND ".join(_placeholders(c) for c in n.correlation) or "TRUE"
                lines.append(f"  {n.var} := Sum[]({t.nested_map(i)}({', '.join(n.keys)}) * [{corr}])")
            cond = " AND ".join(_placeholders(c) for c in t.nesting.conditions)
            lines.append("  re-evaluate or increment (VLDBJ'14 Section 5.1), per nested aggregate:")
            lines += [f"    {decision(n, t.nested_map(i))}" for i, n in enumerate(t.nesting.nested)]
            lines.append(f"  for each view map L: C_L[{', '.join(t.map_keys)}] := L * [{cond}], re-evaluated where a "
                         f"batch can change it; V_L[{', '.join(t.group)}] := Sum[{', '.join(t.group)}](C_L), "
                         "kept by C's differences")
        lines.append("maps (viewlet transform: each map is the database part of a delta of another, after polynomial "
                     "expansion; keyed by what the batch, the conditions and that map's keys need; 'why' names the delta):")
        lines += ["  " + line for line in self.compiled.format().splitlines()]
        lines.append("view table from: " + ", ".join(f"{n} = {self.compiled.top[n]}" for n in self.translation.maps))
        return lines


def _equal_closure(bound: set[str], factors) -> set[str]:
    """The variables bound, and those an equality comparison ties to a bound one (a join condition
    between the batch and a map is a lookup of the map by that column)."""
    pairs = [(f.left.name, f.right.name) for f in factors
             if isinstance(f, Cmp) and f.op == "=" and isinstance(f.left, Var) and isinstance(f.right, Var)]
    grown = True
    while grown:
        grown = False
        for a, b in pairs:
            if (a in bound) != (b in bound):
                bound |= {a, b}
                grown = True
    return bound


def _placeholders(e: exp.Expression) -> str:
    """SQL over placeholders, shown with bare variable names."""
    def bare(node: exp.Expression) -> exp.Expression:
        return exp.column(node.name) if is_placeholder(node) else node

    return e.transform(bare).sql("postgres")


def make_higher_order_target(schema: str | None, name: str, plan, definition: str, sum_type=None) -> HigherOrderTarget:
    """sum_type(cache column) -> the type of SUM of a grouped view's aggregate argument, if that is
    of an exact type (translate.translate)."""
    translation = translate(plan, sum_type)
    spj = plan.cache if isinstance(plan, Aggregate) else plan
    read = [(s.alias, s.table) for s in scans(spj)] + [(q.alias, q.table) for q in getattr(spj, "subqueries", [])]
    read += [(q.alias, q.table) for q in getattr(plan, "having_subqueries", [])]
    reading = columns_read(plan)  # the columns of each table its relations hold (scope.Scope.atom)
    read = [(a, t.reading(reading[(t.schema, t.name)])) for a, t in read]
    tables = {relation_name_of(t): BaseTable(t.schema, t.name, t.column_names)
              for _, t in read}
    nullable = frozenset(variable(a, c) for a, t in read for c in t.column_names
                         if not t.never_null(c)) | translation.lifted
    columns = {variable(a, c) for a, t in read for c in t.column_names}
    compiled = compile_queries(translation.maps, frozenset(columns - nullable))
    return HigherOrderTarget(schema, name, None, translation, compiled, tables, definition, nullable)


def higher_order_program(target: HigherOrderTarget) -> Program:
    """Each captured table's batch in turn: its increments, then the maps' additions; then the view's
    rows of the touched keys from the top-level maps."""
    program = Program(strategy=STRATEGY, derivations=target.describe())
    binder = target.binder
    t = target.translation
    top = target.compiled.top
    written: list[tuple[str, str]] = []
    kept = frozenset(top.values())  # later steps read which keys of these a batch touched
    for i, relation in enumerate(sorted(target.compiled.triggers), 1):
        t_ = target.tables[relation]
        steps, w = trigger_steps(target.compiled, relation, binder, lambda k, i=i: f"idivm_inc_{i}_{k}",
                                 driven_by=Rl.table_key(t_.schema, t_.name), kept=kept)
        program.steps += steps
        written += w
    if t.nesting is not None:
        touched = _contribution_steps(target, program, written)
    else:
        view_level = {top[n] for n in target.view_level_names()}
        touched = [scratch for m, scratch in written if m in view_level]
    queries = ([touched_keys(t.group, touched)] if touched else []) + target.touched_by_having(written)
    if not t.group:
        program.steps += target.view_from_maps.steps(None)
    elif queries:  # the touched keys, once, with statistics: the view's statements look them up by index
        keys = "idivm_touched"
        program.steps.append(CreateScratch(phase=-1, purpose="the keys of the view a batch touched", name=keys,
                                           source=select([exp.Star()], [subquery(union_all(queries, distinct=True), "k")])))
        program.steps.append(InsertRows(phase=VIEW_FROM_MAPS_PHASE, purpose="the keys of the view the batch touched",
                                        target=Rl.scratch(keys), columns=list(t.group),
                                        source=union_all(queries, distinct=True), analyze=True))
        program.steps += target.view_from_maps.steps(select([exp.Star()], [Rl.scratch(keys)]))
    return program


def _contribution_steps(target: HigherOrderTarget, program: Program, written: list[tuple[str, str]]) -> list[str]:
    """Under nesting: each view-level map's contributions re-evaluated at the keys the batch can
    have changed, and the differences added to C and V (nesting.py). Returns the scratch
    relations holding the differences (their keys are the touched groups)."""
    t, top = target.translation, target.compiled.top
    nested_changes = [(i, scratch) for i in range(len(t.nesting.nested)) for m, scratch in written
                      if m == top[t.nested_map(i)]]
    keyed = [(i, s) for i, s in nested_changes if restricted(t.nesting.nested[i])]
    reevaluate = [s for i, s in nested_changes if not restricted(t.nesting.nested[i])]
    nested = target.nested_tables()
    out = []
    for name, c in target.contributions().items():
        increments = [scratch for m, scratch in written if m == top[name]]
        if not increments and not nested_changes:
            continue
        scratch = f"idivm_contrib_{len(out)}"
        keys = list(c.keys)
        parts = []
        if increments or keyed:  # increment: C at the keys the batch can have changed
            changed = subquery(changed_keys(t.nesting, c, increments, keyed), "p")
            old = exp.Coalesce(this=exp.Subquery(this=select(
                [col("w", VALUE)], [aliased(c.contributions, "w")],
                [same(col("w", k), col("p", k), k in c.nullable) for k in keys])), expressions=[num(0)])
            difference = exp.Sub(this=contribution_value(t.nesting, c, nested, "p"), expression=old)
            parts.append(select([col("p", k) for k in keys] + [alias(difference, VALUE)], [changed]))
        if reevaluate:  # re-evaluate, when the batch changed an uncorrelated or inequality-correlated subquery
            changed_any = any_of([exists(select([num(1)], [Rl.scratch(s)])) for s in reevaluate])
            if parts:
                parts[0] = parts[0].where(exp.Not(this=exp.Paren(this=changed_any.copy())), copy=False)
            parts.append(reevaluated(t.nesting, c, nested).where(changed_any, copy=False))
        source = union_all(parts)
        program.steps.append(CreateScratch(phase=-1, purpose=f"changes of the contributions to {name}", name=scratch,
                                           source=select([exp.Star()], [c.contributions]), role=CACHE_ROLE))
        program.steps.append(InsertRows(phase=VIEW_FROM_MAPS_PHASE, role=CACHE_ROLE, target=Rl.scratch(scratch),
                                        purpose=f"{name}: new minus old contributions where the batch can have changed them",
                                        columns=keys + [VALUE], source=source, analyze=True))
        for table, group in ((c.contributions, keys), (c.view, list(c.group))):
            program.steps.append(AddToMap(
                phase=VIEW_FROM_MAPS_PHASE, role=CACHE_ROLE, purpose=f"{name}: add the differences", target=table,
                keys=group, value=VALUE, nullable=[k for k in group if k in c.nullable],
                source=select([col(None, k) for k in group] + [col(None, VALUE)], [Rl.scratch(scratch)])))
        out.append(scratch)
    return out
