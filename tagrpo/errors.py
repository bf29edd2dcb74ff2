"""The project's own errors: ``tagrpo`` prints these as one line (exit status 2); anything else keeps its traceback."""


class TagrpoError(Exception):
    """A failure the user can act on, with a message that names the thing (file, flag, URL, model)."""
