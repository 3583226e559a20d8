"""Internal: the child process of a large web upload's import (judgments.exchange.upload_import)."""

import json
import sys

from judgments.exchange.cli import ExchangeCommand
from judgments.exchange.upload_import import run_child


class Command(ExchangeCommand):
    help = (
        "Internal: import (or dry-run) one web upload described by JSON on stdin; answers one JSON line "
        "(summary, problems, run). The web import starts it for files over UPLOAD_CHILD_MB."
    )

    def handle(self, *args, **options):
        run_child(json.loads(sys.stdin.read()), self.stdout)
