"""A seeded synthetic memory corpus for benchmarks/evidence_retention.py.

Each record reads like a stored turn ("User: ...\\nAssistant: ...") of
300-800 estimated tokens, built from varied sentence templates whose
vocabulary deliberately overlaps the questions' words (code, server, budget,
port, office...), so ranking and excerpt choice are not trivial. One
distinctive fact, naming an invented entity, sits at a random sentence
position; up to two other sentences mention the entity without the fact.
Each fact comes with a question phrased differently from it, the way a user
would ask: it shares the entity and usually one salient word.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from newt.recall import est_tokens

MIN_TOKENS = 300
MAX_TOKENS = 800


@dataclass(frozen=True)
class Record:
    key: str
    content: str
    fact: str
    question: str
    created_at: float


# (fact template, question template). {E} is the entity; other slots are filled below.
FACTS: list[tuple[str, str]] = [
    ("The access code for the {E} depot is {CODE}.", "What code opens the {E} depot?"),
    (
        "{E}'s maintenance window starts every {DAY} at {TIME}.",
        "When is the maintenance slot for {E}?",
    ),
    (
        "The {E} cluster runs on {N} nodes in the {REGION} region.",
        "How many nodes are in the {E} cluster?",
    ),
    (
        "Our contact at {E} Logistics is {PERSON}, on extension {EXT}.",
        "Who is the person to call at {E} Logistics?",
    ),
    (
        "The {E} bridge was closed for repairs on {DATE}.",
        "Since when has the {E} bridge been shut?",
    ),
    ("Invoice {E}-{EXT} was paid in full on {DATE}.", "Did the {E} invoice get paid, and when?"),
    ("The {E} project's budget is capped at {MONEY}.", "How much can we spend on the {E} project?"),
    (
        "The ferry to {E} leaves from pier {PIER} at {TIME}.",
        "Which pier do boats to {E} depart from?",
    ),
    (
        "My grandmother's {E} stew uses {N} grams of saffron.",
        "How much saffron goes into the {E} stew?",
    ),
    ("SSH on the {E} server listens on port {PORT}.", "What port do I ssh into on {E}?"),
    (
        "The wifi password at the {E} office is {WORD}.",
        "How do I get on the wifi at the {E} office?",
    ),
    ("{E} Pharmacy closes at {TIME} on weekdays.", "Until what time is {E} Pharmacy open midweek?"),
    (
        "The {E} telescope's mirror is {N} centimetres across.",
        "How wide is the mirror on the {E} telescope?",
    ),
    (
        "We pinned {E} to version {VER} after the regression.",
        "Which version of {E} are we stuck on?",
    ),
    (
        "The {E} trail is {N} kilometres from the car park to the summit.",
        "How long is the hike up the {E} trail?",
    ),
    (
        "The {E} vaccine batch must be stored below {TEMP} degrees.",
        "What temperature does the {E} batch need?",
    ),
]


def _words(text: str, sep: str | None = None) -> list[str]:
    return text.split(sep)


NOUNS = _words(
    "code server budget port office project invoice bridge trail cluster version window "
    "contact mirror ferry report meeting schedule deadline release backlog kitchen garden "
    "recipe oven ticket flight hotel train station library notebook laptop keyboard monitor "
    "database query cache config script test build pipeline dashboard ledger contract "
    "proposal draft roadmap sprint review payment account password access team "
    "manager client supplier warehouse depot delivery package route map weather forecast "
    "storm harbour market bakery bicycle car battery charger printer spreadsheet"
)
ADJECTIVES = _words(
    "old new slow quick noisy quiet shared private broken stable flaky tidy messy "
    "expensive cheap careful rough final early late small large useful confusing simple "
    "awkward reliable temporary permanent busy empty crowded remote local"
)
PREDICATES = _words(
    "fine;okay for now;too slow;out of date;a bit fragile;mostly done;worth a second look;"
    "harder than expected;surprisingly easy;still pending;already sorted",
    ";",
)
VERBS_PAST = _words(
    "checked fixed moved cleaned reviewed updated rebuilt replaced measured tested "
    "opened closed printed packed planned discussed postponed finished started"
)
VERBS_INF = _words(
    "check fix move clean review update rebuild replace measure test open close "
    "print pack plan discuss postpone finish start compare rename archive"
)
GERUNDS = _words(
    "checking testing printing packing starting opening reviewing fixing moving "
    "updating replacing measuring planning closing"
)
SUBJECTS = _words(
    "I;we;my sister;the landlord;our manager;the new intern;the plumber;Sam;Priya;"
    "the other team;my neighbour;the support desk;the auditor",
    ";",
)
PLACES = _words(
    "kitchen;office;garage;basement;lobby;warehouse;train;car park;back room;"
    "meeting room;garden shed;corner shop;station",
    ";",
)
TIMES = _words(
    "yesterday;last week;this morning;on Friday;after lunch;before the holidays;"
    "twice already;over the weekend;earlier today;a while ago;at the end of the day",
    ";",
)

FILLER = [
    "{S} {VP} the {A} {N} {T}.",
    "I think the {N} is {P}, but {S} disagrees.",
    "Before {G} the {N}, check whether the {N2} is {P}.",
    "It took about {n} minutes to {V} the {N}.",
    "{T_cap}, {S} {VP} the {A} {N} near the {PL}.",
    "That is a fair point about the {N}; the {N2} matters more here.",
    "If the {N} keeps failing, try {G} the {N2} first.",
    "One option is to {V} the {N} and leave the {N2} alone.",
    "The {N} in the {PL} was {P} again, which nobody expected.",
    "Honestly, the {N} is the least of our worries right now.",
    "Can you {V} the {N} when you get a chance?",
    "There are {n} items on the list, and the {N} is near the top.",
    "The {A} {N} and the {A2} {N2} should not be confused.",
    "We could {V} the {N} tomorrow, assuming the {N2} is {P}.",
    "Nobody remembers who {VP} the {N} {T}.",
    "According to {WHO}, the {N} has been {P} for a while now.",
    "Let me know if the {N} needs anything else.",
    "Good question: the {N} depends on the {N2}, mostly.",
    "The {A} {N} beats the {A2} {N2} in most cases.",
    "Remember to {V} the {N} before you leave the {PL}.",
    "The numbers for the {N} look {P}, roughly {n} percent off.",
    "I would not worry about the {N} until the {N2} is {P}.",
    "{S} said the {N} was moved to the {PL} {T}.",
    "Here is a short summary: the {N} is {P} and the {N2} is {P2}.",
]

# Sentences that mention a record's entity without stating its fact.
DISTRACTORS = [
    "{E} came up again when we discussed the {N}.",
    "I still need to email {E} about the {N}.",
    "Someone mentioned {E} in passing {T}.",
    "The {N} for {E} is a separate question, though.",
]

SYLLABLES = _words(
    "vel mar tor ska brin dov el fen gar hol ist jun kel lor mun nor osk pel quor ras "
    "sil tam ulv var wen yor zan bre cal dra eth fal gov hen ith kor lun"
)
REGIONS = _words("northern eastern coastal alpine central southern")
DAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
MONTHS = _words("January February March April May June July August September October")
PEOPLE = _words("Ines Okafor;Tomas Lindqvist;Mara Velde;Kenji Aoki;Ruth Abernathy;Dev Patel", ";")
WORDS = _words("heron-lamp copper-tide north-willow quiet-anvil maple-radar slate-orchid")


def _entity(rng: random.Random, used: set[str]) -> str:
    while True:
        syllables = rng.choice((2, 3, 3, 4))
        name = "".join(rng.choice(SYLLABLES) for _ in range(syllables)).capitalize()
        if name not in used and name.lower() not in NOUNS:
            used.add(name)
            return name


def _slots(rng: random.Random, entity: str) -> dict[str, str]:
    return {
        "E": entity,
        "CODE": f"{rng.randint(1000, 9999)}-{rng.choice('ABCDEFGHJK')}{rng.choice('LMNPQRSTUV')}",
        "DAY": rng.choice(DAYS),
        "TIME": f"{rng.randint(1, 11)}:{rng.choice(['00', '15', '30', '45'])} {rng.choice('ap')}m",
        "N": str(rng.randint(3, 480)),
        "REGION": rng.choice(REGIONS),
        "PERSON": rng.choice(PEOPLE),
        "EXT": str(rng.randint(100, 9999)),
        "DATE": f"{rng.randint(1, 28)} {rng.choice(MONTHS)} {rng.randint(2019, 2025)}",
        "MONEY": f"${rng.randint(2, 900)},{rng.randint(0, 999):03d}",
        "PIER": str(rng.randint(1, 40)),
        "PORT": str(rng.randint(2000, 65000)),
        "WORD": rng.choice(WORDS) + str(rng.randint(10, 99)),
        "VER": f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 12)}",
        "TEMP": str(rng.randint(-80, 8)),
    }


def _filler(rng: random.Random) -> str:
    time_phrase = rng.choice(TIMES)
    noun, noun2 = rng.sample(NOUNS, 2)
    adj, adj2 = rng.sample(ADJECTIVES, 2)
    pred, pred2 = rng.sample(PREDICATES, 2)
    text = rng.choice(FILLER).format(
        S=rng.choice(SUBJECTS),
        WHO=rng.choice(SUBJECTS[2:]),
        VP=rng.choice(VERBS_PAST),
        V=rng.choice(VERBS_INF),
        G=rng.choice(GERUNDS),
        A=adj,
        A2=adj2,
        N=noun,
        N2=noun2,
        P=pred,
        P2=pred2,
        PL=rng.choice(PLACES),
        T=time_phrase,
        T_cap=time_phrase[0].upper() + time_phrase[1:],
        n=rng.randint(2, 90),
    )
    return text[0].upper() + text[1:]


def make_record(rng: random.Random, index: int, used: set[str], created_at: float) -> Record:
    fact_template, question_template = rng.choice(FACTS)
    slots = _slots(rng, _entity(rng, used))
    fact = fact_template.format(**slots)
    question = question_template.format(**slots)

    target = rng.randint(MIN_TOKENS, MAX_TOKENS)
    user = [_filler(rng) for _ in range(rng.randint(1, 2))]
    assistant: list[str] = []
    budget = target - est_tokens(fact) - 6  # "User: " / "Assistant: " labels
    while est_tokens(" ".join(user + assistant)) < budget:
        assistant.append(_filler(rng))
    # The entity also comes up away from the fact, so an excerpt centered on
    # the entity alone can land on the wrong mention.
    for _ in range(rng.randint(0, 2)):
        i = rng.randrange(len(assistant))
        assistant[i] = rng.choice(DISTRACTORS).format(
            E=slots["E"], N=rng.choice(NOUNS), T=rng.choice(TIMES)
        )
    sentences = user + assistant
    at = rng.randint(0, len(sentences))
    sentences.insert(at, fact)
    # The user's part is its first sentences; the fact may land in either part.
    cut = len(user) + (1 if at <= len(user) else 0)
    content = "User: " + " ".join(sentences[:cut]) + "\nAssistant: " + " ".join(sentences[cut:])
    return Record(f"t{index}", content, fact, question, created_at)


def make_corpus(
    seed: int, count: int, *, now: float, spread_hours: float = 24 * 60
) -> list[Record]:
    """`count` records with keys t1..tN, created over the `spread_hours` before `now`."""
    rng = random.Random(seed)
    used: set[str] = set()
    return [
        make_record(rng, i + 1, used, now - rng.uniform(0, spread_hours) * 3600)
        for i in range(count)
    ]


def vague_question(rng: random.Random) -> str:
    """A question made only of words common across the corpus (no entity)."""
    noun, noun2 = rng.sample(NOUNS, 2)
    return rng.choice(
        [
            f"What did we decide about the {noun} and the {noun2}?",
            f"Was the {rng.choice(ADJECTIVES)} {noun} ever {rng.choice(VERBS_PAST)}?",
            f"Remind me what {rng.choice(SUBJECTS[2:])} said about the {noun}.",
        ]
    )


def long_message(rng: random.Random, question: str, tokens: int = 250) -> str:
    """A pasted message of about `tokens` tokens of filler that ends with `question`."""
    sentences: list[str] = []
    while est_tokens(" ".join(sentences)) < tokens:
        sentences.append(_filler(rng))
    return " ".join([*sentences, question])
