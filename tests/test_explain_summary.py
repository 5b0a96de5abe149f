"""`explain` starts with a summary in plain words, and `status` / `list` show the storage each view
uses (issue 18 item 5)."""
from __future__ import annotations

import json

from cli_runner import run_cli


def _summary(engine, name):
    return engine.explain(name).split("\n\n")[1]


def test_explain_summary_says_strategy_rule_storage_and_joins(engine, db):
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, sid int NOT NULL, price int NOT NULL)")
    db.execute("CREATE TABLE sup (sid int PRIMARY KEY, name text NOT NULL)")
    db.execute("INSERT INTO sup SELECT g, 's' || g FROM generate_series(0, 4) g")
    db.execute("INSERT INTO parts SELECT g, g % 5, g FROM generate_series(1, 50) g")
    engine.register_view("top", "SELECT sid, max(price) AS m FROM parts GROUP BY sid")
    engine.register_view("totals", "SELECT sid, count(*) AS n, sum(price) AS t FROM parts GROUP BY sid", strategy="auto")
    engine.register_view("named", "SELECT p.pid, s.name FROM parts p JOIN sup s ON s.sid = p.sid")
    top = _summary(engine, "top")
    assert top.startswith("summary:")
    assert "general rule (Table 7)" in top and "because MAX needs each group's rows" in top
    assert "view public.top, stored in idivm.view_1: 5 rows" in top and "cache idivm.cache_1: 50 rows" in top
    totals = _summary(engine, "totals")
    assert "chosen by --strategy auto" in totals and "specialized SUM/COUNT/AVG rules" in totals
    named = _summary(engine, "named")
    assert "public.parts: deletes reach the view without a join; inserts join public.sup" in named
    assert "--strategy auto would choose it too" in named
    db.execute("INSERT INTO parts SELECT g, g % 5, g FROM generate_series(51, 90) g")
    assert "log of public.parts: 40 rows" in _summary(engine, "named") and "40 not yet consumed" in _summary(engine, "named")
    # status and list: the bytes of the view, its caches, and its share of the logs
    before = {s.view: s.storage for s in engine.status(storage=True)}
    assert before["public.top"].aux_bytes > 0 and before["public.named"].aux_bytes == 0
    assert all(s.log_bytes > 0 for s in before.values())  # 40 changes wait for each view
    engine.maintain("named")
    after = {s.view: s.storage for s in engine.status(storage=True)}
    assert after["public.named"].log_bytes == 0 and after["public.top"].log_bytes > 0  # the rest wait for top
    assert [s.storage for s in engine.status()] == [None, None, None]  # not computed unless asked (the scheduler's path)
    listed = run_cli("--dsn", engine.dsn, "list", "--json", timeout=120)
    assert listed.returncode == 0, listed.stderr
    rows = {r["view"]: r for r in json.loads(listed.stdout)}
    assert rows["public.top"]["storage"]["caches_bytes"] > 0
    table = run_cli("--dsn", engine.dsn, "status", timeout=120)
    assert table.returncode == 0 and "kB view + " in table.stdout


def test_explain_sql_is_a_dry_run_that_leaves_nothing(fresh_db, db):
    """`idivm explain --sql` (issue 34, item 1): what registering a query would create, on a database
    where idivm is not even installed; afterwards nothing of it is there."""
    import idivm

    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, sid int NOT NULL, price int NOT NULL)")
    db.execute("INSERT INTO parts SELECT g, g % 5, g FROM generate_series(1, 50) g")
    footprint = ("SELECT (SELECT count(*) FROM pg_namespace WHERE nspname = 'idivm'), "
                 "(SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal), (SELECT count(*) FROM pg_event_trigger)")
    before = db.execute(footprint).fetchone()
    engine = idivm.connect(fresh_db)
    text = engine.explain(sql="SELECT sid, count(*) AS n, sum(price) AS t FROM parts GROUP BY sid", strategy="auto")
    assert text.startswith("dry run: what `idivm register-view` would create; nothing was created or kept")
    assert "strategy auto: id, because" in text and "Δ-program:" in text and "Δ-script (PostgreSQL):" in text
    nested = engine.explain(sql="SELECT pid FROM parts p WHERE price > (SELECT avg(price) FROM parts q WHERE q.sid = p.sid)",
                            strategy="auto")
    assert "strategy auto: id, because nested aggregates correlated by equalities" in nested and "PART" in nested
    uncorrelated = engine.explain(sql="SELECT pid FROM parts p WHERE price > (SELECT avg(price) FROM parts q)",
                                  strategy="auto")
    assert "strategy auto: higher-order" in uncorrelated and "maps" in uncorrelated
    refused = run_cli("--dsn", fresh_db, "explain", "--sql", "SELECT pid, random() AS r FROM parts", timeout=120)
    assert refused.returncode == 2 and refused.stderr.startswith("error: function random() is volatile")
    shown = run_cli("--dsn", fresh_db, "explain", "--sql", "SELECT pid, price FROM parts WHERE price > 10", timeout=120)
    assert shown.returncode == 0 and "Δ-program:" in shown.stdout, shown.stderr
    assert db.execute(footprint).fetchone() == before
    engine.close()


def test_registration_stores_the_compilers_program_bound_to_the_views_ids(engine, db):
    """Registration compiles once and binds (compiler.py, program/bind.py): what a view stores is
    exactly the program a dry run compiles, its symbolic names bound to the view's ids."""
    from idivm.catalog import repository as catalog
    from idivm.operate.compile_in import compile_in
    from idivm.program.serialize import to_json

    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, sid int NOT NULL, price int NOT NULL)")
    db.execute("CREATE TABLE sup (sid int PRIMARY KEY, name text)")
    views = {"g": ("SELECT sid, count(*) AS n, sum(price) AS t FROM parts GROUP BY sid", "id"),
             "n": ("SELECT pid FROM parts p WHERE price > (SELECT avg(price) FROM parts q WHERE q.sid = p.sid)", "auto"),
             "o": ("SELECT p.pid, s.name FROM parts p LEFT JOIN sup s ON s.sid = p.sid", "tuple")}
    for name, (sql, strategy) in views.items():
        engine.register_view(name, sql, strategy=strategy)
    with engine.sa.connect() as conn:
        for name, (sql, strategy) in views.items():
            row = catalog.view_by_name(conn, "public", name)
            compiled = compile_in(conn, sql, strategy)
            program = compiled.bound(row.id, catalog.captured_ids_by_table(conn, row.id))[1]
            assert to_json(program) == catalog.program_of(conn, row.id), name
