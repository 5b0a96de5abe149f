"""idivm: ID-based incremental view maintenance for PostgreSQL.

    import idivm
    engine = idivm.connect()            # --dsn > IDIVM_DSN > DATABASE_URL > the embedded default
    engine.init()
    engine.register_view("phone_parts", "SELECT ...", strategy="id")
    engine.maintain("phone_parts")

The API (and with it the database driver) is imported on first use of connect, Engine or
VerifyResult, so that the compiler's packages (idivm.algebra, idivm.strategies, ...) import without
a driver (docs/architecture.md).
"""
from .errors import IdivmError, UnknownObject, UnsupportedQuery

__all__ = ["connect", "Engine", "VerifyResult", "IdivmError", "UnsupportedQuery", "UnknownObject"]
__version__ = "0.1.0"
_API = ("connect", "Engine", "VerifyResult")


def __getattr__(name: str):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'idivm' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_API))
