"""The one error type the tools report to users as a single line (exit status 2)."""


class GlowError(Exception):
    """A problem with the user's model, options or files; the message names the culprit."""
