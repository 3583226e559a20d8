#!/usr/bin/env python3
import os
import sys
from pathlib import Path


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    try:
        import django  # noqa: F401
    except ImportError:
        # `python3 manage.py` outside the virtualenv: use the checkout's .venv when `make` made one.
        venv = Path(__file__).resolve().parent / ".venv"
        venv_python = venv / "bin" / "python"
        if venv_python.exists() and Path(sys.prefix).resolve() != venv.resolve():
            os.execv(str(venv_python), [str(venv_python), *sys.argv])
        sys.exit(
            f"Error: Django is not installed for {sys.executable}. Run `make install` (or `make run`) in "
            "the checkout, then `.venv/bin/python manage.py ...`."
        )
    from config.commandline import main as run

    run(sys.argv)


if __name__ == "__main__":
    main()
