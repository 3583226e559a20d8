"""Logging filters named in settings.LOGGING (imported while settings load: no Django, no app imports)."""

import logging


class WithoutRequestFilter(logging.Filter):
    """Drops axes' errors about a failed authenticate() without a request: expected, not a fault."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not ("without a request" in message or "to a None request" in message)
