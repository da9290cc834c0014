"""The errors that cross layers: a checkout's and a clone's one-line failures.

Their own modules (checkout/, clone.py) re-export them; they live here so that
a module both of those call into (promisor.py, which raises them for objects
a partial clone lacks) can import them without importing the layers above it.
"""

from __future__ import annotations

__all__ = ["CheckoutError", "CloneError"]


class CheckoutError(Exception):
    """A checkout that could not be completed; the message is for the user."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class CloneError(Exception):
    def __init__(self, message: str, code: int = 128) -> None:
        super().__init__(message)
        self.code = code
