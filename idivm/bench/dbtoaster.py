"""DBToaster's query suite as a coverage measurement: which of its queries idivm maintains exactly.

DBToaster maintains every query of its public test suite (`test/queries/` of its repository:
`simple`, `employee`, `tpch`, ...). This reads those files from a checkout the user points at
(nothing of them is shipped with idivm), translates each query to PostgreSQL, and for every
strategy asked for registers it over random data, applies rounds of random inserts, deletes and
updates, maintains it and compares it with its query recomputed by PostgreSQL. Each query ends
in one outcome: maintained (equal after every round), refused (the one-line reason, grouped by
construct), wrong (a difference: a bug), failed (an error that is not a refusal: a bug too), or
not translated (PostgreSQL itself rejects the translated query).

The translation, the same for every query:
- `CREATE STREAM` / `CREATE TABLE ... FROM FILE ...`: a table with the same columns (INT, FLOAT,
  DECIMAL, DATE, CHAR(n), VARCHAR(n), STRING) and a surrogate primary key of its own (DBToaster's
  streams have no keys; idivm needs one per base table); `INCLUDE 'file'` is read in place;
- functions of DBToaster's dialect: `LISTMAX`/`LISTMIN` -> GREATEST/LEAST, `cast_int`,
  `cast_float`, `cast_date`, `cast_string` -> CAST, `x IN LIST(...)` -> `x IN (...)`, `DATE(...)`
  and `DATE_PART` as PostgreSQL has them.

Random data: integers 1-5 (joins match, no division by zero), floating-point values in quarters
(their sums are exact whatever the order, so a float difference is a real one), decimals with two
digits, dates over five years, strings from the query's own string literals (so that its LIKE and
= filters select some rows) and a few others. No NULLs: DBToaster's streams have none.

    python scripts/bench_dbtoaster.py --queries ~/dbtoaster-a5/test/queries [--dirs simple,employee,tpch]
"""
from __future__ import annotations

import collections
import random
import re
import signal
import sys
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import psycopg
import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify

from .. import api
from ..errors import IdivmError, UnsupportedQuery, first_line
from ..names import STORAGE_SCHEMA
from .common import machine, parser, print_table, pyplot, save, scratch_database, write_json

DIRS = ("simple", "employee", "tpch")
KEY = "idivm_row"  # the surrogate key every translated stream gets, <table>_idivm_row (SELECT * over a join)

_TYPES = {"int": "integer", "integer": "integer", "bigint": "bigint", "float": "double precision",
          "double": "double precision", "decimal": "numeric", "date": "date", "string": "text", "text": "text"}


@dataclass
class Table:
    name: str
    columns: list[tuple[str, str]]  # (name, PostgreSQL type)


@dataclass
class Case:
    file: str  # relative to the queries directory
    index: int  # the query's position among the file's SELECTs
    tables: list[Table]
    query: str  # translated to PostgreSQL
    literals: list[str] = field(default_factory=list)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return "\n".join(re.sub(r"--.*$", "", line) for line in text.splitlines())


def _split(text: str, sep: str) -> list[str]:
    """text split on `sep` where it stands outside string literals and parentheses, pieces stripped,
    empty ones dropped: a file's statements (;), a column list's definitions (,)."""
    parts, cur, quoted, depth = [], [], False, 0
    for ch in text:
        quoted ^= ch == "'"
        depth += (not quoted) * ((ch == "(") - (ch == ")"))
        if ch == sep and not quoted and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return [p for p in parts if p]


def _column_type(declared: str) -> str:
    m = re.fullmatch(r"(\w+)\s*(\(\s*\d+\s*\))?", declared.strip(), flags=re.I)
    if not m:
        raise ValueError(f"unknown column type {declared!r}")
    base = m.group(1).lower()
    if base in ("char", "varchar", "character"):
        return f"{'char' if base != 'varchar' else 'varchar'}{(m.group(2) or '').replace(' ', '')}"
    if base not in _TYPES:
        raise ValueError(f"unknown column type {declared!r}")
    return _TYPES[base]


def _table(statement: str) -> Table:
    m = re.match(r"CREATE\s+(?:STREAM|TABLE)\s+(\w+)\s*\((.*)\)\s*FROM\b", statement, flags=re.I | re.S)
    if not m:
        m = re.match(r"CREATE\s+(?:STREAM|TABLE)\s+(\w+)\s*\((.*)\)\s*$", statement, flags=re.I | re.S)
    if not m:
        raise ValueError(f"cannot read {statement[:60]!r}")
    columns = []
    for part in _split(m.group(2), ","):
        name, declared = part.split(None, 1)
        columns.append((name.lower(), _column_type(declared)))
    return Table(m.group(1).lower(), columns)


def _translate(query: str, tables: list[Table]) -> str:
    q = re.sub(r"\bLISTMAX\s*\(", "GREATEST(", query, flags=re.I)
    q = re.sub(r"\bLISTMIN\s*\(", "LEAST(", q, flags=re.I)
    q = re.sub(r"\bIN\s+LIST\s*\(", "IN (", q, flags=re.I)
    for fn, typ in (("int", "bigint"), ("float", "double precision"), ("date", "date"), ("string", "text")):
        q = _cast_calls(q, f"cast_{fn}", typ)
    return _named(q, tables)


def _named(q: str, tables: list[Table]) -> str:
    """Output expressions get distinct names where PostgreSQL would give none or the same twice
    (DBToaster names them itself; a table cannot have two columns ?column? or two name): the
    query's outputs a name of their own (c1, c2, ... or name_2), those of its subqueries in FROM
    the name PostgreSQL gives a function call (count). A `*` in the query's outputs is spelled out
    as the columns DBToaster's tables declare (not the surrogate key, which DBToaster's streams do
    not have), so that `SELECT * FROM R, S` names R's b and S's b apart as DBToaster does.
    Queries whose outputs are named stay as written."""
    try:
        tree = sqlglot.parse_one(q, read="postgres")
    except sqlglot.errors.ParseError:
        return q  # PostgreSQL will say what it rejects
    changed = False
    if isinstance(tree, exp.Select) and any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
                                            for e in tree.expressions):
        schema = {t.name: dict(t.columns) for t in tables}
        try:
            tree = qualify(tree, schema=schema, dialect="postgres", expand_stars=True, validate_qualify_columns=False,
                           quote_identifiers=False, identify=False)
            changed = True
        except sqlglot.errors.SqlglotError:
            pass  # left as written: PostgreSQL or idivm will say what they make of it
    for select in tree.find_all(exp.Select):
        top = select is tree
        if not top and not isinstance(select.parent, exp.Subquery):
            continue
        seen: set[str] = set()
        outputs = []
        for i, e in enumerate(select.expressions):
            if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)):
                outputs.append(e)
                continue
            name = e.alias_or_name if isinstance(e, (exp.Alias, exp.Column)) else ""
            if not name and not top and isinstance(e, exp.Func):  # PostgreSQL's name for a call
                name = e.name.lower() if isinstance(e, exp.Anonymous) else e.sql_name().lower()
            if top and (not name or name.lower() in seen):
                name = f"{name}_{i + 1}" if name else f"c{i + 1}"
            if name and name != e.alias_or_name:
                e = exp.alias_(e.unalias(), name)
                changed = True
            seen.add(name.lower())
            outputs.append(e)
        select.set("expressions", outputs)
    return tree.sql("postgres") if changed else q


def _cast_calls(q: str, fn: str, typ: str) -> str:
    """fn(x) -> CAST(x AS typ), with x's parentheses balanced."""
    while True:
        m = re.search(rf"\b{fn}\s*\(", q, flags=re.I)
        if not m:
            return q
        depth, i = 1, m.end()
        while depth and i < len(q):
            depth += (q[i] == "(") - (q[i] == ")")
            i += 1
        q = f"{q[:m.start()]}CAST({q[m.end():i - 1]} AS {typ}){q[i:]}"


def read_cases(queries: Path, dirs=DIRS) -> list[Case]:
    """Every SELECT of every .sql file under queries/<dir> (recursively), with the tables its file declares."""
    root = queries.resolve()
    repo = root.parent.parent  # INCLUDE paths are relative to the repository's root (./test/queries/...)
    cases = []
    for d in dirs:
        for path in sorted((root / d).rglob("*.sql")):
            text = _strip_comments(path.read_text(errors="replace"))
            text = re.sub(r"INCLUDE\s+'([^']+)'\s*;",
                          lambda m: _strip_comments((repo / m.group(1)).read_text(errors="replace")), text, flags=re.I)
            tables, selects = [], []
            for s in _split(text, ";"):
                if re.match(r"CREATE\s+(STREAM|TABLE)\b", s, flags=re.I):
                    tables.append(_table(s))
                elif re.match(r"\(?\s*SELECT\b", s, flags=re.I):
                    selects.append(s)
            for i, s in enumerate(selects):
                literals = sorted({lit for lit in re.findall(r"'([^']*)'", s)})
                cases.append(Case(str(path.relative_to(root)), i, tables, _translate(s, tables), literals))
    return cases


def _value(rng: random.Random, typ: str, words: list[str]):
    if typ in ("integer", "bigint"):
        return rng.randint(1, 5)
    if typ == "double precision":
        return rng.randint(0, 40) / 4
    if typ == "numeric":
        return Decimal(rng.randint(0, 1000)) / 100
    if typ == "date":
        return f"{1992 + rng.randint(0, 6)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    word = rng.choice(words)
    m = re.search(r"\((\d+)\)", typ)
    return word[: int(m.group(1))] if m else word


def _words(case: Case) -> list[str]:
    """Strings that make the query's filters select rows: its literals (a LIKE pattern's pieces too)."""
    words = {"a", "b", "x"}
    for lit in case.literals:
        words.add(lit.replace("%", "").replace("_", " "))
        words.add(lit.replace("%", " x ").replace("_", "y").strip())
    return sorted(words)


def _insert(db, rng, t: Table, words: list[str], n: int) -> None:
    cols = ", ".join(f'"{c}"' for c, _ in t.columns)
    marks = ", ".join(["%s"] * len(t.columns))
    for _ in range(n):
        db.execute(f'INSERT INTO "{t.name}" ({cols}) VALUES ({marks})', [_value(rng, typ, words) for _, typ in t.columns])


def _writes(db, rng, tables: list[Table], words: list[str]) -> None:
    """One round: a few inserts, a delete and an update per table, in one transaction."""
    with db.transaction():
        for t in tables:
            _insert(db, rng, t, words, 3)
            key = f'"{t.name}_{KEY}"'
            db.execute(f'DELETE FROM "{t.name}" WHERE {key} IN (SELECT {key} FROM "{t.name}" ORDER BY random() LIMIT 1)')
            c, typ = rng.choice(t.columns)
            db.execute(f'UPDATE "{t.name}" SET "{c}" = %s WHERE {key} IN '
                       f'(SELECT {key} FROM "{t.name}" ORDER BY random() LIMIT 1)', [_value(rng, typ, words)])


def _normal(v):
    """Floats to 12 significant digits (AVG divides in another order than the query); all else exact."""
    return float(f"{v:.12g}") if isinstance(v, float) else v


def _rows(db, sql: str) -> collections.Counter:
    return collections.Counter(tuple(_normal(v) for v in r) for r in db.execute(sql).fetchall())


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


VIEW = "idivm_dbtoaster_view"


def run_case(dsn: str, case: Case, strategy: str, rounds: int, seed: int, timeout: int) -> dict:
    """One query under one strategy, over tables created for it (in public, where the query's
    unqualified names find them) and dropped after it: its outcome and timings."""
    rng = random.Random(f"{seed}:{case.file}:{case.index}")
    words = _words(case)
    out = {"file": case.file, "query": case.index, "strategy": strategy, "sql": case.query}
    engine = api.connect(dsn)
    signal.signal(signal.SIGALRM, _alarm)
    with psycopg.connect(dsn, autocommit=True) as db:
        try:
            for t in case.tables:
                cols = ", ".join(f'"{c}" {typ}' for c, typ in t.columns)
                db.execute(f'CREATE TABLE "{t.name}" ("{t.name}_{KEY}" bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, {cols})')
                _insert(db, rng, t, words, 20)
            recompute = f"SELECT * FROM ({case.query}) AS q"
            try:
                db.execute(recompute + " LIMIT 0")
            except psycopg.Error as e:
                return {**out, "outcome": "not translated", "reason": first_line(e)}
            signal.alarm(timeout)
            t0 = time.perf_counter()
            engine.register_view(VIEW, case.query, strategy=strategy)
            out["register_s"] = time.perf_counter() - t0
            out["chose"] = engine.strategy_of(VIEW)
            out["maps"] = db.execute("SELECT count(*) FROM pg_tables WHERE schemaname = %s AND tablename LIKE 'map\\_%%'",
                                     (STORAGE_SCHEMA,)).fetchone()[0]  # the higher-order strategy's (one view at a time)
            for _ in range(rounds):
                _writes(db, rng, case.tables, words)
                engine.maintain(VIEW)
                if _rows(db, f'SELECT * FROM "{VIEW}"') != _rows(db, recompute):
                    return {**out, "outcome": "wrong", "reason": "differs from its query after a round"}
            return {**out, "outcome": "maintained"}
        except _Timeout:
            return {**out, "outcome": "refused", "reason": f"registration and maintenance took over {timeout} s"}
        except UnsupportedQuery as e:
            return {**out, "outcome": "refused", "reason": first_line(e)}
        except IdivmError as e:
            if str(e).startswith("PostgreSQL could not evaluate"):  # the random data does not suit the query
                return {**out, "outcome": "not translated", "reason": first_line(e)}
            return {**out, "outcome": "failed", "reason": first_line(e)}
        except Exception as e:  # noqa: BLE001 - any other error is a bug to report, with its type
            return {**out, "outcome": "failed", "reason": f"{type(e).__name__}: {first_line(e)}"}
        finally:
            signal.alarm(0)
            try:
                engine.drop_view(VIEW)
            except Exception:  # noqa: BLE001 - not registered, or the case failed half-way
                pass
            engine.close()
            for t in case.tables:
                db.execute(f'DROP TABLE IF EXISTS "{t.name}" CASCADE')


def construct(reason: str) -> str:
    """A refusal's reason without the names and numbers of one query: the construct it names."""
    r = re.sub(r'"[^"]*"', '"…"', reason)
    r = re.sub(r"'[^']*'", "'…'", r)
    r = re.sub(r"\b\d+(\.\d+)?\b", "N", r)
    return r.split(";")[0][:110]


def main(argv=None) -> int:
    ap = parser(__doc__, "bench-results/bench_dbtoaster.json")
    ap.add_argument("--queries", required=True, help="DBToaster's test/queries directory (of a checkout of dbtoaster-a5)")
    ap.add_argument("--dirs", default=",".join(DIRS), help="the query directories to run")
    ap.add_argument("--strategies", default="auto", help="comma-separated: auto, id, tuple, higher-order")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=120, help="seconds a query may take to register and maintain")
    ap.add_argument("--only", default="", help="run only the files whose path contains one of these (comma-separated)")
    a = ap.parse_args(argv)
    cases = [c for c in read_cases(Path(a.queries), a.dirs.split(",")) if any(o in c.file for o in a.only.split(","))]
    strategies = a.strategies.split(",")
    results = []
    with scratch_database(a.dsn, a.keep) as (dsn, version):
        api.connect(dsn).init()
        for case in cases:
            for strategy in strategies:
                r = run_case(dsn, case, strategy, a.rounds, a.seed, a.timeout)
                print(f"{r['outcome']:>14}  {strategy:<12} {case.file}#{case.index}  {r.get('reason', '')[:100]}",
                      file=sys.stderr)
                results.append(r)
    return report(results, strategies, a.out, version)


def report(results: list[dict], strategies: list[str], out: str, version: str) -> int:
    """The table by directory and outcome, the refusals by construct, JSON and a bar chart."""
    outcomes = ("maintained", "refused", "not translated", "wrong", "failed")
    rows = []
    for s in strategies:
        for d in sorted({r["file"].split("/")[0] for r in results}):
            mine = [r for r in results if r["strategy"] == s and r["file"].startswith(d + "/")]
            rows.append([s, d, len(mine)] + [sum(r["outcome"] == o for r in mine) for o in outcomes])
        mine = [r for r in results if r["strategy"] == s]
        rows.append([s, "all", len(mine)] + [sum(r["outcome"] == o for r in mine) for o in outcomes])
    print_table(["strategy", "directory", "queries", *outcomes], rows)
    by_construct = collections.Counter((r["strategy"], construct(r["reason"])) for r in results
                                       if r["outcome"] in ("refused", "failed", "wrong"))
    print()
    print_table(["refused, failed or wrong because", "strategy", "count"],
                [[c, s, n] for (s, c), n in by_construct.most_common()])
    maintained = [r for r in results if r["outcome"] == "maintained"]
    slowest = max(maintained, key=lambda r: r.get("register_s", 0), default=None)
    if slowest:
        print(f"\nslowest registration maintained: {slowest['file']}#{slowest['query']} ({slowest['strategy']}, "
              f"chose {slowest['chose']}): {slowest['register_s']:.2f} s, {slowest['maps']} maps")
    most = max(maintained, key=lambda r: r.get("maps", 0), default=None)
    if most and most.get("maps"):
        print(f"most maps: {most['file']}#{most['query']} ({most['strategy']}, chose {most['chose']}): {most['maps']} maps, "
              f"registered in {most['register_s']:.2f} s")
    write_json(out, {"machine": machine(), "postgres": version, "results": results,
                     "summary": [dict(zip(["strategy", "directory", "queries", *outcomes], r)) for r in rows]})
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    labels = [f"{r[0]}\n{r[1]}" for r in rows]
    bottom = [0] * len(rows)
    for k, o in enumerate(outcomes):
        counts = [r[3 + k] for r in rows]
        ax.bar(labels, counts, bottom=bottom, label=o)
        bottom = [b + c for b, c in zip(bottom, counts)]
    ax.set_ylabel("queries")
    ax.set_title("DBToaster's test queries maintained by idivm")
    ax.legend(fontsize=8)
    save(fig, str(Path(out).with_suffix(".png")))
    return 1 if any(r["outcome"] in ("wrong", "failed") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
