"""`tests/bench/run.py bench_adaptive`: does the adaptive queue judge less, and is "settled" honest?

Replays synthetic collections whose every grade is known through the REST API, in this process (DRF's
test client, the real database): a scripted rater who answers the truth takes pairs with
`GET /api/pools/<name>/next/` and grades them with `POST /api/judgments/` until the queue answers 204,
under both strategies (`build_queue` depth and adaptive, depth --depth), over --seeds seeds.

A collection (per seed): --queries queries of --docs documents each with true grades 0-4 (80 % 0, then
8/6/4/2 %); --configurations configurations of different quality rank every query's documents by
quality x grade + a document effect they share + noise (so they overlap, as real runs do), top --depth.
The truth's ordering: mean nDCG@10 (exp gain, as the leaderboard's default flavour) with every grade.

After every grade the bench computes the leaderboard's nDCG@10 from the grades given so far (unjudged
documents count 0, the ideal ranking from the judged ones: the stored scores' definition) and its Kendall
tau against the truth's ordering, the share of the pool's relevant documents (grade >= 1) found, and
reads whether the server says "settled" (scoring.stability, measured after every grade for these small
pools). Reported per strategy, mean over seeds (and the worst seed):
- grades until the true tau reaches 0.9 and stays there;
- grades until 90 % of the pool's relevant documents are found;
- the grade at which "settled" first fired, the share of the depth-k pool it saves, and the true tau then;
- the lowest true tau at any moment "settled" was on (target: never below 0.8).
With --svg PATH, writes the curve (mean true tau and relevant found against grades) as a small SVG.
"""

from __future__ import annotations

import json
import json as jsonlib
import time
from dataclasses import dataclass, field

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from judgments import access, services
from judgments.models import Document, Pool, Query, SearchConfiguration, Team
from judgments.rating import queue
from scoring import settling

GRADE_P = (0.80, 0.08, 0.06, 0.04, 0.02)
STRATEGIES = ("depth", "adaptive")


@dataclass
class Collection:
    grades: np.ndarray  # (queries, docs) true grades
    rankings: np.ndarray  # (configurations, queries, depth) doc indices

    def ndcg10(self, known: np.ndarray) -> np.ndarray:
        """(configurations,) mean nDCG@10 with the grades where `known` (queries, docs) is True."""
        g = np.where(known, self.grades, 0).astype(float)
        gains = 2.0**g - 1.0
        top = self.rankings[:, :, :10]
        disc = 1.0 / np.log2(np.arange(2, 12))
        q = np.arange(self.grades.shape[0])[None, :, None]
        dcg = (gains[q, top] * disc[: top.shape[2]]).sum(axis=2)
        ideal = (-np.sort(-gains, axis=1)[:, :10] * disc).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            ndcg = np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1), 0.0)
        return ndcg.mean(axis=1)


def make_collection(seed: int, n_queries: int, n_docs: int, n_configurations: int, depth: int) -> Collection:
    rng = np.random.default_rng(seed)
    grades = rng.choice(5, size=(n_queries, n_docs), p=GRADE_P)
    quality = rng.permutation(np.linspace(0.25, 1.1, n_configurations))
    shared = rng.normal(size=(n_queries, n_docs))
    scores = (
        quality[:, None, None] * grades[None]
        + 0.8 * shared[None]
        + rng.normal(scale=0.9, size=(n_configurations, n_queries, n_docs))
    )
    rankings = np.argsort(-scores, axis=2)[:, :, :depth]
    return Collection(grades=grades, rankings=rankings)


@dataclass
class Replay:
    strategy: str
    seed: int
    pool_pairs: int
    relevant: int
    taus: list[float] = field(default_factory=list)
    found: list[float] = field(default_factory=list)
    settled: list[bool] = field(default_factory=list)
    seconds: float = 0.0

    def grades_until_tau_stays(self, level: float = 0.9) -> int:
        below = [i for i, t in enumerate(self.taus) if t < level]
        return below[-1] + 2 if below else 1

    def grades_to_find(self, share: float = 0.9) -> int:
        return next(i + 1 for i, f in enumerate(self.found) if f >= share - 1e-12)

    def first_settled(self) -> int | None:
        return next((i + 1 for i, s in enumerate(self.settled) if s), None)

    def worst_tau_while_settled(self) -> float | None:
        taus = [t for t, s in zip(self.taus, self.settled, strict=True) if s]
        return min(taus) if taus else None


def _user(name: str, role: str):
    user, _ = get_user_model().objects.get_or_create(username=name)
    user.groups.add(Group.objects.get(name=role))
    return user


def replay(collection: Collection, strategy: str, seed: int, depth: int, tag: str) -> Replay:
    access.ensure_role_groups()
    n_configurations, n_queries, _ = collection.rankings.shape
    pool = Pool.objects.create(name=f"bench-adaptive-{strategy}-{seed}-{tag}", raters_per_pair=1)
    rater = _user(f"bench-adaptive-rater-{tag}", "rater")
    pool.members.add(rater)
    team, _ = Team.objects.get_or_create(name=f"bench-adaptive-{tag}")
    n_docs = collection.grades.shape[1]
    Query.objects.bulk_create(
        Query(pool=pool, external_id=f"q{q}", text=f"query {q}") for q in range(n_queries)
    )
    Document.objects.bulk_create(
        Document(pool=pool, external_id=f"q{q}-d{d}", title=f"doc {d}", body="text")
        for q in range(n_queries)
        for d in range(n_docs)
    )
    for c in range(n_configurations):
        configuration = SearchConfiguration.objects.create(pool=pool, team=team, name=f"c{c}")
        services.record_run(
            configuration,
            {f"q{q}": [f"q{q}-d{d}" for d in collection.rankings[c, q]] for q in range(n_queries)},
            source="api",
        )
    result = queue.build_queue(pool, depth, strategy)
    pooled = np.zeros(collection.grades.shape, bool)
    for q in range(n_queries):
        pooled[q, np.unique(collection.rankings[:, q, :depth])] = True
    relevant = int(((collection.grades >= 1) & pooled).sum())
    truth = collection.ndcg10(np.ones_like(pooled))
    out = Replay(strategy, seed, result.queued, relevant)
    client = APIClient(HTTP_HOST="localhost")
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=rater)[0].key}")
    known = np.zeros_like(pooled)
    found = 0
    started = time.perf_counter()
    while True:
        response = client.get(f"/api/pools/{pool.name}/next/")
        if response.status_code == 204:
            break
        assert response.status_code == 200, response.content[:300]
        pair = response.json()
        q, d = (int(x[1:]) for x in pair["doc_id"].split("-"))
        grade = int(collection.grades[q, d])
        posted = client.post(
            "/api/judgments/",
            {"pool": pool.name, "query_id": pair["query_id"], "doc_id": pair["doc_id"], "grade": grade},
            format="json",
        )
        assert posted.status_code == 201, posted.content[:300]
        known[q, d] = True
        found += grade >= 1
        out.taus.append(settling.kendall_tau(collection.ndcg10(known), truth))
        out.found.append(found / relevant if relevant else 1.0)
        out.settled.append(Pool.objects.filter(pk=pool.pk, settled_at__isnull=False).exists())
    out.seconds = time.perf_counter() - started
    services.delete_pool_in_bulk(pool)
    return out


def _svg(replays: list[Replay], path: str) -> None:
    """Mean true tau (solid) and relevant found (dashed) against the share of the pool graded."""
    width, height, pad = 560, 300, 40
    colours = {"depth": "#7a7a7a", "adaptive": "#1f6feb"}
    lines = []
    for strategy in STRATEGIES:
        runs = [r for r in replays if r.strategy == strategy]
        steps = 100
        for attr, dash in (("taus", ""), ("found", ' stroke-dasharray="5 4"')):
            curve = np.mean(
                [np.interp(np.linspace(0, 1, steps), np.arange(1, len(r.taus) + 1) / len(r.taus), getattr(r, attr))
                 for r in runs],
                axis=0,
            )  # fmt: skip
            points = " ".join(
                f"{pad + i / (steps - 1) * (width - 2 * pad):.1f},{height - pad - max(v, 0) * (height - 2 * pad):.1f}"
                for i, v in enumerate(curve)
            )
            lines.append(
                f'<polyline fill="none" stroke="{colours[strategy]}" stroke-width="2"{dash} points="{points}"/>'
            )
    y9 = height - pad - 0.9 * (height - 2 * pad)
    svg = f"""<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="white"/>
<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="black"/>
<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="black"/>
<line x1="{pad}" y1="{y9:.1f}" x2="{width - pad}" y2="{y9:.1f}" stroke="#c00" stroke-dasharray="2 3"/>
<text x="{width - pad - 60}" y="{y9 - 4:.1f}" fill="#c00">tau 0.9</text>
<text x="{pad - 8}" y="{pad + 4}" text-anchor="end">1</text><text x="{pad - 8}" y="{height - pad + 4}" text-anchor="end">0</text>
<text x="{width / 2}" y="{height - 10}" text-anchor="middle">share of the depth-k pool graded</text>
<text x="{pad}" y="{pad - 12}">solid: true Kendall tau vs the full-grade ordering; dashed: relevant found</text>
<text x="{width - pad - 150}" y="{height - pad - 40}" fill="{colours["adaptive"]}">adaptive</text>
<text x="{width - pad - 150}" y="{height - pad - 25}" fill="{colours["depth"]}">depth</text>
{chr(10).join(lines)}
</svg>
"""
    with open(path, "w") as out:
        out.write(svg)


class Command(BaseCommand):
    help = "Replay collections with known grades through the API under both queue strategies."

    def add_arguments(self, parser):
        parser.add_argument("--seeds", type=int, default=5)
        parser.add_argument("--queries", type=int, default=12)
        parser.add_argument("--docs", type=int, default=60)
        parser.add_argument("--configurations", type=int, default=6)
        parser.add_argument("--depth", type=int, default=20)
        parser.add_argument(
            "--first-seed", type=int, default=0, help="seeds first-seed .. first-seed+seeds-1"
        )
        parser.add_argument("--svg", help="write the curve here")
        parser.add_argument("--json", help="write every replay's figures here")
        parser.add_argument("--dump", help="write every replay's curves here (for --combine)")
        parser.add_argument(
            "--combine", nargs="+", help="summarise the --dump files of parallel runs instead"
        )

    def handle(self, *args, seeds, queries, docs, configurations, depth, svg, json, **options):
        if options["combine"]:
            replays = [Replay(**row) for path in options["combine"] for row in _load(path)]
            self._summary(replays)
            if svg:
                _svg(replays, svg)
            return
        tag = f"{int(time.time())}-{options['first_seed']}"
        replays = []
        for seed in range(options["first_seed"], options["first_seed"] + seeds):
            collection = make_collection(seed, queries, docs, configurations, depth)
            for strategy in STRATEGIES:
                r = replay(collection, strategy, seed, depth, tag)
                replays.append(r)
                self.stdout.write(
                    f"seed {seed} {strategy:>8}: pool {r.pool_pairs} pairs, {r.relevant} relevant; tau>=0.9 stays "
                    f"from {r.grades_until_tau_stays()}, 90% relevant at {r.grades_to_find()}, settled at "
                    f"{r.first_settled()} (true tau then "
                    f"{r.taus[r.first_settled() - 1] if r.first_settled() else float('nan'):.3f}, worst while "
                    f"settled {r.worst_tau_while_settled()}), {r.seconds:.0f} s"
                )
        self._summary(replays)
        if svg:
            _svg(replays, svg)
        if json:
            with open(json, "w") as out:
                out.write(_dump(replays))
        if options["dump"]:
            with open(options["dump"], "w") as out:
                out.write(jsonlib.dumps([r.__dict__ for r in replays]))

    def _summary(self, replays: list[Replay]) -> None:
        self.stdout.write(
            "\nstrategy  pool  tau>=0.9-stays  90%-relevant  settled-at  saved  tau-at-settled  worst-tau-settled"
        )
        for strategy in STRATEGIES:
            runs = [r for r in replays if r.strategy == strategy]
            pool = np.mean([r.pool_pairs for r in runs])
            stays = np.mean([r.grades_until_tau_stays() for r in runs])
            find = np.mean([r.grades_to_find() for r in runs])
            settled = [r.first_settled() or r.pool_pairs for r in runs]
            saved = np.mean([1 - s / r.pool_pairs for s, r in zip(settled, runs, strict=True)])
            at = [r.taus[s - 1] for s, r in zip(settled, runs, strict=True)]
            worst = [w for r in runs if (w := r.worst_tau_while_settled()) is not None]
            never = sum(r.first_settled() is None for r in runs)
            self.stdout.write(
                f"{strategy:>8}  {pool:.0f}  {stays:.0f}  {find:.0f}  {np.mean(settled):.0f}"
                f"{f' ({never} never)' if never else ''}  {saved:.1%}  {np.mean(at):.3f} (min {min(at):.3f})  "
                f"{min(worst) if worst else float('nan'):.3f}"
            )


def _load(path: str) -> list[dict]:
    with open(path) as source:
        return jsonlib.load(source)


def _dump(replays: list[Replay]) -> str:
    return json.dumps(
        [
            {
                "strategy": r.strategy,
                "seed": r.seed,
                "pool_pairs": r.pool_pairs,
                "relevant": r.relevant,
                "tau_stays_from": r.grades_until_tau_stays(),
                "found_90": r.grades_to_find(),
                "first_settled": r.first_settled(),
                "worst_tau_while_settled": r.worst_tau_while_settled(),
                "seconds": round(r.seconds, 1),
            }
            for r in replays
        ]
    )
