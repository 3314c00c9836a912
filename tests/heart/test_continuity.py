"""No hole in what she knows: ten evenings of twenty turns, lived as a person would live them.

Every evening the person (as luna, hasuki or renki) writes 60 to 120 words a message, three
minutes apart, about the couch, tea, a film, work and the weather, with a weekday here and
there; one evening is told in long messages (250 to 400 words). Ten facts are told on the
first five evenings, one or two an evening, each in a sentence of an ordinary message. The
companion answers briefly through the fake Messages API. The Mirror runs the way its schedule
runs it, a scheduled check every ``MIRROR_CHECK_MINUTES`` of the log's clock, and offline: the
deterministic extractive answers of ``mirror.offline``, which ``silentstar.claude.complete``
gives when ``COMPANION_OFFLINE`` is set, switched on for the Mirror's checks only.

On every turn, each message of the person from the oldest event the context reaches up to the
newest is in Recent, in a shown summary or in the not-summarised line, within the budgets; after
ten evenings, the last turn's context still holds at least eight of the ten facts.
"""

import random
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings

from bench.fakeapi import FakeReply
from events.models import Event
from heart.models import ContextSnapshot
from heart.services import turn_submit
from heart.tasks import run_turns_task
from mirror.models import Summary
from mirror.offline import OFFLINE_LABEL
from mirror.route import FALLBACK_HOURS
from mirror.run import mirror_run

pytestmark = pytest.mark.django_db(databases="__all__")

START = datetime(2026, 3, 2, 19, 0, 30, tzinfo=UTC)  # a Monday evening
EVENINGS, TURNS = 10, 20
TURN_GAP = timedelta(minutes=3)
LONG_EVENING = 3
PERSON = ("luna", "hasuki", "renki")
WORDS = (60, 120)
LONG_WORDS = (250, 400)
FACTS_KEPT_AT_LEAST = 8

# (evening, turn) → the sentence that tells a fact, and the token that shows it was kept.
FACTS = {
    (0, 4): (
        "Oh and the physio finally has a name, it's Tomasz, the tall one at the clinic by the "
        "bridge, and he actually listened when I told him about my shoulder.",
        "Tomasz",
    ),
    (0, 13): (
        "The letter from the landlord came today, from next month it's going to be 940 euros "
        "instead of what we pay now, which is just lovely.",
        "940",
    ),
    (1, 6): (
        "We're minding the neighbours' cat while they're away and the kids told me she's called "
        "Pimpernel, which is far too big a name for such a small grey thing.",
        "Pimpernel",
    ),
    (1, 15): (
        "My sister rang at lunch, she's really doing it, moving to Porto in the summer, she "
        "already found a flat near the river.",
        "Porto",
    ),
    (2, 3): (
        "Dad turns sixty on the 23rd of October and nobody has planned anything yet, so I "
        "suppose it'll be me again.",
        "23rd",
    ),
    (2, 11): (
        "Good news for once, the bakery on the corner rang back and they want me, I start on "
        "the 20th of April, early shifts.",
        "20th",
    ),
    (3, 5): (
        "The allergy test came back and it's hazelnuts, all this time it was hazelnuts, so "
        "goodbye to that chocolate spread I've been eating since I was six.",
        "hazelnut",
    ),
    (3, 14): (
        "Marta finally told us where the wedding is going to be, a garden up the hill in "
        "Sintra, and she wants me to read something, which terrifies me.",
        "Sintra",
    ),
    (4, 2): (
        "We went and got the car in the end, a used Skoda Fabia, dark blue, with a dent on the "
        "back door that the man swore wasn't there yesterday.",
        "Fabia",
    ),
    (4, 16): (
        "And I signed up for the ceramics course at the community centre, it's on Thursday "
        "evenings from seven, starting next week.",
        "ceramics",
    ),
}

DRINKS = ("mint tea", "black tea", "chamomile", "the cheap green tea", "a cup of rooibos")
FILMS = (
    "an old black and white film",
    "some silly comedy",
    "a documentary about whales",
    "a thriller that made no sense",
    "one of those slow French films",
)
WEATHER = ("raining", "drizzling", "windy", "grey and cold", "foggy")
OPENERS = (
    "Hey, it's me again.",
    "Evening.",
    "Okay, back.",
    "Hi you.",
    "So.",
    "Right, where was I.",
    "Me again, sorry.",
    "Hello hello.",
)
FILLER = (
    "I've been on the couch since I walked in, shoes still on.",
    "Made a pot of {drink} and forgot it on the counter until it went cold again.",
    "Work was long today, the printer jammed twice and everyone needed something from me at once.",
    "It was {weather} all the way home and my umbrella gave up halfway down the street.",
    "We put on {film} and I fell asleep before the end.",
    "Honestly I'm just tired, the kind where your eyes feel heavy and your head is full of noise.",
    "Can't believe it's only {day}, this week is dragging.",
    "The heating is doing that clicking thing again.",
    "I had toast for dinner because I couldn't face cooking anything real.",
    "The wind keeps rattling the kitchen window and it won't stop.",
    "Nothing much happened really, just emails and meetings and more emails.",
    "I keep meaning to go to bed early and then it's late and I'm still scrolling.",
    "It was {weather} all day, the kind of day where you can't tell what time it is.",
    "I'm wrapped in the big blanket with a second cup of {drink}, which is about all I can manage.",
    "My feet hurt from standing all day.",
    "The film tonight was one of those slow ones where nothing happens and somehow I liked it.",
    "I said I'd go for a walk but it started {weather} again so that was that.",
    "Everyone at work is tired, even the ones who usually pretend they aren't.",
    "The couch has a dip exactly my shape now, not sure that's a good sign.",
    "Went for {drink} instead of coffee this time, trying to be sensible.",
    "{day} evenings are always like this, I come home and just melt.",
    "The sun came out for about ten minutes at lunch and then the clouds came back.",
    "There's a pile of laundry on the chair that I'm choosing not to see.",
    "We watched half of {film} and argued about whether it was any good.",
    "I didn't do anything useful after work, just sat there.",
    "The bus was late again and packed, someone's elbow in my ribs the whole way.",
    "My boss wants the report redone by the end of the week, of course he does.",
    "I think I need a proper weekend where I don't go anywhere at all.",
    "Is it weird that the best part of my day is putting the kettle on?",
    "The neighbours are hoovering at this hour, who does that.",
    "I should eat something green but here we are.",
    "It's {weather} out and I'm very glad to be inside.",
    "I might just watch {film} again, I don't have the energy for anything new.",
    "The lamp in the corner is the only light on and I like it that way.",
    "My head is still half at work, going over things I said in the meeting.",
    "Another {day}, another pile of things I didn't finish.",
)
# What a heavy evening adds to the everyday lines: the same kind of day, told at length.
LONG_FILLER = (
    "The whole afternoon went on the waiting room, plastic chairs and a television nobody was "
    "watching, and a man next to me who coughed every thirty seconds like clockwork.",
    "I kept looking at my phone and not reading anything on it, just scrolling so my hands "
    "had something to do.",
    "When I finally got out it was already dark and {weather}, and the walk to the bus felt "
    "twice as long as usual.",
    "I don't know why days like this wear me out so much when all I did was sit and wait.",
    "On the way home I bought bread and then left it on the bus, so that's dinner sorted, not.",
    "The flat was cold when I got in and I just stood in the hallway with my coat on for a "
    "minute, not thinking about anything.",
    "Then I made {drink}, got the blanket and the couch, and here I am, finally.",
    "It's strange how a whole day can go by and you barely say ten words to anyone.",
    "At least the radiator in the living room works, the one in the bedroom is still hopeless.",
    "I keep thinking I should call people back and then I don't, and then I feel bad about "
    "it, and then I still don't.",
    "Maybe we'll put on {film} later, or maybe I'll just fall asleep here, which is more likely.",
    "Sorry, I know this is a lot, I just need to get the day out of my head before I sleep.",
    "Work emailed twice while I was out, nothing urgent, just people wanting things, as always.",
    "Outside it's {weather} and the street lamps make everything look orange and tired.",
    "I had a biscuit from the machine in the corridor and it tasted like cardboard.",
    "The receptionist was nice at least, she told me the wait was long for everyone today.",
)
REPLIES = (
    "<say>That sounds like a long one. Stay on the couch, you've earned it.</say>",
    "<say>Mm. Tea first, everything else later.</say>",
    "<say>I'm here. Tell me the rest when you're ready.</say>",
    "<say>Poor feet. Put them up.</say><do>pulls the blanket over you</do>",
    "<say>That's a lot for one day.</say>",
    "<say>I'm listening.</say>",
    "<say>Good. I'm glad you told me.</say>",
    "<say>Rain and a blanket, then. Not the worst evening.</say>",
    "<say>You don't have to do anything else tonight.</say>",
    "<say>Oh, that made me smile.</say>",
    "<say>Go on, what happened next?</say>",
    "<say>Sounds like the film won.</say>",
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def message_write(rng: random.Random, *, day: str, fact: str | None, long: bool) -> str:
    """One message of the person: everyday lines (and a fact among them), as many words as an
    ordinary message holds, or a long one."""
    low, high = LONG_WORDS if long else WORDS
    target = rng.randint(low + 10, high - 10)
    bank = FILLER + LONG_FILLER if long else FILLER
    lines = [rng.choice(OPENERS)]
    count = len(lines[0].split()) + (len(fact.split()) if fact else 0)
    for template in rng.sample(bank, len(bank)):
        line = template.format(
            drink=rng.choice(DRINKS), film=rng.choice(FILMS), weather=rng.choice(WEATHER), day=day
        )
        if count + len(line.split()) > high:
            continue
        lines.append(line)
        count += len(line.split())
        if count >= target:
            break
    if fact:
        lines.insert(min(2, len(lines)), fact)
    return " ".join(lines)


def script_write() -> list[tuple[datetime, str, str, str]]:
    """(when, who, what the person writes, what the companion answers), oldest first."""
    rng = random.Random(2026)
    played = []
    for evening in range(EVENINGS):
        for number in range(TURNS):
            when = START + timedelta(days=evening) + number * TURN_GAP
            who = PERSON[(evening + number // 7) % len(PERSON)]
            fact = FACTS.get((evening, number), (None,))[0]
            text = message_write(
                rng, day=WEEKDAYS[when.weekday()], fact=fact, long=evening == LONG_EVENING
            )
            played.append((when, who, f"<{who}>{text}</{who}>", rng.choice(REPLIES)))
    return played


SCRIPT = script_write()


def mirror_check(when: datetime) -> None:
    """The Mirror's scheduled check at ``when``, answered by the offline Mirror."""
    with override_settings(COMPANION_OFFLINE=True):
        mirror_run(now=when)


def test_it_plays_a_script_that_reads_like_ten_evenings():
    assert len(SCRIPT) == EVENINGS * TURNS
    for number, (when, who, text, _) in enumerate(SCRIPT):
        words = len(re.sub(r"</?\w+>", " ", text).split())
        low, high = LONG_WORDS if number // TURNS == LONG_EVENING else WORDS
        assert low <= words <= high, f"message {number} ({when:%a %H:%M}, {who}) has {words} words"
    told = [text for _, _, text, _ in SCRIPT]
    for (evening, number), (_, token) in FACTS.items():
        said = [n for n, text in enumerate(told) if token.casefold() in text.casefold()]
        assert said == [evening * TURNS + number], f"{token!r} is told once, in its own message"


@pytest.fixture
def evenings(fake_api, settings):
    """Play the script; the Mirror's check runs every ``MIRROR_CHECK_MINUTES`` of the log's
    clock, from the first evening to the last turn. Returns each turn's (turn, snapshot).

    Overnight a check is run only while its answer can still change: once the time fallback's
    hours have passed since the last turn, a check either has fired or finds what the one
    before found, until the next turn (the checks skipped would all do nothing)."""
    check_every = timedelta(minutes=settings.MIRROR_CHECK_MINUTES)
    still_changing = timedelta(hours=FALLBACK_HOURS) + check_every
    check = START.replace(minute=0, second=0)
    last_turn = check
    played = []
    for moment, who, text, reply in SCRIPT:
        while check <= moment:
            if check - last_turn <= still_changing:
                mirror_check(check)
            check += check_every
        last_turn = moment
        fake_api.push(FakeReply(reply))
        turn = turn_submit(text=text, actor=who, at=moment, enqueue=False)
        run_turns_task(turn.pk)
        turn.refresh_from_db()
        assert turn.status == "done", turn.error
        played.append((turn, ContextSnapshot.objects.get(turn=turn.pk)))
    return played


def holes_of(played, *, person_events: list[int], spans: dict[int, tuple[int, int]]):
    """For each turn whose context leaves messages of the person out between the oldest event
    it reaches and the newest: (turn number, event, the ids left out, what the context held)."""
    holes = []
    for turn, snapshot in played:
        included = snapshot.items_included
        recent = {i for ids in included["recent"].values() for i in ids}
        shown = [spans[i] for i in included["summaries"]]
        unsummarised = included.get("unsummarised")
        ranges = shown + ([tuple(unsummarised)] if unsummarised else [])
        reach = min([first for first, _ in ranges] + sorted(recent)[:1], default=None)
        if reach is None:
            continue  # the first turn: nothing before it
        left_out = [
            event_id
            for event_id in person_events
            if reach <= event_id < turn.event_id
            and event_id not in recent
            and not any(first <= event_id <= last for first, last in ranges)
        ]
        if left_out:
            window = (min(recent), max(recent)) if recent else None
            holes.append((turn.number, turn.event_id, left_out, shown, unsummarised, window))
    return holes


def test_it_leaves_no_hole_and_keeps_the_facts_over_ten_evenings(evenings, fake_api, settings):
    assert len(evenings) == EVENINGS * TURNS
    # The Mirror was offline: the fake API answered the Heart's turns and nothing else.
    assert [body["model"] for body in fake_api.requests] == [settings.HEART_MODEL] * len(SCRIPT)
    summaries = Summary.objects.order_by("id")
    assert summaries.exists(), "the Mirror wrote no summary in ten evenings"
    assert all(OFFLINE_LABEL in s.content for s in summaries), "a summary was not offline"

    # 1. No hole: every message of the person within the context's reach is in it.
    spans = {s.id: (s.first_event_id, s.last_event_id) for s in summaries}
    person_events = list(
        Event.objects.filter(actor__in=PERSON).order_by("pk").values_list("pk", flat=True)
    )
    holes = holes_of(evenings, person_events=person_events, spans=spans)
    pools = sum(getattr(settings, f"BUDGET_POOL_{pool}") for pool in ("USER", "SAY", "DO", "FLEX"))
    over_budget = [
        (turn.number, counts)
        for turn, snapshot in evenings
        if (counts := snapshot.token_counts)["summaries"] > settings.BUDGET_SUMMARIES
        or counts["lingering"] > settings.BUDGET_WORKING_MEMORY
        or counts["recalled"] > settings.BUDGET_RECALL
        or counts["recent"] > pools
    ]

    # 2. The facts told on the first five evenings, in the last turn's context.
    last_context = evenings[-1][1].assembled_user
    kept = [
        token
        for _, token in FACTS.values()
        if re.search(rf"\b{re.escape(token)}", last_context, re.IGNORECASE)
    ]
    missing = [token for _, token in FACTS.values() if token not in kept]
    newest_l2 = Summary.objects.filter(level="L2").order_by("-last_event_id", "-id").first()

    levels = {level: summaries.filter(level=level).count() for level in ("L0", "L1", "L2")}
    print(f"\nsummaries written: {levels}")
    print(f"turns with a hole: {len(holes)} of {len(evenings)}")
    lines = sum(bool(snapshot.items_included.get("unsummarised")) for _, snapshot in evenings)
    print(f"turns with a not-summarised line: {lines}")
    for number, event_id, left_out, shown, unsummarised, window in holes[:5]:
        print(
            f"  turn {number} (event {event_id}): left out {left_out}; summaries {shown}, "
            f"not summarised {unsummarised}, Recent {window}"
        )
    print(f"facts kept in the last turn's context: {len(kept)}/{len(FACTS)}: {kept}")
    print(f"facts missing: {missing}")
    for token in missing:
        holding = [
            f"{s.level} #{s.id} (events {s.first_event_id}-{s.last_event_id})"
            for s in summaries
            if re.search(rf"\b{re.escape(token)}", s.content, re.IGNORECASE)
        ]
        print(f"  {token!r} is in the summaries: {holding or 'none'}")
    titles = re.findall(r"^### .*$", last_context, re.MULTILINE)
    print(f"the last turn's summaries: {titles}")
    if newest_l2 is None:
        print("no L2 summary")
    for l2 in summaries.filter(level="L2").order_by("last_event_id", "id"):
        newest = " (the newest)" if l2 == newest_l2 else ""
        print(f"L2 #{l2.id}{newest}, events {l2.first_event_id}-{l2.last_event_id}:")
        print(l2.content)

    assert not holes, (
        f"{len(holes)} turns left messages of the person out of their context; the first: "
        + "; ".join(
            f"turn {number} (event {event_id}) left out {left_out} (summaries {shown}, "
            f"not summarised {unsummarised}, Recent {window})"
            for number, event_id, left_out, shown, unsummarised, window in holes[:3]
        )
    )
    assert not over_budget, f"turns over a budget: {over_budget[:3]}"
    assert len(kept) >= FACTS_KEPT_AT_LEAST, (
        f"the last turn's context keeps {len(kept)} of {len(FACTS)} facts "
        f"(at least {FACTS_KEPT_AT_LEAST} wanted); missing: {missing}"
    )
