"""Load the demo: four users, one pool, two configurations with a run each, a third one with a live
endpoint (the demo BM25 engine that `make run` starts), and some judgments.

Idempotent: a second call changes nothing (the pool is only filled when it is first created).
"""

import random

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from judgments import access, demo_data, pool_keys, services
from judgments.capture import demo
from judgments.models import Document, Pair, Pool, Query, Run, SearchConfiguration, Team
from judgments.rating import queue

POOL = "demo"
TEAM = "search-relevance"
USERS = [
    ("admin", access.ADMIN, True),
    ("engineer", access.ENGINEER, False),
    ("rater", access.RATER, False),
    ("rater2", access.RATER, False),
]


class Command(BaseCommand):
    help = "Create the demo users (password 'demo', DEBUG only), pool, configurations, runs and judgments."

    def handle(self, *args, **options):
        if not settings.DEBUG:
            raise CommandError("seed_demo creates users with the password 'demo'; it only runs with DEBUG=1.")
        access.ensure_role_groups()
        users = self._users()
        existing = Pool.objects.filter(name=POOL).first()
        if existing is not None:
            # Demos loaded before live capture get its configuration; nothing else changes.
            team = Team.objects.filter(name=TEAM).first()
            if team is not None and not existing.configurations.filter(name=demo.LIVE_CONFIGURATION).exists():
                demo.ensure_live_configuration(existing, team, users["engineer"])
                self.stdout.write(f"Added the live configuration {demo.LIVE_CONFIGURATION} to the demo.")
            else:
                self.stdout.write(f"Demo pool {POOL!r} exists already; nothing to do.")
            return
        with transaction.atomic():
            self._pool(users)
        self.stdout.write(
            self.style.SUCCESS(
                "Demo data loaded: log in as admin, engineer, rater or rater2 (password: demo)."
            )
        )

    def _users(self) -> dict:
        User = get_user_model()
        users = {}
        for username, role, superuser in USERS:
            user, created = User.objects.get_or_create(
                username=username, defaults={"email": f"{username}@example.org"}
            )
            if created:
                user.set_password("demo")
                user.is_staff = superuser
                user.is_superuser = superuser
                user.save()
            user.groups.add(Group.objects.get(name=role))
            users[username] = user
        return users

    def _pool(self, users) -> None:
        queries, documents, truth = demo_data.build()
        pool = Pool.objects.create(
            name=POOL,
            description="Twenty everyday web searches and two hundred candidate pages, for trying the app.",
            guidelines=(
                "## How to grade\n\nRead the **information need**, not just the query words. Grade how well the "
                "document satisfies that need, as the person searching would judge it.\n\n"
                "- Grade the document, not the site.\n- A page that is only *about* the topic without helping "
                "scores 1 at most.\n- If the page cannot be judged (broken, foreign language), press **c** and say why."
            ),
        )
        pool.members.add(*users.values())
        Query.objects.bulk_create(  # tagged, so that the score pages show their segments (head: the first 5)
            [
                Query(
                    pool=pool, external_id=q, text=t, information_need=n, tags=["head" if i < 5 else "tail"]
                )
                for i, (q, t, n) in enumerate(queries)
            ]
        )
        Document.objects.bulk_create(
            [Document(pool=pool, external_id=d, title=t, body=b, url=u) for d, t, b, u in documents]
        )
        search = Team.objects.create(name=TEAM)
        search.members.add(users["engineer"], users["admin"])
        configs = [
            ("bm25-baseline", "BM25 over title and body, k1=1.2, b=0.75.", {"k1": 1.2, "b": 0.75}, 0.3, 1),
            (
                "hybrid-rerank",
                "BM25 candidates reranked by a cross-encoder.",
                {"candidates": 100, "model": "ce-mini"},
                0.5,
                2,
            ),
        ]
        for name, description, params, quality, seed in configs:
            config = SearchConfiguration.objects.create(
                pool=pool, team=search, name=name, description=description, parameters=params
            )
            rankings = demo_data.demo_run(queries, documents, truth, quality=quality, seed=seed)
            services.record_run(
                config, rankings, source=Run.Source.DEMO, submitted_by=users["engineer"], tag=name
            )
        # A configuration asked live: its endpoint is the demo BM25 engine that `make run` starts.
        demo.ensure_live_configuration(pool, search, users["engineer"])
        # Some judgments: the raters graded the first 12 queries' own documents, with a little disagreement.
        rng = random.Random(7)
        query_pks = dict(Query.objects.filter(pool=pool).values_list("external_id", "pk"))
        doc_pks = dict(Document.objects.filter(pool=pool).values_list("external_id", "pk"))
        graded = [(q, d, rel) for (q, d), rel in sorted(truth.items()) if int(q[1:]) <= 12]
        pair_pks = pool_keys.ensure_pairs(pool, [(query_pks[q], doc_pks[d]) for q, d, _ in graded])
        pairs = Pair.objects.in_bulk(pair_pks.values())
        for q, d, rel in graded:
            pair = pairs[pair_pks[(query_pks[q], doc_pks[d])]]
            services.record_judgment(pair, users["rater"], grade=rel)
            if rng.random() < 0.4:
                other = min(4, max(0, rel + rng.choice([-1, 0, 0, 1])))
                services.record_judgment(pair, users["rater2"], grade=other)
        # The raters' queue: depth-10 pooling over both configurations' runs.
        queue.build_queue(pool, k=10)
