"""`tests/bench/run.py bench_upload`: memory of the web process through a large run upload.

Builds a throw-away pool "bench-upload-<time>" with one configuration and an admin, writes a TREC run
file of --mb MiB (1,000 documents per query), then against gunicorn with production settings (one
worker, as tests/test_production.py starts it): uploads the file as the import page does (multipart,
streamed from disk), opens the preview, confirms. A thread samples the resident memory (VmRSS) of the
worker and of any child process it starts every 20 ms; the worker's own high-water mark (VmHWM) is read
at the end. Targets: the web worker's peak stays under 500 MB for a 200 MB file; the child that imports
it under 1.5 GB with --new-ids (every document id new to the pool: 5.5 million for 195 MiB, the case
where the child creates every document; without it the ids repeat within 200,000).
"""

from __future__ import annotations

import logging
import os
import random
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.test import Client

from judgments import access
from judgments.models import Pool, Run, SearchConfiguration, Team, Upload
from judgments.services import delete_pool_in_bulk
from tests.bench import raters
from tests.bench import server as production

TARGET_MB = 500
CHILD_TARGET_MB = 1536


def _status(pid: int, key: str) -> int:
    """A /proc/<pid>/status memory figure in MiB (0 if the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except OSError:
                continue
    return found


def _write_run(path: Path, megabytes: int, seed: int, new_ids: bool = False) -> int:
    rng = random.Random(seed)
    size = queries = 0
    with open(path, "w") as f:
        while True:  # whole queries, up to the size (the upload limit is in MiB too)
            if new_ids:  # every line a document id no other line has
                docs = rng.sample(range(queries * 1000, queries * 1000 + 1000), 1000)
            else:
                docs = rng.sample(range(200_000), 1000)
            lines = "".join(
                f"q{queries:05d} Q0 doc{d:06d} {rank + 1} {1000 - rank * 0.5:.3f} bench\n"
                for rank, d in enumerate(docs)
            )
            if size + len(lines) > megabytes * 1024 * 1024:
                break
            f.write(lines)
            size += len(lines)
            queries += 1
    return queries


class Command(BaseCommand):
    help = "Peak memory of the web worker through a large run upload, its preview and its confirm."

    def add_arguments(self, parser):
        parser.add_argument("--mb", type=int, default=200, help="size of the run file in MiB")
        parser.add_argument("--seed", type=int, default=20261125)
        parser.add_argument(
            "--new-ids", action="store_true", help="every document id distinct (and new to the pool)"
        )
        parser.add_argument(
            "--child-mb",
            type=int,
            help="the server's UPLOAD_CHILD_MB (default: its own); a large value "
            "imports in the web worker itself, for reference",
        )

    def handle(self, *args, mb, seed, child_mb, new_ids, **options):
        if mb < 1:
            raise CommandError("--mb must be positive")
        logging.getLogger("httpx").setLevel(logging.WARNING)
        name = f"bench-upload-{time.strftime('%Y%m%d-%H%M%S')}"
        workdir = Path(tempfile.mkdtemp(prefix="bench-upload-"))
        pool = user = None
        try:
            access.ensure_role_groups()
            user = get_user_model().objects.create_user(f"{name}-admin", is_staff=True)
            user.groups.add(Group.objects.get(name=access.ADMIN))
            pool = Pool.objects.create(name=name, description="bench_upload: throw-away")
            pool.members.add(user)
            team, _ = Team.objects.get_or_create(name="bench-upload")
            configuration = SearchConfiguration.objects.create(pool=pool, team=team, name="big")
            path = workdir / "big.run"
            queries = _write_run(path, mb, seed, new_ids)
            self.stderr.write(f"wrote {path.stat().st_size / 2**20:.0f} MiB, {queries} queries")
            extra = {} if child_mb is None else {"UPLOAD_CHILD_MB": str(child_mb)}
            self._measure(pool, configuration, user, path, queries, workdir, extra)
        finally:
            if pool is not None:
                delete_pool_in_bulk(pool)
            if user is not None:
                user.delete()
            Team.objects.filter(name="bench-upload", configurations__isnull=True).delete()
            shutil.rmtree(workdir, ignore_errors=True)

    def _measure(self, pool, configuration, user, path: Path, queries: int, workdir: Path, extra) -> None:
        log = open(workdir / "gunicorn.log", "w+")
        env = production.server_env(workdir / "static", **extra)
        server, base = production.start_gunicorn(env, log, workers=1, timeout=1800)
        peaks = {"worker": 0, "child": 0}
        stop = threading.Event()
        try:
            (worker,) = _children(server.pid)
            django_client = Client()
            django_client.force_login(user)
            client = raters.with_session(base, django_client.cookies["sessionid"].value, timeout=1800)
            import_url = f"/pools/{pool.name}/import/"
            if client.get(import_url).status_code != 200:
                raise CommandError("the import page did not answer 200")
            baseline = _status(worker, "VmRSS")

            def sample():
                while not stop.wait(0.02):
                    peaks["worker"] = max(peaks["worker"], _status(worker, "VmRSS"))
                    for child in _children(worker):
                        peaks["child"] = max(peaks["child"], _status(child, "VmRSS"))

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            times = {}
            tick = time.perf_counter()
            with open(path, "rb") as f:
                answer = client.post(
                    import_url,
                    data={
                        "kind": "run",
                        "configuration": str(configuration.pk),
                        "order": "score",
                        "csrfmiddlewaretoken": client.cookies["csrftoken"],
                    },
                    files={"file": ("big.run", f, "text/plain")},
                )
            times["upload + check"] = time.perf_counter() - tick
            if answer.status_code != 302:
                errors = re.findall(r'class="errorlist[^>]*>(.*?)</ul>', answer.text, re.S)
                raise CommandError(
                    f"the upload answered {answer.status_code}: {errors or answer.text[:2000]}"
                )
            preview_url = answer.headers["location"]
            tick = time.perf_counter()
            preview = client.get(preview_url)
            times["preview"] = time.perf_counter() - tick
            if preview.status_code != 200 or "Confirm import" not in preview.text:
                raise CommandError(f"the preview answered {preview.status_code}")
            tick = time.perf_counter()
            confirmed = client.post(preview_url, data={"csrfmiddlewaretoken": client.cookies["csrftoken"]})
            times["confirm"] = time.perf_counter() - tick
            if confirmed.status_code != 302:
                raise CommandError(f"the confirm answered {confirmed.status_code}")
            stop.set()
            sampler.join()
            high_water = _status(worker, "VmHWM")
        finally:
            stop.set()
            production.stop(server)
            log.close()
        run = Run.objects.filter(configuration=configuration).first()
        stored = run.rankings.count() if run else 0
        self.stdout.write(
            f"Upload of a {path.stat().st_size / 2**20:.0f} MiB run ({queries} queries x 1,000 documents), "
            f"gunicorn 1 worker, UPLOAD_CHILD_MB {env.get('UPLOAD_CHILD_MB', 'default')}, load average {'/'.join(f'{x:.2f}' for x in os.getloadavg())}"
        )
        self.stdout.write("  " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()))
        self.stdout.write(
            f"  web worker RSS: before {baseline} MiB, peak {max(high_water, peaks['worker'])} MiB "
            f"(VmHWM {high_water}); its import child's peak {peaks['child']} MiB"
        )
        self.stdout.write(
            f"  stored: a run with {stored} ranked queries (expected {queries}); uploads left "
            f"{Upload.objects.filter(pool=pool).count()}"
        )
        verdict = "met" if max(high_water, peaks["worker"]) < TARGET_MB else "NOT met"
        self.stdout.write(f"  target: web worker peak < {TARGET_MB} MB: {verdict}")
        if peaks["child"]:
            verdict = "met" if peaks["child"] < CHILD_TARGET_MB else "NOT met"
            self.stdout.write(f"  target: import child peak < {CHILD_TARGET_MB} MiB (1.5 GiB): {verdict}")
