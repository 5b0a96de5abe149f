"""Outer joins (frontend/outer_joins.py): fixed shapes, each maintained by both strategies in both
modes through writes that move rows between matched and padded, and the shapes refused by name.
The differential test's `outer` family runs random chains of them."""
from __future__ import annotations

import pytest

from helpers import ABC_TABLES, assert_equal_multiset, assert_follows_writes, assert_refused_by_name

SCHEMA = """
CREATE TABLE customers (id int PRIMARY KEY, name text, region text);
CREATE TABLE orders (id int PRIMARY KEY, customer int, amount numeric(10, 2), status text);
CREATE TABLE items (id int PRIMARY KEY, order_id int, sku text, qty int);
INSERT INTO customers VALUES (1, 'ann', 'n'), (2, 'bob', 's'), (3, 'cy', NULL), (4, 'dee', 'n');
INSERT INTO orders VALUES (10, 1, 5.50, 'open'), (11, 1, 7.25, 'paid'), (12, 2, 1.00, 'open'),
                          (13, NULL, 3.00, 'open'), (14, 9, 2.00, 'paid');
INSERT INTO items VALUES (100, 10, 'x', 1), (101, 10, 'y', 2), (102, 12, 'x', 5), (103, 99, 'z', 1);
"""

# each write moves some row between matched and padded: a last partner deleted, a first one
# inserted, a join key updated from one partner to another, to NULL and back, a key updated
WRITES = [
    "DELETE FROM orders WHERE id = 12",  # bob's only order: bob becomes padded
    "INSERT INTO orders VALUES (15, 4, 9.99, 'open')",  # dee's first order
    "UPDATE orders SET customer = 2 WHERE id = 11",  # from ann to bob
    "UPDATE orders SET customer = NULL WHERE id = 10",  # to NULL: matches nobody
    "UPDATE customers SET id = 5 WHERE id = 4",  # the preserved side's key
    "INSERT INTO customers VALUES (9, 'eve', 's')",  # order 14's customer appears
    "UPDATE orders SET customer = 1 WHERE id = 10",  # back
    "DELETE FROM customers WHERE id = 1",
    "UPDATE items SET order_id = 11 WHERE id = 103",
    "UPDATE orders SET status = 'paid', amount = amount + 1",
    "DELETE FROM items WHERE sku = 'x'",
    "INSERT INTO items VALUES (104, 15, 'x', 3), (105, NULL, 'q', 1)",
]

VIEWS = {
    "left": ("SELECT c.id, c.name, o.id AS oid, o.amount FROM customers c LEFT JOIN orders o ON o.customer = c.id",
             ["id", "name", "oid", "amount"]),
    "left_outer_using": ("SELECT c.name, o.amount FROM customers c LEFT OUTER JOIN orders o ON o.customer = c.id "
                         "AND o.status = 'open'", ["name", "amount"]),  # a conjunct of ON: pads, not filters
    "anti": ("SELECT c.id, c.name FROM customers c LEFT JOIN orders o ON o.customer = c.id WHERE o.id IS NULL",
             ["id", "name"]),
    "right": ("SELECT c.name, o.id AS oid FROM customers c RIGHT JOIN orders o ON o.customer = c.id",
              ["name", "oid"]),
    "full": ("SELECT c.id AS cid, o.id AS oid, COALESCE(c.region, 'none') AS region FROM customers c "
             "FULL JOIN orders o ON o.customer = c.id", ["cid", "oid", "region"]),
    "chain": ("SELECT c.name, o.id AS oid, i.sku FROM customers c LEFT JOIN orders o ON o.customer = c.id "
              "LEFT JOIN items i ON i.order_id = o.id", ["name", "oid", "sku"]),
    "mixed": ("SELECT c.name, i.sku FROM orders o JOIN customers c ON c.id = o.customer "
              "LEFT JOIN items i ON i.order_id = o.id AND i.qty > 1", ["name", "sku"]),
    "full_chain": ("SELECT c.id AS cid, o.id AS oid, i.id AS iid FROM customers c FULL JOIN orders o "
                   "ON o.customer = c.id FULL JOIN items i ON i.order_id = o.id", ["cid", "oid", "iid"]),
    "grouped": ("SELECT c.id, count(*) AS n, count(o.id) AS orders, sum(o.amount) AS total, "
                "avg(o.amount) AS mean, min(o.amount) AS lo, max(o.status) AS hi "
                "FROM customers c LEFT JOIN orders o ON o.customer = c.id GROUP BY c.id",
                ["id", "n", "orders", "total", "mean", "lo", "hi"]),
    "having": ("SELECT c.region, count(o.id) AS orders FROM customers c LEFT JOIN orders o ON o.customer = c.id "
               "GROUP BY c.region HAVING count(o.id) < 3", ["region", "orders"]),
    "distinct": ("SELECT DISTINCT c.region, o.status FROM customers c FULL JOIN orders o ON o.customer = c.id",
                 ["region", "status"]),
    "using": ("SELECT id, name, amount FROM customers LEFT JOIN (SELECT customer AS id, amount FROM orders) o "
              "USING (id)", ["id", "name", "amount"]),
    "filtered_side": ("SELECT c.name, o.amount FROM customers c LEFT JOIN (SELECT customer AS who, amount FROM orders "
                      "WHERE status = 'open') o ON o.who = c.id", ["name", "amount"]),  # its WHERE moves into ON
    "filtered_preserved": ("SELECT c.name, o.id AS oid FROM (SELECT id, name FROM customers WHERE region = 'n') c "
                           "LEFT JOIN orders o ON o.customer = c.id", ["name", "oid"]),  # its WHERE stays a WHERE
    "right_after_join": ("SELECT c.name, o.id AS oid, i.id AS iid, i.qty FROM customers c JOIN orders o "
                         "ON o.customer = c.id RIGHT JOIN items i ON i.order_id = o.id AND i.qty > 1",
                         ["name", "oid", "iid", "qty"]),  # items no (customer, order) pair matches
    "full_after_left": ("SELECT c.id AS cid, o.id AS oid, i.id AS iid FROM customers c LEFT JOIN orders o "
                        "ON o.customer = c.id FULL JOIN items i ON i.order_id = o.id", ["cid", "oid", "iid"]),
    "full_after_join": ("SELECT o.status, i.sku, count(*) AS n, sum(i.qty) AS q FROM customers c JOIN orders o "
                        "ON o.customer = c.id FULL JOIN items i ON i.order_id = o.id AND i.order_id + c.id > 0 "
                        "GROUP BY o.status, i.sku", ["status", "sku", "n", "q"]),
    "right_twice": ("SELECT c.id AS cid, o.id AS oid, i.id AS iid FROM customers c RIGHT JOIN orders o "
                    "ON o.customer = c.id JOIN items i ON i.order_id = o.id RIGHT JOIN customers c2 ON c2.id = c.id",
                    ["cid", "oid", "iid"]),
    # computed outputs of a subquery on a padded side: NULL on padded rows, even where the expression
    # is not NULL on NULLs (COALESCE, IS NULL, a constant); merged unguarded they were 0, true, 7 there
    "computed_side": ("SELECT c.name, o.amt, o.open, o.one, o.tag FROM customers c LEFT JOIN (SELECT customer, "
                      "COALESCE(amount, 0) AS amt, status IS NULL AS open, 1 AS one, CASE WHEN status = 'open' "
                      "THEN 'o' END AS tag FROM orders) o ON o.customer = c.id", ["name", "amt", "open", "one", "tag"]),
    "computed_full": ("WITH o AS (SELECT id, customer, COALESCE(status, '?') AS st FROM orders) SELECT c.id AS cid, "
                      "o.id AS oid, o.st FROM customers c FULL JOIN o ON o.customer = c.id", ["cid", "oid", "st"]),
    # a filtered side's WHERE joins its ON in parentheses: the RIGHT JOIN's check must still see the
    # ON's comparisons one by one (refused as "may hold when o is NULL-padded" before)
    "filtered_then_right": ("SELECT c.name, o.amount, i.sku, c2.name AS n2 FROM customers c LEFT JOIN (SELECT id, "
                            "customer, amount FROM orders WHERE status = 'open') o ON o.customer = c.id LEFT JOIN "
                            "(SELECT id, order_id, sku FROM items WHERE qty > 0) i ON i.order_id = o.id AND i.sku <> 'z' "
                            "RIGHT JOIN customers c2 ON c2.id = i.order_id - 9", ["name", "amount", "sku", "n2"]),
    "filtered_computed": ("SELECT c.name, o.amt, o.late FROM customers c LEFT JOIN (SELECT customer, COALESCE(amount, 0) "
                          "+ 1 AS amt, status IS DISTINCT FROM 'open' AS late FROM orders WHERE amount < 8) o "
                          "ON o.customer = c.id AND o.amt > 2", ["name", "amt", "late"]),
    # a guarded computed output in a later FULL JOIN's condition: NULL when its side is padded, so the
    # condition cannot hold there (refused as "may hold when o is NULL-padded" before)
    "computed_then_full": ("SELECT c.name, o.amt, i.sku FROM customers c JOIN (SELECT id, customer, COALESCE(amount, 0) "
                           "AS amt FROM orders WHERE status = 'open') o ON o.customer = c.id FULL JOIN customers c2 ON c2.id = c.id "
                           "FULL JOIN items i ON i.qty = o.amt", ["name", "amt", "sku"]),
    "subquery_in_where": ("SELECT c.name, o.id AS oid FROM customers c LEFT JOIN orders o ON o.customer = c.id "
                          "WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.order_id = o.id)", ["name", "oid"]),
}


@pytest.mark.parametrize("mode", ["deferred", "immediate"])
@pytest.mark.parametrize("strategy", ["id", "tuple"])
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_outer_join_views_follow_rows_between_matched_and_padded(engine, db, view, strategy, mode):
    db.execute(SCHEMA)
    assert_follows_writes(engine, db, *VIEWS[view], WRITES, strategy, mode)


def test_outer_join_view_over_an_outer_join_view(engine, db):
    db.execute(SCHEMA)
    engine.register_view("per_customer", VIEWS["grouped"][0])
    sql = ("SELECT p.id, p.orders, i.sku FROM per_customer p LEFT JOIN orders o ON o.customer = p.id "
           "LEFT JOIN items i ON i.order_id = o.id")
    engine.register_view("v", sql)
    for write in WRITES:
        db.execute(write)
        engine.maintain()
        assert_equal_multiset(db, "v", sql, ["id", "orders", "sku"])


@pytest.mark.parametrize("sql, construct", [
    ("SELECT a.k FROM a LEFT JOIN b ON a.k = b.k RIGHT JOIN c ON COALESCE(b.k, a.k) = c.k",
     "a RIGHT or FULL JOIN after a join whose condition may hold when b is NULL-padded (the RIGHT JOIN of c)"),
    ("SELECT a.k FROM a FULL JOIN b ON a.k = b.k JOIN c ON COALESCE(a.x, 0) = c.k RIGHT JOIN b b2 ON b2.y = c.z",
     "may hold when a is NULL-padded (the inner JOIN of c)"),
    ("SELECT c.k FROM a FULL JOIN b USING (k) JOIN c USING (k)", "JOIN ... USING or NATURAL JOIN after a RIGHT or FULL"),
    ("SELECT a.k FROM a NATURAL RIGHT JOIN b NATURAL JOIN c", "JOIN ... USING or NATURAL JOIN after a RIGHT or FULL"),
    ("SELECT a.x, q.k FROM a FULL JOIN (SELECT b.k FROM b WHERE b.y > 0) q ON q.k = a.k", "this subquery in FROM"),
    ("SELECT * FROM (SELECT a.k FROM a LEFT JOIN b ON a.k = b.k) x UNION ALL SELECT c.k FROM c", "outer joins inside a UNION"),
])
def test_outer_join_shapes_refused_by_name(engine, db, sql, construct):
    db.execute(ABC_TABLES)
    assert_refused_by_name(engine, db, sql, construct)


def test_auto_maintains_outer_joins_with_the_id_rules(engine, db):
    db.execute(SCHEMA)
    engine.register_view("v", VIEWS["left"][0], strategy="auto")
    text = engine.explain("v")
    assert "strategy: id" in text and "outer joins" in text, text[:400]


def test_higher_order_names_the_outer_join_it_does_not_translate(engine, db):
    """The padded rows of a LEFT JOIN are a UNION branch with NOT EXISTS: the refusal names the outer
    join the user wrote, not the branch it was expanded into."""
    import idivm

    db.execute(SCHEMA)
    with pytest.raises(idivm.UnsupportedQuery) as e:
        engine.register_view("v", VIEWS["left"][0], strategy="higher-order")
    assert "outer joins whose padded rows need a NOT EXISTS" in str(e.value) and "UNION" not in str(e.value), e.value
    assert engine.list() == []
