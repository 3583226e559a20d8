"""`tests/bench/run.py bench_capture`: capturing a run from a local engine must be bound by the engine.

Builds a throw-away pool "bench-capture-<time>" (deleted at the end unless --keep): --queries queries of
three words and --documents documents of forty, drawn from a 2,000-word vocabulary (every query matches
hundreds of documents, so every answer holds --depth hits), with five graded documents per query so that
scoring the captured run does real work. The demo BM25 engine (judgments.capture.demo_engine) serves the
documents from its own process, in Elasticsearch's `_search` format, optionally with a fixed server-side
latency (--latency-ms; 0 = as fast as it can answer).

Then, in one run, --rounds times in turn:
- the engine's capacity, measured directly at the same concurrency: every query's request body (the same
  one the capture sends) POSTed by a minimal client (stdlib http.client, --concurrency threads with a
  keep-alive connection each, the answer read but not parsed): requests per second; then the same client
  reading every answer as a capture must (JSON decoding and the hits: the floor of any Python client
  that uses the answers);
- our capture: `capture_run`'s service (judgments.capture.services) from the job's start to the scored
  run committed: queries read, sent, answers parsed, the run staged and stored (judgments.run_staging) and
  scored.
Printed per round: both rates and their ratio (the two measured back to back, so a change of the
machine's load between rounds moves both); then the median of the rounds' ratios (target >= 0.8x), the
best of each rate, our time split into the capture and what follows it (storing + scoring), the CPU
time this process spent per query on each side (what decides the ratio when the engine and we share a
saturated CPU), and the load average.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from judgments.capture import services
from judgments.models import Document, Judgment, Pair, Pool, Query, SearchConfiguration, Team
from judgments.models.capture import CaptureJob
from judgments.services import delete_pool_in_bulk
from scoring.models import CellScore

TARGET = 0.8
VOCABULARY = 2000
DOC_WORDS = 40
GRADED_PER_QUERY = 5


class Command(BaseCommand):
    help = "Capture rate (queries/s, storing and scoring included) against the engine's own capacity."

    def add_arguments(self, parser):
        parser.add_argument("--queries", type=int, default=5000)
        parser.add_argument("--documents", type=int, default=20000)
        parser.add_argument("--depth", type=int, default=100)
        parser.add_argument("--concurrency", type=int, default=8)
        parser.add_argument(
            "--latency-ms", type=float, default=0.0, help="the engine's fixed latency per search"
        )
        parser.add_argument("--rounds", type=int, default=3, help="rounds (engine, then our capture)")
        parser.add_argument("--seed", type=int, default=12)
        parser.add_argument("--keep", action="store_true", help="keep the pool afterwards")

    def handle(
        self, *args, queries, documents, depth, concurrency, latency_ms, rounds, seed, keep, **options
    ):
        if min(queries, documents, depth, concurrency, rounds) < 1:
            raise CommandError("every count must be positive")
        rng = random.Random(seed)
        words = [f"{_word(rng)}{i}" for i in range(VOCABULARY)]
        self.pool = None
        engine = None
        try:
            with tempfile.TemporaryDirectory(prefix="bench_capture_") as tmp:
                started = time.perf_counter()
                texts, docs = self._build(rng, words, queries, documents)
                self._say(f"pool {self.pool.name}: {queries} queries, {documents} documents, "
                          f"{queries * GRADED_PER_QUERY} judgments ({time.perf_counter() - started:.1f} s)")  # fmt: skip
                engine, url = self._engine(Path(tmp), docs, latency_ms)
                configuration = SearchConfiguration.objects.create(
                    pool=self.pool, team=Team.objects.get_or_create(name="bench-capture")[0], name="bm25"
                )
                services.set_endpoint(configuration, kind="elasticsearch", url=url, depth=depth)
                spec = configuration.endpoint.spec()
                bodies = [spec.build_request(text, qid, depth)[2] for qid, text in texts]
                label = f"latency {latency_ms:g} ms" if latency_ms else "no added latency"
                self._say(f"engine: demo BM25 at {url} ({label}); depth {depth}, concurrency {concurrency}")
                engine_rates, parsing_rates, ours = [], [], []
                cpu = {"minimal": [], "parsing": [], "ours": []}  # this process's CPU ms per query
                for round_ in range(1, rounds + 1):
                    tick = time.process_time()
                    rate = self._minimal_client(url, bodies, concurrency)
                    cpu["minimal"].append((time.process_time() - tick) * 1000 / len(bodies))
                    engine_rates.append(rate)
                    self._say(f"round {round_}: engine, minimal client   {rate:8.0f} requests/s")
                    tick = time.process_time()
                    rate = self._minimal_client(url, bodies, concurrency, parse=spec.parse, depth=depth)
                    cpu["parsing"].append((time.process_time() - tick) * 1000 / len(bodies))
                    parsing_rates.append(rate)
                    self._say(f"round {round_}: minimal client + parsing {rate:8.0f} requests/s")
                    tick = time.process_time()
                    result = self._capture(configuration, depth, concurrency, len(texts))
                    cpu["ours"].append((time.process_time() - tick) * 1000 / len(texts))
                    result["ratio"] = result["rate"] / engine_rates[-1]
                    ours.append(result)
                    self._say(
                        f"round {round_}: our capture, stored+scored {result['rate']:8.0f} queries/s "
                        f"= {result['ratio']:.2f}x (capture {result['capture_s']:.2f} s at "
                        f"{result['capture_rate']:.0f}/s, then store+score {result['store_s']:.2f} s, "
                        f"{result['cells']} scored cells)"
                    )
        finally:
            if engine is not None:
                engine.terminate()
                engine.wait(timeout=10)
            if self.pool is not None and not keep:
                delete_pool_in_bulk(self.pool)
                rater = get_user_model().objects.filter(username="bench-capture-rater")
                if not Judgment.objects.filter(
                    rater__in=rater
                ).exists():  # a kept pool may hold its judgments
                    rater.delete()
        best_engine = max(engine_rates)
        best = max(ours, key=lambda r: r["rate"])
        ratio = statistics.median(r["ratio"] for r in ours)
        per_round = ", ".join(f"{r['ratio']:.2f}" for r in ours)
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        self._say("")
        self._say(
            f"Summary ({queries} queries at depth {depth}, concurrency {concurrency}, {label}; {rounds} rounds; "
            f"load average {load} on {os.cpu_count()} cores):"
        )
        self._say(f"  engine capacity (minimal client), best  {best_engine:8.0f} requests/s")
        self._say(f"  our capture incl. storing and scoring   {best['rate']:8.0f} queries/s (best)")
        self._say(f"  ratio, median of the rounds             {ratio:8.2f}x  "
                  f"(rounds: {per_round}; target >= {TARGET}x: "
                  f"{'met' if ratio >= TARGET else 'MISSED'})")  # fmt: skip
        self._say(f"  of which the capture itself             {best['capture_rate']:8.0f} queries/s "
                  f"({best['capture_rate'] / best_engine:.2f}x of the best engine rate), then storing + "
                  f"scoring {best['store_s']:.2f} s")  # fmt: skip
        self._say(f"  for reference: the minimal client reading every answer as we do (json + hits): "
                  f"{max(parsing_rates):.0f} requests/s ({max(parsing_rates) / best_engine:.2f}x)")  # fmt: skip
        med = {k: statistics.median(v) for k, v in cpu.items()}
        self._say(f"  CPU of this process per query (median; PostgreSQL's not counted): minimal client "
                  f"{med['minimal']:.3f} ms, + parsing {med['parsing']:.3f} ms, our capture stored and scored "
                  f"{med['ours']:.3f} ms")  # fmt: skip

    # --- setup -------------------------------------------------------------------------------------------

    def _build(self, rng, words, n_queries, n_docs):
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.pool = Pool.objects.create(name=f"bench-capture-{stamp}")
        texts = [(f"q{i}", " ".join(rng.sample(words, 3))) for i in range(n_queries)]
        docs = [(f"d{i}", " ".join(rng.choices(words, k=8)), " ".join(rng.choices(words, k=DOC_WORDS - 8)))
                for i in range(n_docs)]  # fmt: skip
        Query.objects.bulk_create(
            [Query(pool=self.pool, external_id=q, text=t) for q, t in texts], batch_size=5000
        )
        Document.objects.bulk_create(
            [Document(pool=self.pool, external_id=d, title=t, body=b) for d, t, b in docs], batch_size=5000
        )
        query_pks = list(Query.objects.filter(pool=self.pool).order_by("pk").values_list("pk", flat=True))
        doc_pks = list(Document.objects.filter(pool=self.pool).values_list("pk", flat=True))
        pairs = Pair.objects.bulk_create(
            [Pair(pool=self.pool, query_id=q, document_id=d) for q in query_pks for d in rng.sample(doc_pks, GRADED_PER_QUERY)],
            batch_size=5000,
        )  # fmt: skip
        rater, _ = get_user_model().objects.get_or_create(username="bench-capture-rater")
        Judgment.objects.bulk_create(
            [Judgment(pair=p, rater=rater, grade=rng.randint(0, 4)) for p in pairs], batch_size=5000
        )
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        return texts, docs

    def _engine(self, tmp: Path, docs, latency_ms: float):
        path = tmp / "documents.jsonl"
        with open(path, "w") as out:
            for d, t, b in docs:
                out.write(json.dumps({"id": d, "title": t, "body": b}) + "\n")
        process = subprocess.Popen(
            [sys.executable, "-m", "judgments.capture.demo_engine", "--documents", str(path), "--port", "0",
             "--latency-ms", str(latency_ms)],
            cwd=settings.BASE_DIR, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        line = process.stderr.readline()
        found = re.search(r"at (http://\S+)", line)
        if not found:
            process.kill()
            raise CommandError(f"the demo engine did not start: {line}{process.stderr.read()}")
        threading.Thread(target=process.stderr.read, daemon=True).start()  # keep its stderr drained
        return process, found.group(1)

    # --- the two sides -----------------------------------------------------------------------------------

    def _minimal_client(self, url: str, bodies: list[bytes], concurrency: int, parse=None, depth=0) -> float:
        """Requests per second the engine answers: keep-alive connections, answers read, not parsed
        (with `parse`, each answer also goes through the endpoint's reader, as a capture's does)."""
        parts = urlsplit(url)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        todo = iter(range(len(bodies)))
        lock = threading.Lock()
        errors = []

        def worker():
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
            while True:
                with lock:
                    i = next(todo, None)
                if i is None:
                    break
                conn.request("POST", parts.path, bodies[i], headers)
                response = conn.getresponse()
                content = response.read()
                if parse is not None:
                    parse(response.status, response.reason, "application/json", content, depth)
                if response.status != 200:
                    errors.append(response.status)
            conn.close()

        threads = [threading.Thread(target=worker) for _ in range(concurrency)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
        if errors:
            raise CommandError(f"the engine answered {len(errors)} requests with an error: {errors[:5]}")
        return len(bodies) / elapsed

    def _capture(self, configuration, depth: int, concurrency: int, n: int) -> dict:
        started = time.perf_counter()
        job = services.start_capture(
            configuration, trigger=CaptureJob.Trigger.COMMAND, depth=depth, concurrency=concurrency
        )
        job = services.run_capture(job, timeout=30)
        elapsed = time.perf_counter() - started
        if job.status != CaptureJob.Status.SUCCEEDED:
            raise CommandError(f"the capture failed: {job.message} {job.failures[:3]}")
        capture_s = n / job.rate if job.rate else elapsed
        return {
            "rate": n / elapsed,
            "capture_rate": job.rate,
            "capture_s": capture_s,
            "store_s": elapsed - capture_s,
            "cells": CellScore.objects.filter(run=job.run).count(),
        }

    def _say(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()


def _word(rng: random.Random) -> str:
    return "".join(rng.choice("bcdfghjklmnprstvz") + rng.choice("aeiou") for _ in range(3))
