"""The one exception a user is shown as a single line (``sluice: error: ...``)."""


class UserError(Exception):
    """A problem the user can fix: bad arguments, a missing file, a corrupt log."""
