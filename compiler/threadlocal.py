"""Per-thread settings that a ``with`` block changes and then restores, nesting: the driver's
``fresh``, the runtime's ``instrumented`` and the workarounds' ``disabled`` are each one."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def setting(local: threading.local, name: str, value: Any, default: Any = None) -> Iterator[None]:
    """``local.<name>`` is ``value`` inside the block; afterwards what it was before (``default``
    when it was never set)."""
    before = getattr(local, name, default)
    setattr(local, name, value)
    try:
        yield
    finally:
        setattr(local, name, before)


__all__ = ["setting"]
