"""Identifiers are always quoted: odd names work and nothing user-supplied becomes SQL."""
from __future__ import annotations

from helpers import assert_equal_multiset

SQL = ('SELECT o."Key", o."unit%price" * o."Qty:x" AS "Line Total", c."Name" '
       'FROM "My Schema"."Order Items" AS o JOIN "My Schema"."Cust""omers" AS c ON o."Cust" = c."Key" '
       "WHERE c.\"Name\" <> 'x''; DROP TABLE t; --'")


def test_odd_identifiers_and_literals(engine, db):
    db.execute('CREATE SCHEMA "My Schema"')
    db.execute('CREATE TABLE "My Schema"."Order Items" ("Key" int PRIMARY KEY, "unit%price" numeric, "Qty:x" int, "Cust" int)')
    db.execute('CREATE TABLE "My Schema"."Cust""omers" ("Key" int PRIMARY KEY, "Name" text)')
    db.execute('INSERT INTO "My Schema"."Cust""omers" VALUES (1, \'ann\'), (2, \'bob\')')
    db.execute('INSERT INTO "My Schema"."Order Items" VALUES (10, 2.5, 2, 1), (11, 1, 1, 2)')
    engine.register_view('"My Schema"."Odd View"', SQL)
    engine.register_view('"My Schema"."Odd View T"', SQL, strategy="tuple")
    db.execute('UPDATE "My Schema"."Order Items" SET "unit%price" = 3 WHERE "Key" = 10')
    db.execute('UPDATE "My Schema"."Cust""omers" SET "Name" = \'cy\' WHERE "Key" = 2')
    db.execute('INSERT INTO "My Schema"."Order Items" VALUES (12, 4, 4, 2)')
    engine.maintain()
    for v in ('"My Schema"."Odd View"', '"My Schema"."Odd View T"'):
        assert_equal_multiset(db, v, SQL, ["Key", "Line Total", "Name"])
    assert engine.verify('"My Schema"."Odd View"').ok
    assert "Odd View" in engine.explain('"My Schema"."Odd View"')
