"""The browser view's defaults, shared by its command line and its server."""

DEFAULT_PORT = 8765
MAX_PAGES = 16  # WebSockets open at once by default (--max-pages)
