"""Folding several changes to one row into one effective change: the one place this convention lives.

A change source is any relation of signed row images ``(img jsonb, n int)``: -1 for an image a
change removed, +1 for an image it wrote. The capture log supplies one -1 (``old_row``) and one +1
(``new_row``) per logged change; immediate mode stashes its statements' transition tables the same
way.

Why signed images and not "first pre-image, last post-image" in log order: the log's order is not
the order in which changes happened. A statement-level trigger fires when its statement ends, so a
write nested inside a statement (a user trigger's UPDATE, a function's DML) is logged before the
statement that fired it; and PostgreSQL merges what foreign-key cascades change into the
transition tables of the statement that fired them, so one key can appear several times on each
side. Summing the signs per image needs no order: a key's versions v0 -> v1 -> ... -> vk
telescope to -v0 +vk, whatever order the links were logged in and however they were paired. An
image that ends with a negative sum is the key's state before the window (pre), one with a
positive sum its state after (post); images whose signs cancel drop out, so a change undone in the
same window disappears. Images are compared by the jsonb text of the columns the view reads, so
1.0 -> 1.00 counts as a change (jsonb equality would call them equal), and an image logged before an
ALTER TABLE of a column the view does not read (added with a default, retyped, renamed, dropped)
still cancels the same row's image logged after it; a change of only such columns drops out. An
image is decoded (jsonb_to_record) into the columns it is read for alone, with the types they have
now: a column the view does not read is never parsed, whatever it held when the image was logged.

The result has one row per changed key: ``kind`` ('I' no pre-image, 'D' no post-image, 'U' both)
and ``pre__<col>``, ``post__<col>`` for every column: the effective i-diff instance (idIVM
Section 5: one change per key, meeting its conditions C1-C3: inserted rows are in the post-state,
deleted keys are not, updated rows carry their post-state values).
"""
from __future__ import annotations

from ..algebra.tables import TableInfo
from ..program import relations as R
from ..sqltext import ident, string_literal


def fold_select(info: TableInfo, signed_images: str, compared: list[str]) -> str:
    """A SELECT of the effective i-diff rows of `info`'s table from a query of (img, n) rows; images
    are compared on the `compared` columns (those the view reads: module docstring)."""
    # the key alone to group images by key, every column for the instance (module docstring)
    key_defs, col_defs = record_columns(info, info.key), record_columns(info, info.column_names)
    compared_text = f"CAST(jsonb_build_array({', '.join(f'w.img -> {string_literal(c)}' for c in compared)}) AS text)"
    keys = ", ".join(f"k.{ident(k)}" for k in info.key)
    pre, post = ident("pre"), ident("post")
    cols = ", ".join([f"{pre}.{ident(c)} AS {ident(R.pre(c))}" for c in info.column_names]
                     + [f"{post}.{ident(c)} AS {ident(R.post(c))}" for c in info.column_names])
    i, d, u = (string_literal(code) for code in (R.INSERTED, R.DELETED, R.UPDATED))
    return f"""
WITH s AS (
  SELECT (array_agg(w.img))[1] AS img, sum(w.n) AS n
  FROM ({signed_images}) AS w(img, n) GROUP BY {compared_text} HAVING sum(w.n) <> 0
), f AS (
  SELECT (array_agg(s.img) FILTER (WHERE s.n < 0))[1] AS old_img,
         (array_agg(s.img) FILTER (WHERE s.n > 0))[1] AS new_img
  FROM s CROSS JOIN LATERAL jsonb_to_record(s.img) AS k({key_defs}) GROUP BY {keys}
)
SELECT CAST(CASE WHEN f.old_img IS NULL THEN {i} WHEN f.new_img IS NULL THEN {d} ELSE {u} END AS text) AS {ident(R.KIND_COLUMN)}, {cols}
FROM f
CROSS JOIN LATERAL jsonb_to_record(f.old_img) AS {pre}({col_defs})
CROSS JOIN LATERAL jsonb_to_record(f.new_img) AS {post}({col_defs})"""


# fold_log's larger query costs more to plan than fold_select's: for one change of V' the fold took
# 2.5-2.7 ms against 1.1-1.3 ms (deferred maintenance plans it at every call); for 5,000, 27 ms
# against 34 ms. Maintenance folds a window of at least this many logged changes with fold_log.
FOLD_BY_KEY_FROM = 1_000


def window_count(log: str, window: str) -> str:
    """SQL of the number of log rows that satisfy `window`, counted up to FOLD_BY_KEY_FROM: which
    fold a window takes (and whether it has rows at all)."""
    return f"(SELECT count(*) FROM (SELECT FROM {log} AS l WHERE {window} LIMIT {FOLD_BY_KEY_FROM}) AS w)"


def log_images(log: str, window: str) -> str:
    """The signed images of the log rows that satisfy `window` (a condition on the log's alias l)."""
    return (f"SELECT x.img, x.n FROM {log} AS l "
            "CROSS JOIN LATERAL (VALUES (l.old_row, -1), (l.new_row, 1)) AS x(img, n) "
            f"WHERE x.img IS NOT NULL AND {window}")


def fold_log(info: TableInfo, log: str, window: str, compared: list[str]) -> str:
    """fold_select over the log rows that satisfy `window` (a condition on the log's alias l), with the
    same result, at a third of its cost where most keys change once in a large window
    (bench_oltp's order lines: 54 against 143 ms for 17,000 logged changes), and more for a small
    one (FOLD_BY_KEY_FROM): an update that changed none of the compared columns is dropped at once
    (its two images cancel in any case), each remaining image is grouped by its typed key instead
    of the text of its compared columns, and a key with one image, or one of each sign that differ
    (as the two of one logged update that was not dropped do), is its own effective change. The
    few keys with more images take fold_select's general rule. Values are compared as the text ->> gives, which keeps a
    numeric's scale as the general rule's jsonb text does. Rows come in key order, as
    fold_select's grouping leaves them (without it, V' at 5,000 changes lost to the Δ-script's
    writes by key what the fold gained: 256 against 241 ms a maintenance)."""
    key_defs, col_defs = record_columns(info, info.key), record_columns(info, info.column_names)
    keys = [f"k{i}" for i in range(len(info.key))]

    def same(a: str, b: str) -> str:
        return " AND ".join(f"({a} ->> {string_literal(c)}) IS NOT DISTINCT FROM ({b} ->> {string_literal(c)})"
                            for c in compared)

    decoded = ", ".join(f"{side}.{ident(k)} AS {side}{i}" for side in ("o", "n") for i, k in enumerate(info.key))
    pre, post = ident("pre"), ident("post")
    cols = ", ".join([f"{pre}.{ident(c)} AS {ident(R.pre(c))}" for c in info.column_names]
                     + [f"{post}.{ident(c)} AS {ident(R.post(c))}" for c in info.column_names])
    i, d, u = (string_literal(code) for code in (R.INSERTED, R.DELETED, R.UPDATED))
    listed = ", ".join(keys)
    general = fold_select(info, f"SELECT w.img, w.n FROM w WHERE ({', '.join(f'w.{k}' for k in keys)}) IN "
                                f"(SELECT {listed} FROM g WHERE g.c > 2 OR (g.c = 2 AND g.olds <> 1))", compared)
    return f"""
WITH r AS (
  SELECT l.seq, l.old_row, l.new_row, {decoded} FROM {log} AS l
  LEFT JOIN LATERAL jsonb_to_record(l.old_row) AS o({key_defs}) ON true
  LEFT JOIN LATERAL jsonb_to_record(l.new_row) AS n({key_defs}) ON true
  WHERE {window} AND NOT (l.old_row IS NOT NULL AND l.new_row IS NOT NULL AND {same("l.old_row", "l.new_row")})
), w AS (
  SELECT r.seq, r.old_row AS img, -1 AS n, {", ".join(f"r.o{i} AS {k}" for i, k in enumerate(keys))} FROM r
  WHERE r.old_row IS NOT NULL
  UNION ALL
  SELECT r.seq, r.new_row, 1, {", ".join(f"r.n{i}" for i in range(len(keys)))} FROM r WHERE r.new_row IS NOT NULL
), g AS (
  SELECT {listed}, count(*) AS c, count(*) FILTER (WHERE w.n < 0) AS olds, min(w.seq) = max(w.seq) AS one_row,
         (array_agg(w.img) FILTER (WHERE w.n < 0))[1] AS old_img, (array_agg(w.img) FILTER (WHERE w.n > 0))[1] AS new_img
  FROM w GROUP BY {listed}
)
(SELECT CAST(CASE WHEN g.old_img IS NULL THEN {i} WHEN g.new_img IS NULL THEN {d} ELSE {u} END AS text) AS {ident(R.KIND_COLUMN)}, {cols}
FROM g
CROSS JOIN LATERAL jsonb_to_record(g.old_img) AS {pre}({col_defs})
CROSS JOIN LATERAL jsonb_to_record(g.new_img) AS {post}({col_defs})
WHERE g.c = 1 OR (g.c = 2 AND g.olds = 1 AND (g.one_row OR NOT ({same("g.old_img", "g.new_img")})))
ORDER BY {", ".join(f"g.{k}" for k in keys)})
UNION ALL
SELECT * FROM ({general}) AS general"""


def record_columns(info: TableInfo, names) -> str:
    """The column definition list that decodes an image into these columns of `info`'s table, with
    their types and collations (jsonb_to_record(img) AS r(<this>)): the i-diff instance made from it
    compares and orders each column as its table does."""
    return ", ".join(f"{ident(c)} {info.declared(c)}" for c in names)
