"""The i-diff as the rules see it, and its printer.

An i-diff here is a conjunctive query: the origin scan is bound to the
base-table i-diff instance, other scans in ``joined`` are read from
post-state base tables, and ``where`` filters the rows. Columns of the origin
scan read the post-state image unless ``pre()`` marked them (placeholders.PRE). When
``semijoined`` is set, the origin's post-state row is read from its base
table semijoined by ID with the i-diff (``R^post ⋉_I Δ``, as the rules write
it); minimization (pass 4) removes that join because the instance carries
every post-state attribute (Figure 8 under C3).

Kinds: '+' insert (identified by all IDs of the joined scans), '-' delete
and 'u' update (identified by the origin scan's IDs only: the i-diff names a
subset of the view's ID components, Section 2).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from sqlglot import exp
from sqlglot.dialects.postgres import Postgres

from ..algebra.placeholders import PRE, pre_image, printable
from ..algebra.tables import TableInfo

SYMBOL = {"+": "Δ+", "-": "Δ-", "u": "Δu"}


@dataclass(frozen=True)
class DiffSchema:
    """A base-table i-diff schema (Section 5) for one scan of a table."""

    scan: str
    table: TableInfo
    kind: str  # '+', '-', 'u'
    attrs: tuple[str, ...] = ()  # for 'u': attributes carried in post-state
    conditional: bool = False

    def label(self) -> str:
        t, key = self.table.name, ",".join(self.table.key)
        if self.kind == "+":
            return f"Δ+_{t}({key}; {', '.join(a + '_post' for a in self.table.non_key)})"
        if self.kind == "-":
            return f"Δ-_{t}({key}; {', '.join(a + '_pre' for a in self.table.non_key)})"
        what = "conditional" if self.conditional else "non-conditional"
        return (
            f"Δu_{t}({key}; {', '.join(a + '_pre' for a in self.table.non_key)}; "
            f"{', '.join(a + '_post' for a in self.attrs)})  [{what}, scan {self.scan}]"
        )


@dataclass(frozen=True)
class IDiff:
    kind: str
    origin: str
    schema: DiffSchema
    joined: tuple[str, ...] = ()
    where: tuple[exp.Expression, ...] = ()
    semijoined: bool = False
    merged: tuple[str, ...] = ()  # scans of the origin's table joined on its key, read from the i-diff
    tables: tuple[tuple[str, tuple[str, str]], ...] = ()  # every scan of the plan -> (schema, table)
    trail: tuple[str, ...] = field(default=())

    def derive(self, step: str, **changes) -> "IDiff":
        changes.setdefault("trail", self.trail + (step,))
        return replace(self, **changes)

    @property
    def scan_tables(self) -> dict[str, tuple[str, str]]:
        return dict(self.tables)

    @property
    def id_scans(self) -> tuple[str, ...]:
        return (self.origin,) + self.joined if self.kind == "+" else (self.origin,)

    def format(self) -> str:
        cond = " AND ".join(f"({show(w)})" if _connective(w) else show(w) for w in self.where) or "TRUE"
        src = (f"{self.origin}^post ⋉_I Δ[{self.origin}]" if self.semijoined else f"Δ[{self.origin}]")
        src += "".join(f" ⋈ {j}" for j in self.joined)
        src += "".join(f" (as {m})" for m in self.merged)
        return f"{SYMBOL[self.kind]}V by IDs of {{{', '.join(self.id_scans)}}} = σ[{cond}]({src})"


def pre(e: exp.Expression, scan: str) -> exp.Expression:
    """The same expression evaluated on the pre-state image of `scan`'s i-diff."""
    def mark(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not PRE.marks(node) and node.table == scan:
            return pre_image(node)
        return node

    return e.transform(mark)


def is_not_true(e: exp.Expression) -> exp.Expression:
    """SQL's three-valued negation as a filter: rows where e is FALSE or NULL."""
    return exp.Not(this=exp.Is(this=exp.Paren(this=e.copy()), expression=exp.true()))


def _connective(e: exp.Expression) -> bool:
    return isinstance(e, (exp.Connector, exp.Not))


def atom(e: exp.Expression) -> exp.Expression:
    """e, parenthesized if it is a connective: sqlglot renders trees as built, so And(Or(..), ..)
    would print as `a OR b AND c` and change meaning."""
    return exp.Paren(this=e.copy()) if _connective(e) else e.copy()


def conj(es: list[exp.Expression]) -> exp.Expression:
    out = atom(es[0])
    for e in es[1:]:
        out = exp.And(this=out, expression=atom(e))
    return exp.Paren(this=out) if len(es) > 1 else out


_POSTGRES = Postgres()


def show(e: exp.Expression) -> str:
    """An expression as derivations print it. Generated without the copy sqlglot's `sql()` takes
    first (a good part of a compilation's time): the conditions printed here have none of the
    constructs PostgreSQL's generator rewrites in place (engines/postgres/render.py renders whole
    programs the same way, and tests/test_stages.py checks that compiling leaves them as they were)."""
    return _POSTGRES.generate(printable(e), copy=False)
