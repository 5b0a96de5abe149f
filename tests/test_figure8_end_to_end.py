"""Figure 8's rewrites on real scripts: the base-table access they remove is gone, and the
view still equals recomputation after inserts, deletes and updates."""
from __future__ import annotations


from helpers import assert_equal_multiset, rendered_statements

SQL = ("SELECT p.pid, p2.price FROM parts p JOIN parts p2 ON p.pid = p2.pid "
       "WHERE NOT EXISTS (SELECT 1 FROM parts q WHERE q.pid = p.pid AND q.price > 15)")


def _insert_statements(engine) -> list[str]:
    with engine.sa.connect() as conn:
        return [text for st, text in rendered_statements(conn, "v") if st.purpose.startswith("Δ+_parts")]


def test_key_self_join_and_own_key_antijoin_read_only_the_diff(engine, db):
    db.execute("CREATE TABLE parts (pid int PRIMARY KEY, price numeric)")
    db.execute("INSERT INTO parts VALUES (1, 10), (2, 20), (3, NULL)")
    engine.register_view("v", SQL)
    inserts = _insert_statements(engine)
    assert len(inserts) == 2  # one per scan of parts
    for text in inserts:
        assert '"public"."parts"' not in text  # neither the join nor the NOT EXISTS reads parts
        assert 'NOT ("d"."post__price" > 15) IS TRUE' in text
    explained = engine.explain("v")
    assert "minimize: Δ ⋈_I p2 -> Δ (C1)" in explained and "minimize: Δ ▷_I σ parts -> σ Δ" in explained
    before = engine.explain("v", unminimized=True)
    assert "BEFORE minimization" in before and "⋈ p2" in before and "minimize:" not in before

    db.execute("INSERT INTO parts VALUES (4, 5), (5, 50), (6, NULL)")
    db.execute("UPDATE parts SET price = 30 WHERE pid = 1")
    db.execute("UPDATE parts SET price = 1 WHERE pid = 2")
    db.execute("DELETE FROM parts WHERE pid = 3")
    engine.maintain("v")
    assert_equal_multiset(db, "v", SQL, ["pid", "price"])
