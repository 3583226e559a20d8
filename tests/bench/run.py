"""Run one benchmark: `python tests/bench/run.py bench_scoring [options]` (`--help` lists its options).

The benchmarks are Django management commands kept under tests/ (they need test-only tools such as
pytrec_eval and psql) rather than in the apps; this runner sets Django up and runs one of them.
`make bench` runs every benchmark with its defaults.
"""

import os
import sys
from importlib import import_module
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = (
    "bench_scoring",
    "bench_compare",
    "bench_exchange",
    "bench_export",
    "bench_capture",
    "bench_grading",
    "bench_upload",
    "bench_adaptive",
    "bench_pages",
    "bench_gate",
    "bench_segments",
)


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in BENCHMARKS:
        sys.exit(f"usage: python tests/bench/run.py {{{'|'.join(BENCHMARKS)}}} [options]")
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    command = import_module(f"tests.bench.{argv[0]}").Command()
    command.run_from_argv(["manage.py", *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
