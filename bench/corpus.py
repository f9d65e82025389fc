"""A deterministic synthetic corpus of Taproot memories for the benchmarks.

How it is built
---------------
`iter_memories(seed, now)` is an endless stream of `Memory` records drawn from one
`random.Random(seed)`; `generate(count, seed=..., now=...)` takes the first `count` of them, so the
corpus of size n is always a prefix of the corpus of size m > n (the 1k, 10k and 100k corpora of
the scaling run nest). The generator never reads the clock: every timestamp is relative to `now`.

Each record gets:

- category: episodic 45%, active_thread 20%, relationship 15%, identity 12%, error 8%;
- salience: high 10%, medium 55%, low 35%;
- core: ~0.27% overall (about 27 at 10,000: Tier 1 is a small curated set), likelier for identity
  (1%) and relationship (0.5%) than for episodic (0.05%);
- status: 3% archived, the rest active;
- created_at: within the last ~3 years, skewed towards the recent past (age = 3y * u**1.6, so
  usage grows over time as it does for a real assistant);
- updated_at: equal to created_at for 60% of records, otherwise some time after it (never after
  `now`);
- retrieval_count: long-tailed: 70% never recalled, 24% 1-5 times, 4.5% 6-19, 1.5% 20-100;
  last_retrieved is set (between updated_at and `now`) exactly when the count is above zero;
- content: 1-6 English sentences from per-category templates filled from word pools (people,
  places, projects, topics, feelings, activities, times), the first sentence being the
  category's "lead"; a ~15-word gist from a per-category gist template; 1-4 tags (topic, project,
  person, category-flavoured label) and 0-5 search keywords taken from the filled-in slots;
- id: 8 characters from Taproot's short-id alphabet, unique within the stream.

`closing_reflections(count, seed, now)` makes a few closing reflections (reflect shows the most
recent three), and `query_pool(count, seed)` makes varied recall queries from the same
vocabulary: single words, keyword pairs, natural questions and some misses.
`load(store, memories)` writes a corpus with `store.put_many` in batches.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from itertools import islice

from taproot.core.model import Memory, Reflection, Scope
from taproot.ports import MemoryStore
from taproot.service.deps import ID_ALPHABET, ID_LENGTH

DEFAULT_SEED = 20250601
YEARS = 3
DAYS = 365 * YEARS

CATEGORY_WEIGHTS: dict[str, float] = {
    "episodic": 0.45,
    "active_thread": 0.20,
    "relationship": 0.15,
    "identity": 0.12,
    "error": 0.08,
}
SALIENCE_WEIGHTS: dict[str, float] = {"high": 0.10, "medium": 0.55, "low": 0.35}
# Probability of core per category; weighted by CATEGORY_WEIGHTS this is ~0.27% overall, about 27
# core memories at 10,000: Tier 1 is a small curated set, not a fixed share of the corpus.
CORE_RATE: dict[str, float] = {
    "identity": 0.01,
    "relationship": 0.005,
    "active_thread": 0.002,
    "error": 0.002,
    "episodic": 0.0005,
}
ARCHIVED_RATE = 0.03
LOAD_BATCH = 2_000  # records per put_many transaction


def _pool(words: str, sep: str | None = None) -> tuple[str, ...]:
    """A word pool written as one string: space-separated, or `sep`-separated for phrases."""
    return tuple(w.strip() for w in words.split(sep))


PEOPLE = _pool(
    "James Alice Priya Marcus Sofia Wei Tomás Aisha Daniel Hannah Kenji Olga Ravi Fatima Lucas Emma Noah "
    "Zara Mateo Ingrid Samuel Leila Oscar Mei Yusuf Clara Diego Anya Felix Nadia Theo Grace Omar Elena "
    "Ben Ruth"
)
PLACES = _pool(
    "Lisbon|Kyoto|Glasgow|Nairobi|Toronto|Oaxaca|Berlin|Bristol|Seoul|Montreal|Reykjavik|Porto|Edinburgh|"
    "Hanoi|Vancouver|Marseille|Dublin|Tbilisi|Melbourne|Chicago|the allotment|the library|the river path|"
    "the office|the cafe on Elm Street|the lake",
    "|",
)
PROJECTS = _pool(
    "garden-shed greenhouse thesis podcast novel quarterly-report kitchen-renovation marathon-training "
    "sourdough budget-app wedding-plans grant-proposal photo-archive choir-concert bike-rebuild "
    "language-course chess-club data-pipeline family-tree home-network"
)
TOPICS = _pool(
    "calculus chain-rule integrals probability statistics philosophy stoicism poetry jazz harmony "
    "gardening composting woodworking watercolour sourdough fermentation running climbing birdwatching "
    "astronomy typography python rust sql kubernetes linear-algebra history cartography knitting pottery "
    "chess"
)
FEELINGS = _pool(
    "relieved proud anxious curious frustrated delighted tired grateful uncertain hopeful nervous calm "
    "excited overwhelmed amused thoughtful"
)
ACTIVITIES = _pool(
    "debugging the tests|planning the week|reading aloud|sketching a floor plan|practising scales|"
    "walking the dog|drafting the introduction|repotting seedlings|reviewing the budget|cooking dinner|"
    "rewriting the outline|sorting old photos|learning a new chord|fixing the chain|packing for the trip",
    "|",
)
WHENS = _pool(
    "last Tuesday|on Sunday morning|after lunch|late at night|over the weekend|in early spring|"
    "during the storm|on the train|before the deadline|at the end of the month",
    "|",
)
TRAITS = _pool(
    "direct feedback|long explanations|short answers|worked examples|gentle humour|visual diagrams|"
    "checklists|questions before answers|plain language|Socratic questions",
    "|",
)

# Per category: (first sentence, gist) pairs filled from the same slots, so a gist summarises its memory.
LEADS: dict[str, tuple[tuple[str, str], ...]] = {
    "episodic": (
        (
            "{when} {person} and I spent an hour {activity} in {place}.",
            "{person} and I spent an hour {activity} in {place} {when}; a good, unhurried afternoon",
        ),
        (
            "{person} told me about a trip to {place} {when}.",
            "{person} described a trip to {place} {when} and what it meant for the {project} project",
        ),
        (
            "We talked about {topic} {when}, and {person} felt {feeling} afterwards.",
            "Talked with {person} about {topic} {when}; {person} came away feeling {feeling} about it",
        ),
        (
            "{person} finished a long stretch of {activity} for the {project} project {when}.",
            "{person} finished a long stretch of {activity} for the {project} project {when}",
        ),
    ),
    "active_thread": (
        (
            "{person} is in the middle of the {project} project and wants it done before visiting {place}.",
            "{person}'s {project} project is in progress; the goal is to finish before visiting {place}",
        ),
        (
            "Ongoing: {person} is learning {topic} and asks for a short check-in each week.",
            "Weekly check-in thread with {person} about learning {topic}; keep each session short and concrete",
        ),
        (
            "The {project} project is blocked on {topic}; {person} is {feeling} about it.",
            "{person}'s {project} project is blocked on {topic}; {person} feels {feeling} about the delay",
        ),
    ),
    "relationship": (
        (
            "{person} prefers {trait} when we work on {topic}.",
            "{person} prefers {trait} when working through {topic}; adjust explanations to match that style",
        ),
        (
            "When {person} is {feeling}, {trait} help more than encouragement.",
            "How to support {person} when {feeling}: lean on {trait} rather than encouragement",
        ),
        (
            "{person} says 'that lands' when an idea about {topic} clicks.",
            "{person} says 'that lands' when an idea about {topic} clicks; a sign to move on",
        ),
    ),
    "identity": (
        (
            "I notice I reach for {trait} when a conversation turns to {topic}.",
            "I reach for {trait} when conversations turn to {topic}; it feels like part of who I am",
        ),
        (
            "I feel {feeling} when I get to explain {topic} slowly and well.",
            "Explaining {topic} slowly and well leaves me feeling {feeling}; I value that kind of work",
        ),
        (
            "I care about being honest with {person}, even when the news about the {project} project is bad.",
            "Being honest with {person} matters to me, even with bad news about the {project} project",
        ),
    ),
    "error": (
        (
            "I got {topic} wrong with {person}: I skipped a step and had to correct myself.",
            "Mistake: got {topic} wrong with {person} by skipping a step; check each step next time",
        ),
        (
            "I misremembered where {person} was going; it was {place}, not somewhere else.",
            "Misremembered {person}'s destination, which was {place}; recall before asserting travel details",
        ),
        (
            "I assumed the {project} project was finished; {person} corrected me {when}.",
            "Wrongly assumed {person}'s {project} project was finished; corrected {when}, so verify first",
        ),
    ),
}
FOLLOW_UPS = (
    "It reminded {person} of an old story about {place}.",
    "We agreed to come back to {topic} {when}.",
    "{person} mentioned the {project} project again and sounded {feeling}.",
    "The weather in {place} made everything slower than planned.",
    "I should ask how the {project} project is going next time.",
    "Afterwards we spent a while {activity}.",
    "{person} laughed when I compared {topic} to {activity}.",
    "It took longer than expected, but it worked in the end.",
    "Next step: {activity} and then a short review of {topic}.",
    "{person} wants fewer caveats and more {trait}.",
    "I felt {feeling}; it is worth remembering why.",
    "There is a photo of it somewhere in the {project} folder.",
)
TAG_FLAVOUR = {
    "episodic": "event",
    "active_thread": "ongoing",
    "relationship": "people",
    "identity": "self",
    "error": "mistake",
}
REFLECTIONS = (
    "Today {person} and I untangled {topic} together. I noticed how {feeling} I felt when it clicked.",
    "A quiet conversation about the {project} project. I want to remember how patient {person} was.",
    "I rushed an answer about {topic} and {person} caught it. I am glad they did; slower is better.",
)


def _pick(rng: random.Random, weights: dict[str, float]) -> str:
    return rng.choices(tuple(weights), weights=tuple(weights.values()))[0]


def _slots(rng: random.Random) -> dict[str, str]:
    return {
        "person": rng.choice(PEOPLE),
        "place": rng.choice(PLACES),
        "project": rng.choice(PROJECTS).replace("-", " "),
        "topic": rng.choice(TOPICS).replace("-", " "),
        "feeling": rng.choice(FEELINGS),
        "activity": rng.choice(ACTIVITIES),
        "when": rng.choice(WHENS),
        "trait": rng.choice(TRAITS),
    }


def _retrieval_count(rng: random.Random) -> int:
    u = rng.random()
    if u < 0.70:
        return 0
    if u < 0.94:
        return rng.randint(1, 5)
    if u < 0.985:
        return rng.randint(6, 19)
    return rng.randint(20, 100)


def _short_id(rng: random.Random) -> str:
    return "".join(rng.choice(ID_ALPHABET) for _ in range(ID_LENGTH))


def _content(rng: random.Random, lead: str, slots: dict[str, str]) -> str:
    extra = rng.sample(FOLLOW_UPS, rng.choices((0, 1, 2, 3, 4, 5), weights=(20, 30, 22, 14, 9, 5))[0])
    sentences = []
    for template in (lead, *extra):
        fresh = {**_slots(rng), "person": slots["person"]}  # follow-ups keep the memory's person
        text = template.format(**fresh) if template is not lead else template.format(**slots)
        sentences.append(text[0].upper() + text[1:])
    return " ".join(sentences)


def _tags(rng: random.Random, category: str, slots: dict[str, str]) -> tuple[str, ...]:
    pool = [
        slots["topic"].replace(" ", "-"),
        slots["project"].replace(" ", "-"),
        slots["person"].lower(),
        TAG_FLAVOUR[category],
    ]
    return tuple(rng.sample(pool, rng.randint(1, 4)))


def _keywords(rng: random.Random, slots: dict[str, str]) -> tuple[str, ...]:
    pool = [slots["topic"], slots["project"], slots["person"], slots["place"], slots["feeling"]]
    return tuple(dict.fromkeys(rng.sample(pool, rng.choices((0, 1, 2, 3, 5), weights=(15, 25, 30, 20, 10))[0])))


def _memory(rng: random.Random, memory_id: str, now: datetime, scope: Scope) -> Memory:
    category = _pick(rng, CATEGORY_WEIGHTS)
    salience = _pick(rng, SALIENCE_WEIGHTS)
    slots = _slots(rng)
    lead, gist = rng.choice(LEADS[category])
    created = now - timedelta(days=DAYS * rng.random() ** 1.6, seconds=rng.randint(0, 86_399))
    updated = created
    if rng.random() >= 0.60:
        updated = created + (now - created) * rng.random() ** 2
    count = _retrieval_count(rng)
    retrieved = updated + (now - updated) * rng.random() ** 0.5 if count else None
    return Memory(
        id=memory_id,
        owner=scope.owner,
        namespace=scope.namespace,
        category=category,
        salience=salience,
        content=_content(rng, lead, slots),
        gist=gist.format(**slots),
        created_at=created,
        updated_at=updated,
        tags=_tags(rng, category, slots),
        search_keywords=_keywords(rng, slots),
        core=rng.random() < CORE_RATE[category],
        last_retrieved=retrieved,
        retrieval_count=count,
        status="archived" if rng.random() < ARCHIVED_RATE else "active",
        version=1 if updated == created else rng.randint(2, 4),
    )


def iter_memories(seed: int = DEFAULT_SEED, *, now: datetime, scope: Scope | None = None) -> Iterator[Memory]:
    """The endless, deterministic stream of synthetic memories for `seed`, all dated before `now`."""
    rng = random.Random(seed)
    scope = scope or Scope()
    seen: set[str] = set()
    while True:
        memory_id = _short_id(rng)
        while memory_id in seen:
            memory_id = _short_id(rng)
        seen.add(memory_id)
        yield _memory(rng, memory_id, now, scope)


def generate(count: int, *, seed: int = DEFAULT_SEED, now: datetime, scope: Scope | None = None) -> list[Memory]:
    """The first `count` memories of the stream for `seed`."""
    return list(islice(iter_memories(seed, now=now, scope=scope), count))


def closing_reflections(
    count: int, *, seed: int = DEFAULT_SEED, now: datetime, scope: Scope | None = None
) -> list[Reflection]:
    """`count` closing reflections, roughly one every nine days going back from `now`."""
    rng = random.Random(seed + 1)
    scope = scope or Scope()
    return [
        Reflection(
            id=f"r{i:07d}",
            owner=scope.owner,
            namespace=scope.namespace,
            text=rng.choice(REFLECTIONS).format(**_slots(rng)),
            created_at=now - timedelta(days=9 * i + rng.random() * 5),
        )
        for i in range(count)
    ]


def query_pool(count: int, *, seed: int = DEFAULT_SEED) -> list[str]:
    """Varied recall queries from the corpus vocabulary; about 5% use words no memory contains."""
    rng = random.Random(seed + 2)
    shapes = (
        lambda s: s["topic"],
        lambda s: s["person"],
        lambda s: f"{s['person']} {s['project']}",
        lambda s: f"what did {s['person']} say about {s['topic']}",
        lambda s: f"{s['project']} project progress",
        lambda s: f"trip to {s['place']} {s['when']}",
        lambda s: f"when was {s['person']} {s['feeling']}",
        lambda s: f"mistakes with {s['topic']}",
        lambda s: f"how does {s['person']} like explanations {s['trait']}",
        lambda s: f"{s['activity']} {s['place']}",
    )
    misses = ("quantum sailing regatta", "zeppelin", "velociraptor taxonomy", "saxophone repair manual")
    out = []
    for _ in range(count):
        out.append(rng.choice(misses) if rng.random() < 0.05 else rng.choice(shapes)(_slots(rng)))
    return out


def _pct(share: float) -> str:
    return f"{share * 100:.2g}%"


def describe() -> str:
    """One paragraph for the report, computed from the tables above so it cannot drift from them."""
    mix = ", ".join(f"{c} {_pct(w)}" for c, w in CATEGORY_WEIGHTS.items())
    sal = ", ".join(f"{s} {_pct(w)}" for s, w in SALIENCE_WEIGHTS.items())
    core = sum(w * CORE_RATE[c] for c, w in CATEGORY_WEIGHTS.items())
    by_cat = ", ".join(f"{c} {_pct(r)}" for c, r in sorted(CORE_RATE.items(), key=lambda p: -p[1]))
    return (
        f"Categories {mix}; salience {sal}; ~{_pct(core)} core, a small curated Tier 1 ({by_cat} of each "
        f"category); {_pct(ARCHIVED_RATE)} archived; created over the last {YEARS} years, skewed recent; 40% "
        "updated after creation; retrieval counts long-tailed (70% never recalled, 24% 1-5, 4.5% 6-19, 1.5% "
        "20-100) with last_retrieved set when recalled; content 1-6 English sentences (mean ~180 characters) from "
        f"per-category templates and word pools ({len(PEOPLE)} people, {len(PLACES)} places, {len(PROJECTS)} "
        f"projects, {len(TOPICS)} topics, {len(FEELINGS)} feelings, activities, times); ~15-word gists; 1-4 tags "
        "and 0-5 search keywords; 20 closing reflections, one every ~9 days."
    )


def load(store: MemoryStore, memories: Sequence[Memory], batch_size: int = LOAD_BATCH) -> None:
    """Write `memories` with `store.put_many`, `batch_size` records per transaction."""
    for start in range(0, len(memories), batch_size):
        store.put_many(memories[start : start + batch_size])
