"""idivm: ID-based incremental view maintenance for PostgreSQL.

    import idivm
    engine = idivm.connect()            # --dsn > IDIVM_DSN > DATABASE_URL > embedded default
    engine.init()
    engine.register_view("phone_parts", "SELECT ...", strategy="id")
    engine.maintain("phone_parts")
"""
from .api import Engine, VerifyResult, connect
from .errors import IdivmError, UnknownObject, UnsupportedQuery

__all__ = ["connect", "Engine", "VerifyResult", "IdivmError", "UnsupportedQuery", "UnknownObject"]
__version__ = "0.1.0"
