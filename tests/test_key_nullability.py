"""Group keys that cannot be NULL (primary key, NOT NULL, COALESCE of such, as NATURAL JOIN makes)
are matched by plain equality; nullable ones keep the null-safe form. Both stay correct."""
from __future__ import annotations


from helpers import assert_equal_multiset, rendered_statements

NULL_SAFE = 'IS NULL AND "x"."g0" IS NULL'


def _script(engine, view: str) -> str:
    with engine.sa.connect() as conn:
        return "\n".join(text for _, text in rendered_statements(conn, view))


def test_never_null_keys_use_plain_equality(engine, db):
    db.execute("CREATE TABLE devices (did int PRIMARY KEY, category text NOT NULL, maker text)")
    db.execute("CREATE TABLE devices_parts (did int, pid int, qty int, PRIMARY KEY (did, pid))")
    db.execute("INSERT INTO devices VALUES (1, 'phone', 'a'), (2, 'tablet', NULL), (3, 'phone', NULL)")
    db.execute("INSERT INTO devices_parts VALUES (1, 1, 2), (1, 2, 3), (2, 1, 1), (3, 3, 7)")
    views = {
        "by_did": "SELECT did, sum(qty) AS q FROM devices NATURAL JOIN devices_parts GROUP BY did",
        "by_category": "SELECT category, sum(qty) AS q FROM devices NATURAL JOIN devices_parts GROUP BY category",
        "by_maker": "SELECT maker, sum(qty) AS q FROM devices NATURAL JOIN devices_parts GROUP BY maker",
    }
    for name, sql in views.items():
        engine.register_view(name, sql)
    assert NULL_SAFE not in _script(engine, "by_did")  # COALESCE of two key columns
    assert NULL_SAFE not in _script(engine, "by_category")  # declared NOT NULL
    assert NULL_SAFE in _script(engine, "by_maker")  # nullable: groups of NULL exist

    db.execute("UPDATE devices SET maker = NULL WHERE did = 1")
    db.execute("UPDATE devices SET category = 'watch', maker = 'b' WHERE did = 3")
    db.execute("DELETE FROM devices_parts WHERE did = 2")
    db.execute("INSERT INTO devices VALUES (4, 'tablet', NULL)")
    db.execute("INSERT INTO devices_parts VALUES (4, 9, 5), (1, 9, 1)")
    for name, sql in views.items():
        engine.maintain(name)
        assert_equal_multiset(db, name, sql, [sql.split()[1].rstrip(","), "q"])
