"""Write the checkout's local development settings, `.env`, once: DEBUG=1 and a random SECRET_KEY.

`make run` (and `make .env`) call `python -m config.local_env .env`. An existing file is never
touched, so the key stays the same and sessions survive restarts. No Django import: this runs
before anything is configured. config/settings.py reads the file; real environment variables win.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

TEMPLATE = """\
# Local development settings for this checkout, written once by `make run` (git-ignored).
# config/settings.py reads them; a variable set in the real environment wins over this file.
# Never use this file in production: there, set SECRET_KEY (and DATABASE_URL, ALLOWED_HOSTS) yourself.
DEBUG=1
SECRET_KEY={secret}
"""


def write(path: Path) -> bool:
    """Create `path` with DEBUG=1 and a fresh random SECRET_KEY, readable by its owner only.
    Returns False (and changes nothing) when the file exists."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(TEMPLATE.format(secret=secrets.token_urlsafe(50)))
    return True


def main(argv: list[str]) -> int:
    path = Path(argv[1] if len(argv) > 1 else ".env")
    if write(path):
        print(f"Wrote {path}: local development settings (DEBUG=1, a random SECRET_KEY).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
