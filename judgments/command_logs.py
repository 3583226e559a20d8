"""What a command's log shows at each verbosity: the result goes to stdout once, so the INFO lines that
repeat it (a service's own summary) and the HTTP client's line per request stay out of stderr unless the
command is run with -v 2 or more. The settings keep the HTTP client at WARNING everywhere else (the web
server, the task worker), so a model judge's thousand calls do not flood a log either."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

HTTP_CLIENT_LOGGERS = ("httpx", "httpcore")


@contextmanager
def command_logs(verbosity: int, *repeating: str) -> Iterator[None]:
    """Within the block: at -v 2 and above, the HTTP client's request lines (INFO) show and the loggers in
    `repeating` speak as usual; below, both stay at WARNING."""
    levels = {name: logging.getLogger(name).level for name in (*HTTP_CLIENT_LOGGERS, *repeating)}
    loud = verbosity >= 2
    for name in HTTP_CLIENT_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO if loud else logging.WARNING)
    for name in repeating:
        if not loud:
            logging.getLogger(name).setLevel(logging.WARNING)
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
