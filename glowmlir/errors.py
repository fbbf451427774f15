"""The one error type the tools report to users as a single line (exit status 2)."""


class GlowError(ValueError):
    """A problem with the user's model, options, files or API arguments; the message names the culprit.

    A `ValueError`, so Python API callers that already catch bad values catch it too."""


class GlowWarning(UserWarning):
    """Something the tools changed on the user's behalf (a renamed bundle or placeholder);
    the command-line tools print it as one `<tool>: warning: ...` line."""
