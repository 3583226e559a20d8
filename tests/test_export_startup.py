"""An export runs as a process of its own, once per file: what it imports is its start-up time.

After django.setup() and the import of the export commands, numpy (scoring's maths), the file formats,
tqdm and the REST serializers must still be unimported: each was a visible share of a process's
0.6 s of CPU before (bench_export prints the start-up of a whole process).
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
import judgments.management.commands.export_qrels, scoring.management.commands.export_scores
from judgments.exchange.exports.grades import qrels_blocks  # the names the commands use
from judgments.exchange.exports.stream import ExportError
heavy = ["numpy", "judgments.exchange.formats", "tqdm", "rest_framework.serializers", "scoring.services"]
print(" ".join(name for name in heavy if name in sys.modules))
"""


def test_export_commands_start_without_numpy_formats_or_tqdm():
    env = dict(os.environ, DEBUG="1")
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "", f"imported at start-up: {done.stdout.strip()}"


def test_a_csv_export_loads_the_formats_it_needs():
    """Imported when needed: the catalog, the file exports and the CSV writer."""
    from judgments.exchange.exports.catalog import POOL_EXPORTS
    from judgments.exchange.exports.files import judgments_csv_lines
    from scoring import exports as score_exports

    assert "qrels" in POOL_EXPORTS and callable(judgments_csv_lines)
    assert score_exports._csv_line(["=x", 1.0, None]) == "'=x,1.0,\n"
