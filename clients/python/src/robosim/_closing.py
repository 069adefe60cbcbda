"""Closing: close() on exit from a with block and when collected."""


class Closing:
    """A context manager that calls close() on exit and when collected (close() must be safe to
    call again)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
