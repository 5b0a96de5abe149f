"""Small builders for the sqlglot trees that program steps carry (quoted identifiers, parenthesized
conjunctions), so that the compiler never writes SQL text."""
from __future__ import annotations

from copy import deepcopy

from sqlglot import exp


def ident(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


def col(table: str | None, name: str) -> exp.Column:
    return exp.Column(this=ident(name), table=ident(table) if table else None)


def alias(e: exp.Expression, name: str) -> exp.Alias:
    return exp.Alias(this=e, alias=ident(name))


def num(n: int) -> exp.Literal:
    return exp.Literal.number(n) if n >= 0 else exp.Neg(this=exp.Literal.number(-n))


def string(s: str) -> exp.Literal:
    return exp.Literal.string(s)


def eq(a: exp.Expression, b: exp.Expression) -> exp.EQ:
    return exp.EQ(this=a, expression=b)


def paren(e: exp.Expression) -> exp.Paren:
    return e if isinstance(e, exp.Paren) else exp.Paren(this=e)


def all_of(parts: list[exp.Expression]) -> exp.Expression:
    """Conjunction, each part parenthesized so no operator precedence can leak; TRUE when empty."""
    if not parts:
        return exp.true()
    out: exp.Expression = paren(parts[0])
    for p in parts[1:]:
        out = exp.And(this=out, expression=paren(p))
    return out


def conjuncts(e: exp.Expression | None) -> list[exp.Expression]:
    """The conjuncts of a condition, through parentheses ([] for none)."""
    if e is None:
        return []
    if isinstance(e, exp.Paren):
        return conjuncts(e.this)
    if isinstance(e, exp.And):
        return conjuncts(e.this) + conjuncts(e.expression)
    return [e]


def any_of(parts: list[exp.Expression]) -> exp.Expression:
    out: exp.Expression = paren(parts[0])
    for p in parts[1:]:
        out = exp.Or(this=out, expression=paren(p))
    return out


def shown_differently(a: list[exp.Expression], b: list[exp.Expression]) -> exp.Expression:
    """Some value of `a` differs from its counterpart in `b` as a reader sees it: by IS DISTINCT FROM,
    or by its text. Equality is coarser than what PostgreSQL shows: 1.0 = 1.00 (numeric scale),
    -0 = 0 (floats), '1 day' = '24 hours' (intervals), so a change between such values is a change
    to the view's rows all the same (capture/fold.py compares the logged images by text too). The
    text alone would not do: a session with extra_float_digits below 1 prints distinct floats alike."""
    def both(values: list[exp.Expression]) -> tuple[exp.Expression, exp.Expression]:
        texts = [exp.cast(v.copy(), "text") for v in values]
        if len(values) == 1:
            return values[0], texts[0]
        return exp.Tuple(expressions=values), exp.Tuple(expressions=texts)

    (va, ta), (vb, tb) = both(a), both(b)
    return exp.Or(this=exp.NullSafeNEQ(this=va, expression=vb), expression=exp.NullSafeNEQ(this=ta, expression=tb))


def exists(query: exp.Query) -> exp.Exists:
    return exp.Exists(this=query)


def select(outputs: list[exp.Expression], froms: list[exp.Expression], where: list[exp.Expression] | None = None,
           distinct: bool = False) -> exp.Select:
    """SELECT outputs FROM froms (comma-joined) WHERE all_of(where)."""
    q = exp.Select(expressions=outputs)
    if froms:
        q.set("from_", exp.From(this=froms[0]))  # sqlglot 30 (pinned) names it from_
        if len(froms) > 1:
            q.set("joins", [exp.Join(this=f) for f in froms[1:]])
    if where is not None:
        q.set("where", exp.Where(this=all_of(where)))
    if distinct:
        q.set("distinct", exp.Distinct())
    return q


def froms(q: exp.Select) -> list[exp.Expression]:
    """The items of a SELECT's FROM and its joins, in order (what `select` was given as froms)."""
    src = q.args.get("from_")
    return ([src.this] if src is not None else []) + [j.this for j in q.args.get("joins") or []]


def subquery(q: exp.Query, name: str) -> exp.Subquery:
    return exp.Subquery(this=q, alias=exp.TableAlias(this=ident(name)))


def aliased(table: exp.Table, name: str) -> exp.Table:
    """A copy of a table reference under another alias."""
    ref = table.copy()
    ref.set("alias", exp.TableAlias(this=ident(name)))
    return ref


def union_all(queries: list[exp.Query], distinct: bool = False) -> exp.Query:
    """q1 UNION ALL q2 ... (with distinct: UNION, duplicates removed, also from a single query:
    callers ask for distinct keys however many parts they gathered)."""
    out = queries[0]
    if distinct and len(queries) == 1:
        if isinstance(out, exp.Select):
            out = out.copy()
            out.set("distinct", exp.Distinct())
            return out
        return select([exp.Star()], [subquery(out, "u")], distinct=True)
    for q in queries[1:]:
        out = exp.Union(this=out, expression=q, distinct=distinct)
    return out


def rebuilt(tree: exp.Expression, fn) -> exp.Expression:
    """A copy of `tree` in which fn(node) stands for each node where it returns another node (its
    subtree not walked further), in one walk: what `tree.transform(fn)` gives (it walks top-down
    and prunes at a replaced node), without first copying the whole tree and then walking the
    copy, which binding the plan's expressions to a step's relations did for every filter and
    output of every step (a third of a compilation). fn sees the original nodes, must not change them
    and returns either the node itself or a new one. The copy is made as sqlglot's
    Expression.__deepcopy__ makes it, less the cached hashes."""
    stack: list[tuple[exp.Expression, exp.Expression]] = []

    def copied(node: exp.Expression) -> exp.Expression:
        """fn's node for `node`, or an empty node of its class, filled when taken off the stack."""
        new = fn(node)
        if new is node:
            new = node.__class__()
            stack.append((node, new))
        return new

    root = copied(tree)
    while stack:
        node, out = stack.pop()
        if node.comments is not None:
            out.comments = deepcopy(node.comments)
        if node._type is not None:
            out._type = deepcopy(node._type)
        if node._meta is not None:
            out._meta = deepcopy(node._meta)
        for key, value in node.args.items():
            if isinstance(value, exp.Expression):
                out.set(key, copied(value))
            elif type(value) is list:
                out.args[key] = []
                for v in value:
                    out.append(key, copied(v) if isinstance(v, exp.Expression) else v)
            else:
                out.args[key] = value
    return root
