"""Frontend: SQL text (or a SQLAlchemy Select) -> a logical plan over reflected base tables."""
from .driver import compile_view_sql

__all__ = ["compile_view_sql"]
