"""Closing: close() on exit from a with block; what must be released even when an object is
collected without close() is released by weakref.finalize."""
import weakref
from typing import Any, Callable


class Closing:
    """A context manager that calls close() on exit. A subclass registers what it holds with
    _release_on_collect(func, *args): weakref.finalize runs func(*args) once, when the object is
    collected unclosed or at interpreter exit, or when close() calls _release_now(). func and
    args must not refer to the object itself (they would keep it alive)."""

    _finalizer: Any = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _release_on_collect(self, func: Callable[..., Any], *args: Any) -> None:
        self._finalizer = weakref.finalize(self, func, *args)

    def _release_now(self) -> None:
        """Run the registered release now (at most once in all)."""
        if self._finalizer is not None:
            self._finalizer()
