"""Modification logging: per-table log tables filled by statement-level triggers."""
from .triggers import drop_capture, ensure_capture

__all__ = ["ensure_capture", "drop_capture"]
