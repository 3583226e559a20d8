"""`tests/bench/run.py bench_gate`: the regression gate on a big pool, against the compare page's service.

Builds bench_compare's throw-away pool (--queries queries, 2 configurations with 2 runs each, stored
scores written by binary COPY; deleted at the end) and times, best of --rounds rounds run in turn:

- the gate's service (`scoring.gate.service.evaluate`: read both runs' stored scores, the paired test
  of 4 measures, the queries lost most) with the t-test and with the randomization test;
- the same through `manage.py gate` in this process (the reports written to files as well);
- reference: the compare page's service on the same two configurations and 4 measures
  (`scoring.comparison.compare_pair`: bootstrap CIs, randomization and t-tests), and
  scipy.stats.ttest_rel over the same arrays (the arithmetic alone).

It also checks that the gate's t-test p-values equal scipy's on the stored scores.
"""

from __future__ import annotations

import os
import tempfile
import time
from io import StringIO

import numpy as np
from django.core.management import call_command
from django.core.management.base import CommandError

from scoring import comparison
from scoring.gate import service

from .bench_compare import Command as CompareBench
from .timing import best_times

MEASURES = ("ndcg@10", "ndcg@100", "p@10", "mrr")


class Command(CompareBench):
    help = "Time the regression gate (service and command) against the compare page's service."

    def add_arguments(self, parser):
        parser.add_argument("--queries", type=int, default=5000)
        parser.add_argument("--rounds", type=int, default=5)
        parser.add_argument("--seed", type=int, default=20261127)

    def handle(self, *args, queries, rounds, seed, **options):
        import scipy.stats

        self.rng = np.random.default_rng(seed)
        name = f"bench-gate-{time.strftime('%Y%m%d-%H%M%S')}"
        self.pool, self.user = self._build(name, queries, 2, 2)
        try:
            base, cand = "cfg-00", "cfg-01"
            a = self.pool.configurations.get(name=base)
            b = self.pool.configurations.get(name=cand)
            folder = tempfile.mkdtemp()

            def gate(test):
                return lambda: service.evaluate(self.pool, base, cand, measures=MEASURES, test=test)

            def command():
                try:
                    call_command(
                        "gate", "--pool", self.pool.name, "--baseline", base, "--candidate", cand,
                        *[x for m in MEASURES for x in ("--measure", m)],
                        "--junit", os.path.join(folder, "g.xml"), "--markdown", os.path.join(folder, "g.md"),
                        stdout=StringIO(), stderr=StringIO(),
                    )  # fmt: skip
                except CommandError as exc:
                    if exc.returncode != 1:
                        raise

            result = service.evaluate(self.pool, base, cand, measures=MEASURES, test="t")
            paired = comparison.paired_scores(a, b, "exp", MEASURES)
            arrays = [(paired.column(m, "a"), paired.column(m, "b")) for m in MEASURES]
            for m, (x, y) in zip(result.measures, arrays, strict=True):
                expected = scipy.stats.ttest_rel(y, x).pvalue
                if not np.isclose(m.p, expected, rtol=1e-9, atol=0):
                    raise CommandError(f"{m.measure}: gate p {m.p} != scipy {expected}")
            times = best_times(
                rounds,
                [
                    gate("t"),
                    gate("randomization"),
                    command,
                    lambda: comparison.compare_pair(a, b, "exp", metrics=MEASURES, stored=False),
                    lambda: [scipy.stats.ttest_rel(y, x) for x, y in arrays],
                ],
            )
            load = os.getloadavg()
            reference = times[3]
            self.stdout.write(
                f"bench_gate: {queries} queries x 4 measures, best of {rounds}, load average "
                f"{load[0]:.1f} {load[1]:.1f}; p-values equal scipy's ttest_rel (rtol 1e-9)"
            )
            for label, seconds in zip(
                (
                    "gate service, t-test",
                    "gate service, randomization test",
                    "manage.py gate (in process, + JUnit and Markdown)",
                    "compare page's service (reference)",
                    "scipy.stats.ttest_rel on the arrays",
                ),
                times,
                strict=True,
            ):
                self.stdout.write(f"  {label:<52} {seconds * 1000:8.1f} ms  {seconds / reference:5.2f}x")
        finally:
            self._delete()
