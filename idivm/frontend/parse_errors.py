"""A parse error as PostgreSQL users read one: what is wrong, at which token, and the line with a
caret under that token (as psql shows PostgreSQL's own syntax errors).

sqlglot reports the position where it noticed the problem, as the column of the *last* character
of the token it stopped at; a misspelt first keyword (`SELCT pid, price ...`) is read as an
expression and noticed only at the comma after it. So a statement that does not start as a query
does is reported at its first token, and any other error at the start of the token sqlglot names.
"""
from __future__ import annotations

import re

import sqlglot
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

QUERY_START = {TokenType.SELECT, TokenType.WITH, TokenType.L_PAREN, TokenType.VALUES, TokenType.TABLE}


def describe(sql: str, e: ParseError) -> str:
    """One line saying what is wrong and where, then the source line and a caret under the token."""
    detail = e.errors[0] if getattr(e, "errors", None) else {}
    try:
        tokens = sqlglot.tokenize(sql, read="postgres")
    except TokenError:
        tokens = []
    if tokens and tokens[0].token_type not in QUERY_START:
        token = tokens[0]
        return _at(sql, f'syntax error at or near "{token.text}": a view is defined by a SELECT',
                   token.line, token.col - len(token.text) + 1)
    line, col, highlight = detail.get("line"), detail.get("col"), detail.get("highlight") or ""
    what = _what(str(e).splitlines()[0] if str(e) else "", detail.get("description") or "", highlight)
    if not line or not col:
        return what
    return _at(sql, what, line, max(col - len(highlight) + 1, 1))


def _what(first: str, description: str, highlight: str) -> str:
    """sqlglot's description in the user's terms: `Required keyword: 'this' missing for <class
    'sqlglot.expressions.query.Where'>` names a clause left without its expression."""
    found = re.match(r"Required keyword: '\w+' missing for <class '[\w.]*\.(\w+)'>", first)
    if found:
        return re.sub(r"(?<!^)(?=[A-Z])", " ", found.group(1)).upper() + " is missing its expression"
    near = f' at or near "{highlight}"' if highlight else " at the end of the statement"
    if description.startswith("Expecting "):
        return f"expected {description[len('Expecting '):]}{near}"
    return f"syntax error{near}"


def _at(sql: str, what: str, line: int, column: int) -> str:
    source = sql.splitlines()[line - 1] if 0 < line <= len(sql.splitlines()) else ""
    return f"{what} (line {line}, column {column})\n  {source}\n  {' ' * (column - 1)}^"
