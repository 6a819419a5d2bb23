"""The store's exception: a stable code and a message. The HTTP layer maps codes to statuses."""

from __future__ import annotations

from typing import Any


class StoreError(Exception):
    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.extra = extra
