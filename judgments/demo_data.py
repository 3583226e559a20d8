"""Demo content: 20 queries with information needs and 200 documents that read like a real web collection.

Each topic has a few angles; documents are written from an angle with a hidden "true" relevance, which
the demo runs and demo judgments use so the demo scores mean something. Deterministic (seeded).
"""

import random

TOPICS = [
    (
        "cold brew coffee ratio",
        "The searcher wants the coffee-to-water ratio and steeping time for making cold brew at home.",
        "cold brew",
        [
            "ratio of coffee to water",
            "steeping for 12 to 18 hours",
            "coarse grind",
            "diluting the concentrate",
        ],
    ),
    (
        "python list comprehension",
        "The searcher wants to learn the syntax of list comprehensions in Python, with examples.",
        "list comprehensions",
        [
            "the [expr for x in items] syntax",
            "filtering with an if clause",
            "nested comprehensions",
            "when a loop reads better",
        ],
    ),
    (
        "marathon training plan beginner",
        "A first-time marathon runner wants a week-by-week training plan.",
        "marathon training",
        ["a 16-week schedule", "the weekly long run", "easy pace and recovery", "tapering before race day"],
    ),
    (
        "how to repot a monstera",
        "The searcher wants step-by-step instructions for moving a monstera plant to a bigger pot.",
        "repotting a monstera",
        [
            "choosing a pot one size up",
            "an airy aroid soil mix",
            "handling aerial roots",
            "watering after repotting",
        ],
    ),
    (
        "sourdough starter not rising",
        "The searcher's sourdough starter does not rise and they want to know why and how to fix it.",
        "a sluggish sourdough starter",
        ["feeding ratios", "temperature of the kitchen", "flour type", "chlorinated water"],
    ),
    (
        "best budget mechanical keyboard",
        "The searcher wants recommendations for an inexpensive mechanical keyboard.",
        "budget mechanical keyboards",
        ["switch types", "hot-swappable boards under $60", "build quality", "keycap material"],
    ),
    (
        "symptoms of vitamin d deficiency",
        "The searcher wants to know the signs and symptoms of low vitamin D.",
        "vitamin D deficiency",
        [
            "fatigue and bone pain",
            "muscle weakness",
            "who is at risk",
            "blood tests for 25-hydroxy vitamin D",
        ],
    ),
    (
        "postgres vacuum explained",
        "The searcher wants to understand what VACUUM does in PostgreSQL and when it runs.",
        "PostgreSQL VACUUM",
        ["dead tuples and MVCC", "autovacuum thresholds", "VACUUM FULL locks", "transaction id wraparound"],
    ),
    (
        "cheap flights to lisbon",
        "The searcher wants tips for finding low-cost flights to Lisbon.",
        "cheap flights to Lisbon",
        ["booking windows", "budget airlines", "flexible dates", "airport transfers"],
    ),
    (
        "kids science experiments at home",
        "A parent wants simple, safe science experiments to do with children at home.",
        "home science experiments",
        ["baking soda volcanoes", "growing crystals", "density towers", "safety with young kids"],
    ),
    (
        "how does a heat pump work",
        "The searcher wants a plain explanation of how a heat pump heats and cools a house.",
        "heat pumps",
        [
            "the refrigerant cycle",
            "coefficient of performance",
            "cold-climate models",
            "running costs versus a furnace",
        ],
    ),
    (
        "learn spanish fast",
        "The searcher wants effective methods to learn Spanish quickly as an adult.",
        "learning Spanish quickly",
        ["spaced repetition", "speaking from day one", "comprehensible input", "daily practice routines"],
    ),
    (
        "fix leaking kitchen faucet",
        "The searcher wants to repair a dripping kitchen faucet themselves.",
        "a leaking kitchen faucet",
        ["cartridge and washer faucets", "shutting off the water", "replacing O-rings", "tools you need"],
    ),
    (
        "rust ownership and borrowing",
        "The searcher wants an explanation of Rust's ownership and borrowing rules.",
        "ownership in Rust",
        ["moves and copies", "shared and mutable borrows", "lifetimes", "the borrow checker's errors"],
    ),
    (
        "best time to visit japan",
        "The searcher wants to know which season is best for a trip to Japan.",
        "visiting Japan by season",
        ["cherry blossom season", "autumn leaves", "summer heat and festivals", "winter in Hokkaido"],
    ),
    (
        "how to negotiate salary",
        "The searcher wants tactics for negotiating a higher salary in a job offer.",
        "salary negotiation",
        [
            "researching market rates",
            "anchoring the first number",
            "negotiating beyond base pay",
            "handling a counteroffer",
        ],
    ),
    (
        "electric car battery lifespan",
        "The searcher wants to know how long EV batteries last and what affects it.",
        "EV battery lifespan",
        ["capacity loss per year", "fast charging and heat", "warranty terms", "replacement costs"],
    ),
    (
        "gluten free bread recipe",
        "The searcher wants a reliable recipe for gluten-free bread.",
        "gluten-free bread",
        ["psyllium husk as a binder", "flour blends", "proofing times", "baking temperature"],
    ),
    (
        "meditation for anxiety",
        "The searcher wants meditation techniques that help with anxiety.",
        "meditation for anxiety",
        ["breathing exercises", "body scans", "mindfulness apps", "what research shows"],
    ),
    (
        "kubernetes pod crashloopbackoff",
        "An engineer's Kubernetes pod is in CrashLoopBackOff and they want to debug it.",
        "CrashLoopBackOff",
        [
            "reading container logs",
            "liveness probes",
            "resource limits and OOMKilled",
            "bad configuration and secrets",
        ],
    ),
]

# (title template, body template, true relevance of a document written this way)
ANGLES = [
    (
        "The complete guide to {topic}",
        "This guide covers {a0}, {a1} and {a2}. We walk through {a3} with worked examples, so you can act on it today.",
        4,
    ),
    (
        "{Topic}: a step-by-step walkthrough",
        "Start with {a0}. Then look at {a1}. Most people get {a2} wrong; we show why and how to fix it.",
        3,
    ),
    ("{Topic} explained in five minutes", "A short primer on {topic}: {a0} and {a1}, without the jargon.", 3),
    (
        "Common mistakes with {topic}",
        "Readers often ask about {a2}. Here are the mistakes we see most, and what to do about {a3}.",
        2,
    ),
    (
        "Ask the experts: {topic}",
        "Our panel answers reader questions, from {a1} to {a3}. Some answers disagree, which is the point.",
        2,
    ),
    (
        "My year of {topic}",
        "A personal story. I learned about {a0} the hard way; this post is more diary than how-to.",
        1,
    ),
    (
        "A history of {topic}",
        "How {topic} came to be what it is. Interesting background, though not much about {a1} in practice.",
        1,
    ),
    (
        "{Topic}: forum thread (12 replies)",
        "User question about {a3}. Replies range from helpful to off-topic; one reply mentions {a0}.",
        1,
    ),
    (
        "Top 10 products for {topic} (sponsored)",
        "Affiliate links to products loosely related to {topic}. Little real information.",
        0,
    ),
    ("Newsletter: this week's links", "A grab-bag of links. One of them mentions {topic} in passing.", 0),
]


def build(seed: int = 42):
    """Returns (queries, documents, truth): queries [(qid, text, need)], documents [(docid, title, body, url)],
    truth {(qid, docid): relevance 0-4}."""
    rng = random.Random(seed)
    queries, documents, truth = [], [], {}
    for t, (text, need, topic, aspects) in enumerate(TOPICS, start=1):
        qid = f"q{t:02d}"
        queries.append((qid, text, need))
        for a, (title_t, body_t, relevance) in enumerate(ANGLES, start=1):
            shuffled = aspects[:]
            rng.shuffle(shuffled)
            values = {"topic": topic, "Topic": topic[0].upper() + topic[1:]}
            values.update({f"a{i}": s for i, s in enumerate(shuffled)})
            docid = f"d{t:02d}-{a:02d}"
            slug = topic.lower().replace(" ", "-").replace("'", "")
            documents.append(
                (docid, title_t.format(**values), body_t.format(**values), f"https://example.org/{slug}/{a}")
            )
            truth[(qid, docid)] = relevance
    return queries, documents, truth


def demo_run(queries, documents, truth, *, quality: float, seed: int, depth: int = 20):
    """A plausible run: each query's own documents ranked by noisy true relevance, plus some other
    topics' documents mixed in. Higher `quality` means less noise."""
    rng = random.Random(seed)
    by_query: dict[str, list[str]] = {}
    all_docs = [d[0] for d in documents]
    for qid, _, _ in queries:
        own = [d for (q, d) in truth if q == qid]
        noise = [d for d in rng.sample(all_docs, 30) if not d.startswith("d" + qid[1:])][: depth - len(own)]
        scored = [(truth[(qid, d)] * quality + rng.random() * 4 * (1 - quality), d) for d in own]
        scored += [(rng.random() * 3 * (1 - quality), d) for d in noise]
        scored.sort(reverse=True)
        by_query[qid] = [d for _, d in scored[:depth]]
    return by_query
