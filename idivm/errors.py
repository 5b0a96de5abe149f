"""Errors users see.

Every failure a user can cause (bad SQL, unsupported construct, unknown view)
raises an ``IdivmError`` whose message is one self-contained line; the CLI
prints it without a traceback.
"""

EXIT_STALE = 3  # `idivm maintain` and `schedule --once`: a view was skipped, a schema change made it stale


def first_line(e: BaseException) -> str:
    """The first line of an exception's message (PostgreSQL adds DETAIL/HINT lines)."""
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


class IdivmError(Exception):
    """A problem the user can fix; the message names it."""


class UnsupportedQuery(IdivmError):
    """The view's SELECT uses a construct idivm cannot maintain (yet)."""


class UnknownObject(IdivmError):
    """A table, column or view that does not exist."""


class DatabaseUnavailable(IdivmError):
    """The database cannot be reached (the original driver error is the __cause__)."""


class Busy(IdivmError):
    """Another session is maintaining this view right now (maintenance asked not to wait)."""


class Stale(IdivmError):
    """The view's base tables changed shape (capture/schema_changes.py): its Δ-script no longer
    applies; `idivm refresh` rebuilds it."""


class Restart(IdivmError):
    """A table a maintenance reads was truncated or rewritten after its transaction took its
    snapshot: nothing was done; the maintenance begins again in a new transaction."""


# SQLSTATEs of idivm's own, raised by its server-side functions (class IV: implementation-defined,
# as SQL reserves classes starting with I-Z for that). Callers test the code, never the message.
SQLSTATE_STALE = "IV001"  # the view is stale: `idivm refresh` rebuilds it
SQLSTATE_NOT_COMPILED = "IV002"  # the view has no maintenance function: `idivm refresh` rebuilds it
