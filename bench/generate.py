"""Generate the retrieval evaluation datasets: long two-person conversations with questions.

Deterministic (seeded) and written from scratch for this project — no public benchmark's text.
Each conversation runs over months in sessions a few days apart. Most turns are small talk
drawn from a shared pool of words (so plenty of turns look alike); some exchanges carry facts
(a pet adopted, a trip, a new job, a class, an injury, a book, a dinner, a family wedding,
a move, a concert), later turns come back to them (distractors that name the same things), and
every question asks about a fact in other words than the turn that states it.

Categories
    single-hop   one turn answers it, asked with different wording
    multi-hop    two turns (two facts) are needed
    temporal     when something happened: the turn that says it, dated by its session
    open-domain  asked through world knowledge the turn never states (a city's country, a
                 book's genre), so the words barely overlap
    paraphrase   the fact reworded throughout, sharing at most a name with the turn

Turn ids carry their conversation (``c2:D4:13``), so an evidence id names one turn in the whole
dataset; each question lists, per evidence turn, the words of the fact that turn states
(``evidence_words``), and the harness refuses a dataset whose evidence turn lacks them.

Made on demand, never committed: ``python -m bench generate [NAME …] [--out DIR]`` writes
each named set (all of them by default) as ``NAME.json`` in ``data/eval/`` (git ignores it), each
from its own seed, the same bytes every time: ``small.json`` (the tests make it themselves),
``dev.json`` (for choosing search's weights and word lists), ``large.json`` (more of dev's kind:
the same facts and question templates, so what was tuned on dev's wording carries over to it),
``heldout.json`` (other events, other names and vocabulary, and question wordings that neither
dev nor the tuning ever saw; looked at while tuning since), ``heldout2.json`` (a third family of
people, events, vocabulary and question wordings, written after the search's tuning and never
tuned on) and ``heldout3.json`` (a fourth family, written later still: its difficulty was set
with a plain BM25 over single turns alone, to the recall@10 such a baseline reaches on a public
benchmark, and never with the search).
"""

import json
import random
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path

from heart.assemble import MONTHS

PAIRS = [
    ("Ana", "Ben"),
    ("Maya", "Tom"),
    ("Iris", "Joel"),
    ("Nadia", "Sam"),
    ("Lena", "Omar"),
    ("Rosa", "Felix"),
    ("Clara", "Dev"),
    ("Hana", "Luke"),
]

# --- small talk -------------------------------------------------------------------------------

OPENERS = [
    "Hey, how was your {day}?",
    "Evening! Long {day}?",
    "Morning. Did you sleep at all?",
    "Hi! Sorry I vanished, {reason}.",
    "You around? I need to vent about {thing}.",
    "Good news, {thing} finally sorted itself out.",
]
SMALL_TALK = [
    "Honestly just tired. {reason} and then {thing} on top of it.",
    "Not bad. I spent most of it dealing with {thing}.",
    "The weather was awful here, {weather} all afternoon.",
    "I keep meaning to call you about {thing} and then forgetting.",
    "Work was fine, a lot of meetings about {thing}.",
    "We ordered {food} again, nobody had the energy to cook.",
    "I watched half a documentary about {topic} and fell asleep.",
    "Traffic was terrible, it took an hour to get across town.",
    "Did you see the news about {topic}? Wild.",
    "I'm trying to drink less coffee this week. It's going badly.",
    "My neighbour is renovating again, drilling from eight in the morning.",
    "I went for a walk by the {place} to clear my head.",
    "Nothing much, {reason}, so I stayed in with a {drink}.",
    "The {thing} situation is still dragging on, don't ask.",
    "I finally cleaned the kitchen. Small victories.",
    "Someone at work brought {food} in, so the day wasn't a total loss.",
    "I should sleep but I'm reading about {topic} instead.",
    "Ha, same here. {weather} and a pile of laundry.",
    "That's so annoying. Did they ever reply about {thing}?",
    "Oh no. Hope it gets better soon.",
    "Sounds like a proper week. Rest this weekend?",
    "Haha, classic. Tell me more later?",
    "I'm glad. You deserved an easy one.",
    "Ugh, I know the feeling.",
    "Fair enough, some weeks are like that.",
    "Let's catch up properly on the weekend then.",
    "Okay, talk tomorrow. Sleep well!",
    "Night! Say hi to everyone for me.",
]
DAY = ["day", "week", "Monday", "shift", "afternoon"]
REASONS = [
    "work has been chaos",
    "my phone died",
    "the internet was down all weekend",
    "I had a cold",
    "we had guests staying",
    "I was buried in paperwork",
]
THINGS = [
    "the car insurance",
    "my landlord",
    "the broken boiler",
    "the tax forms",
    "the new project at work",
    "the bank",
    "my laptop",
    "the parking permit",
    "the group chat drama",
    "the dentist appointment",
]
WEATHER = ["rain", "wind", "grey drizzle", "a heatwave", "fog", "hail"]
FOODS = ["pizza", "curry", "noodles", "tacos", "sushi", "dumplings"]
TOPICS = ["octopuses", "deep sea mining", "the housing market", "old maps", "volcanoes", "bees"]
PLACES = ["river", "park", "harbour", "old railway line", "canal"]
DRINKS = ["tea", "glass of wine", "hot chocolate", "beer"]

# --- facts ------------------------------------------------------------------------------------
# Each fact: slots, a question turn from the other person, statement variants, callbacks
# (later turns naming the same things) and questions by category. ``{who}`` is the person the
# fact is about.

ANIMALS = [
    # (word in the turn, the word a question uses, a kind the question may use instead)
    ("puppy", "dog", "animal"),
    ("kitten", "cat", "pet"),
    ("rabbit", "bunny", "pet"),
    ("parrot", "bird", "pet"),
]
PET_NAMES = ["Biscuit", "Pepper", "Juniper", "Mochi", "Waffles", "Clover", "Pickle", "Otis"]
CITIES = [
    ("Lisbon", "Portugal", "Portuguese"),
    ("Kyoto", "Japan", "Japanese"),
    ("Krakow", "Poland", "Polish"),
    ("Seville", "Spain", "Spanish"),
    ("Edinburgh", "Scotland", "Scottish"),
    ("Bergen", "Norway", "Norwegian"),
    ("Naples", "Italy", "Italian"),
    ("Ghent", "Belgium", "Belgian"),
]
TRIP_ACTIVITIES = ["walking the old town", "museums", "hiking the hills", "sitting in cafes"]
TRIP_FOODS = ["pastries", "seafood", "ramen", "pierogi", "tapas", "waffles"]
JOBS = [
    ("Harbor Analytics", "data analyst", "numbers"),
    ("Greenleaf Architects", "junior architect", "drawings"),
    ("Northwind Logistics", "shift supervisor", "schedules"),
    ("Bluebell Bakery", "pastry chef", "dough"),
    ("Cobalt Games", "level designer", "maps"),
    ("Riverside Clinic", "receptionist", "patients"),
]
HOBBIES = [
    ("pottery", "clay", "making bowls"),
    ("salsa", "dance", "spinning around"),
    ("life drawing", "sketching", "charcoal"),
    ("climbing", "bouldering", "chalky hands"),
    ("Italian", "language", "verbs"),
    ("woodworking", "carpentry", "sawdust"),
]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday"]
INJURIES = [
    ("ankle", "leg", "stairs at the station"),
    ("wrist", "arm", "icy pavement outside the shop"),
    ("knee", "leg", "last five-a-side game"),
    ("shoulder", "arm", "move, carrying the sofa"),
]
BOOKS = [
    ("The Salt Orchard", "Mirela Voss", "novel", "family saga"),
    ("Nine Winters", "Aki Tanabe", "thriller", "crime story"),
    ("A Map of Small Hours", "Jonas Pell", "memoir", "life story"),
    ("The Glass Cartographer", "Inez Marlow", "fantasy book", "dragons and magic"),
    ("Tidewater", "Ruth Okafor", "short stories", "collection"),
]
DISHES = [
    ("lasagne", "pasta bake", "the top"),
    ("paella", "rice dish", "the bottom"),
    ("beef wellington", "pastry-wrapped beef", "the pastry"),
    ("lemon tart", "dessert", "the crust"),
    ("ramen from scratch", "noodle soup", "the eggs"),
]
RELATIVES = [
    ("sister", "sibling"),
    ("brother", "sibling"),
    ("cousin", "relative"),
]
RELATIVE_NAMES = ["Marta", "Jonah", "Elise", "Paolo", "Greta", "Ravi"]
TOWNS = ["Whitby", "Cork", "Annecy", "Bruges", "Hallstatt", "Porto"]
MOVES = [
    ("a flat above the bakery on Elm Street", "apartment", "smells of bread every morning"),
    ("a tiny house near the allotments", "cottage", "has a wood stove"),
    ("a loft in the old textile mill", "converted factory", "has huge windows"),
]
BANDS = [
    ("The Paper Lanterns", "indie"),
    ("Moss & Marrow", "folk"),
    ("Static Bloom", "electronic"),
    ("Velvet Harbour", "jazz"),
]
VENUES = ["the Roundhouse", "the old corn exchange", "a tiny club by the docks"]


def _pick(rng, options):
    return options[rng.randrange(len(options))]


def _fact(rng: random.Random, kind: str, who: str) -> dict:
    """One fact about ``who``: the exchange that states it, callbacks and questions."""
    if kind == "pet":
        animal, plain, kind_word = _pick(rng, ANIMALS)
        name = _pick(rng, PET_NAMES)
        return {
            "ask": "Any news on the shelter visit?",
            "say": _pick(
                rng,
                [
                    f"Yes! We brought a {animal} home on Saturday. We've called her {name}.",
                    f"We did it, there's a little {animal} asleep on my feet right now. "
                    f"Her name is {name}.",
                ],
            ),
            "react": "Oh my goodness, send pictures immediately.",
            "callbacks": [
                f"{name} chewed through a charger cable last night.",
                f"Took {name} to the vet for her jabs, she was very brave.",
            ],
            "questions": [
                ("single-hop", f"What is {who}'s new {plain} called?"),
                ("paraphrase", f"Which {kind_word} joined {who}'s household from the rescue?"),
            ],
            "handle": f"the {plain}",
            "words": [animal, name],
            "entity": name,
        }
    if kind == "trip":
        city, country, adjective = _pick(rng, CITIES)
        activity, food = _pick(rng, TRIP_ACTIVITIES), _pick(rng, TRIP_FOODS)
        return {
            "ask": "Welcome back! How was the trip?",
            "say": _pick(
                rng,
                [
                    f"{city} was perfect. Four days of {activity} and far too many {food}.",
                    f"Just landed from {city}. I did nothing but {activity} and eat {food}.",
                ],
            ),
            "react": "Jealous. I need a holiday so badly.",
            "callbacks": [f"I still dream about the {food} from {city}."],
            "questions": [
                ("temporal", f"When did {who} get back from visiting {city}?"),
                ("open-domain", f"Which {adjective} city did {who} go away to?"),
                ("paraphrase", f"Where did {who} holiday, eating {food} the whole time?"),
            ],
            "handle": f"the trip to {country}",
            "words": [city, activity, food],
            "entity": city,
        }
    if kind == "job":
        company, role, stuff = _pick(rng, JOBS)
        return {
            "ask": "So? How's the new place treating you?",
            "say": _pick(
                rng,
                [
                    f"First week at {company} done. Being a {role} is harder than I expected, "
                    f"so many {stuff}.",
                    f"I survived my first days as a {role} at {company}. My head is full of "
                    f"{stuff}.",
                ],
            ),
            "react": "You'll be brilliant at it, I know it.",
            "callbacks": [f"{company} had a team lunch today, it was nice actually."],
            "questions": [
                ("single-hop", f"What role did {who} take on at {company}?"),
                ("paraphrase", f"Which employer hired {who} as a {role}?"),
            ],
            "handle": "the new job",
            "words": [company, role],
            "entity": company,
        }
    if kind == "hobby":
        hobby, field, detail = _pick(rng, HOBBIES)
        weekday = _pick(rng, WEEKDAYS)
        return {
            "ask": "Did you end up signing up for something?",
            "say": f"I joined a {hobby} class at the community centre, {weekday} evenings. "
            f"Loving the {detail} already.",
            "react": "That's so you. I love that.",
            "callbacks": [f"{hobby.capitalize()} was great this week, the teacher is so patient."],
            "questions": [
                ("single-hop", f"What course did {who} enrol in at the community centre?"),
                ("temporal", f"On which evening of the week does {who} go to {hobby}?"),
                ("open-domain", f"What {field} lessons is {who} taking?"),
            ],
            "handle": f"the {hobby} class",
            "words": [hobby, weekday],
            "entity": hobby,
        }
    if kind == "injury":
        part, _limb, where = _pick(rng, INJURIES)
        return {
            "ask": "Why are you limping in that photo?",
            "say": f"I twisted my {part} on the {where}. No running for a few weeks.",
            "react": "Ouch. Rest it properly this time!",
            "callbacks": [f"My {part} is almost back to normal, I walked to work today."],
            "questions": [
                ("single-hop", f"How did {who} hurt their {part}?"),
                ("paraphrase", f"What injury kept {who} from jogging?"),
            ],
            "handle": f"the {part} injury",
            "words": [part, where],
            "entity": part,
        }
    if kind == "book":
        title, author, genre, _gist = _pick(rng, BOOKS)
        return {
            "ask": "What are you reading these days?",
            "say": f"I finished {title} by {author} last night. The ending wrecked me.",
            "react": "Adding it to my list, thanks.",
            "callbacks": [f"Still thinking about the last chapter of {title}."],
            "questions": [
                ("single-hop", f"Which book by {author} did {who} complete?"),
                ("open-domain", f"What {genre} did {who} say had a devastating ending?"),
            ],
            "handle": "the book",
            "words": [title, author],
            "entity": title,
        }
    if kind == "dinner":
        dish, plain, burnt = _pick(rng, DISHES)
        guest = _pick(rng, RELATIVE_NAMES)
        return {
            "ask": "How did the birthday dinner go?",
            "say": f"I made {dish} for {guest}'s birthday and burned {burnt}, "
            "but everyone ate it anyway.",
            "react": "Haha, it's the thought that counts.",
            "callbacks": [f"{guest} keeps teasing me about the birthday {dish}."],
            "questions": [
                ("single-hop", f"What did {who} cook to celebrate {guest}?"),
                ("temporal", f"When was {guest}'s birthday meal that {who} cooked?"),
                ("paraphrase", f"Which {plain} got scorched at the party {who} hosted?"),
            ],
            "handle": "the birthday dinner",
            "words": [dish, guest, burnt],
            "entity": guest,
        }
    if kind == "wedding":
        relative, plain = _pick(rng, RELATIVES)
        name, town = _pick(rng, RELATIVE_NAMES), _pick(rng, TOWNS)
        month = _pick(rng, MONTHS)
        return {
            "ask": "You sounded excited on the phone, what happened?",
            "say": f"My {relative} {name} got engaged! The wedding is in {town} next {month}.",
            "react": "Congratulations to them! That's lovely news.",
            "callbacks": [f"{name} asked me to give a speech at the wedding. Help."],
            "questions": [
                ("single-hop", f"Where will {who}'s {plain} {name} get married?"),
                ("temporal", f"In which month is the wedding of {who}'s {relative}?"),
            ],
            "handle": "the wedding news",
            "words": [relative, name, town, month],
            "entity": name,
        }
    if kind == "move":
        place, plain, detail = _pick(rng, MOVES)
        return {
            "ask": "Are you all unpacked yet?",
            "say": f"Almost. We moved into {place}, it {detail}.",
            "react": "It sounds dreamy. I'm coming over.",
            "callbacks": ["Still haven't found the box with the cutlery since the move."],
            "questions": [
                ("single-hop", f"What kind of home did {who} relocate to?"),
                ("paraphrase", f"Describe the {plain} {who} now lives in."),
            ],
            "handle": "the move",
            "words": [place],
            "entity": place,
        }
    band, genre = _pick(rng, BANDS)
    venue = _pick(rng, VENUES)
    return {
        "ask": "Was the gig as good as you hoped?",
        "say": f"{band} were incredible at {venue}. I lost my voice singing along.",
        "react": "I'm so glad you went!",
        "callbacks": [f"I've had {band} on repeat since the show."],
        "questions": [
            ("single-hop", f"Which band did {who} see live at {venue}?"),
            ("open-domain", f"What {genre} act did {who} go to a concert of?"),
        ],
        "handle": "the concert",
        "words": [band, venue],
        "entity": band,
    }


FACT_KINDS = ["pet", "trip", "job", "hobby", "injury", "book", "dinner", "wedding", "move", "gig"]


# --- the held-out facts -----------------------------------------------------------------------
# Other events, other names and vocabulary, and questions worded as none of the above are: no
# question template, fact kind or fact vocabulary here is shared with the facts above, which
# dev.json (the tuning set) and large.json are made from. Small talk is shared: it is filler.

HELDOUT_PAIRS = [
    ("Priya", "Marco"),
    ("Elena", "Kofi"),
    ("Sofia", "Arjun"),
    ("Yara", "Theo"),
    ("Mila", "Tariq"),
    ("Leah", "Callum"),
    ("Zoe", "Mateo"),
    ("Ines", "Rafael"),
]
RACES = [
    # (the race as the turn names it, where, the finishing time)
    ("half marathon", "Rotterdam", "two hours and six minutes"),
    ("10k", "Valencia", "fifty-eight minutes"),
    ("trail ultra", "Ljubljana", "nine hours flat"),
    ("charity fun run", "Gothenburg", "forty minutes"),
    ("marathon", "Vienna", "four hours and twelve minutes"),
]
RACE_COUNTRIES = {
    "Rotterdam": "Dutch",
    "Valencia": "Spanish",
    "Ljubljana": "Slovenian",
    "Gothenburg": "Swedish",
    "Vienna": "Austrian",
}
INSTRUMENTS = [
    # (instrument, the family a question may name it by)
    ("cello", "string"),
    ("trumpet", "brass"),
    ("clarinet", "woodwind"),
    ("accordion", "squeezebox"),
    ("harp", "plucked"),
]
TEACHERS = ["Mrs Okonkwo", "Viktor", "Dolores", "Mr Hadley", "Saoirse"]
VEHICLES = [
    # (what it is, its make, where the make comes from)
    ("scooter", "Vespa", "Italian"),
    ("camper van", "Volkswagen", "German"),
    ("motorbike", "Triumph", "British"),
    ("estate car", "Volvo", "Swedish"),
    ("hatchback", "Skoda", "Czech"),
]
PAINT_COLOURS = ["mustard yellow", "teal", "cherry red", "pale lilac", "olive"]
CHARITIES = [
    # (where, what they do there)
    ("food bank", "sorting tins"),
    ("hospice", "serving tea"),
    ("beach clean-up", "picking up plastic"),
    ("literacy project", "reading with kids"),
]
WEEKEND_MORNINGS = ["Saturday", "Sunday", "Friday"]
LOSSES = [
    # (the thing, where it was left)
    ("wallet", "tram"),
    ("passport", "airport shuttle"),
    ("wedding ring", "swimming baths"),
    ("house keys", "ferry"),
]
FINDERS = ["Gwen", "Dimitri", "Aurelio", "Bettina", "Kwame"]
CROPS = [
    # (what was grown, what a question may call it)
    ("pumpkin", "gourd"),
    ("runner beans", "legume"),
    ("dahlias", "blooms"),
    ("marrow", "squash"),
]
SHOWS = ["village show", "county fair", "harvest festival"]
NEWBORN_PARENTS = ["sister-in-law", "best mate", "flatmate"]
NEWBORN_NAMES = ["Florence", "Idris", "Wren", "Caspian", "Ottilie", "Ezra"]
EXAMS = [
    # (the exam, what passing it gets you)
    ("driving test", "licence"),
    ("sommelier exam", "wine qualification"),
    ("lifeguard assessment", "pool certificate"),
    ("citizenship interview", "new passport"),
]
ATTEMPTS = ["second", "third", "fourth"]
ROOMS = ["spare room", "hallway", "nursery", "downstairs loo"]
LAKES = [
    # (the lake, its country)
    ("Loch Lomond", "Scottish"),
    ("Lake Bled", "Slovenian"),
    ("Lake Como", "Italian"),
    ("Lake Balaton", "Hungarian"),
    ("Lough Corrib", "Irish"),
]
CAMPING_MISHAPS = ["the tent flooded", "a fox stole our sausages", "the airbed punctured"]


def _heldout_fact(rng: random.Random, kind: str, who: str) -> dict:
    """One held-out fact about ``who``, shaped as ``_fact``'s with ``done`` (what they did, in
    the past tense, for questions that ask about two facts)."""
    if kind == "race":
        race, city, time = _pick(rng, RACES)
        return {
            "ask": "Well?? Did you make it to the finish line?",
            "say": f"I did! The {race} in {city}, {time}. My legs have filed a complaint.",
            "react": "You absolute legend. Ice bath tonight.",
            "callbacks": [f"Still walking down stairs backwards after {city}."],
            "questions": [
                ("single-hop", f"What was {who}'s finishing time in {city}?"),
                ("temporal", f"Remind me when {who} ran in {city}?"),
                (
                    "open-domain",
                    f"{who} ran the {race} in a {RACE_COUNTRIES[city]} city. Which one?",
                ),
            ],
            "handle": "race",
            "done": "ran a race",
            "words": [race, city, time],
            "entity": city,
        }
    if kind == "music":
        instrument, family = _pick(rng, INSTRUMENTS)
        teacher = _pick(rng, TEACHERS)
        return {
            "ask": "What's that case you were carrying yesterday?",
            "say": f"Ha, my {instrument}! First lesson with {teacher} on Thursday. "
            "The neighbours are going to hate me.",
            "react": "Play me something once you can.",
            "callbacks": [f"Practised scales for an hour, {teacher} would be proud."],
            "questions": [
                ("single-hop", f"Who's teaching {who} the {instrument}?"),
                ("open-domain", f"Which {family} instrument has {who} taken up?"),
                ("paraphrase", f"Has {who} started learning to play anything?"),
            ],
            "handle": "music lessons",
            "done": f"started learning the {instrument}",
            "words": [instrument, teacher],
            "entity": teacher,
        }
    if kind == "vehicle":
        vehicle, make, origin = _pick(rng, VEHICLES)
        colour = _pick(rng, PAINT_COLOURS)
        return {
            "ask": "Did the seller get back to you in the end?",
            "say": f"Collected it this morning: a {colour} {make} {vehicle}, cheaper than my sofa.",
            "react": "Take me for a spin!",
            "callbacks": [f"Washed the {make} for the first time, it gleams."],
            "questions": [
                ("single-hop", f"What colour is the set of wheels {who} just bought?"),
                ("open-domain", f"What {origin}-made thing did {who} pay for second-hand?"),
                ("paraphrase", f"How does {who} get around now, since the purchase?"),
            ],
            "handle": "new wheels",
            "done": "bought some wheels",
            "words": [colour, make, vehicle],
            "entity": f"the {make}",
        }
    if kind == "volunteer":
        place, task = _pick(rng, CHARITIES)
        day = _pick(rng, WEEKEND_MORNINGS)
        return {
            "ask": "Where were you at the weekend? You went quiet.",
            "say": f"I've started helping out at the {place} on {day} mornings, mostly {task}.",
            "react": "That's really good of you.",
            "callbacks": [f"Long shift at the {place}, but people were so grateful."],
            "questions": [
                ("single-hop", f"Where does {who} give up their time for free?"),
                ("temporal", f"Which morning is {who}'s shift at the {place}?"),
                ("paraphrase", f"What unpaid good deed does {who} do on {day}s?"),
            ],
            "handle": "charity shifts",
            "done": f"started at the {place}",
            "words": [place, day],
            "entity": f"the {place}",
        }
    if kind == "lost":
        item, transport = _pick(rng, LOSSES)
        finder = _pick(rng, FINDERS)
        return {
            "ask": "Why did you call me in a panic earlier?",
            "say": f"I left my {item} on the {transport}! A stranger called {finder} "
            "handed it in, faith in humanity restored.",
            "react": "Oh thank goodness. What a kind person.",
            "callbacks": [f"Bought {finder} a bunch of flowers to say thanks."],
            "questions": [
                (
                    "single-hop",
                    f"What was the name of the person who handed in {who}'s {item}?",
                ),
                ("temporal", f"When did {who} leave something on the {transport}?"),
                ("paraphrase", f"What did {who} misplace, that {finder} found?"),
            ],
            "handle": "lost-property scare",
            "done": "got a lost belonging back",
            "words": [item, transport, finder],
            "entity": finder,
        }
    if kind == "garden":
        crop, plain = _pick(rng, CROPS)
        show = _pick(rng, SHOWS)
        return {
            "ask": "How did the judging go?",
            "say": f"My {crop} came second at the {show}! All that watering paid off.",
            "react": "A prize winner! I knew it.",
            "callbacks": [f"Someone asked me for {crop} seeds, I feel like a celebrity."],
            "questions": [
                ("single-hop", f"Which event did {who}'s {crop} win a prize at?"),
                ("open-domain", f"Which {plain} from {who}'s plot impressed the judges?"),
                ("paraphrase", f"Did {who}'s gardening earn an award anywhere?"),
            ],
            "handle": "gardening prize",
            "done": f"won a prize for the {crop}",
            "words": [crop, show],
            "entity": f"the {crop}",
        }
    if kind == "newborn":
        parent = _pick(rng, NEWBORN_PARENTS)
        name = _pick(rng, NEWBORN_NAMES)
        return {
            "ask": "Any news from the hospital?",
            "say": f"My {parent} had the baby at four this morning! {name}, tiny and very loud.",
            "react": "Welcome to the world, little one!",
            "callbacks": [f"Held {name} today, I'm completely smitten."],
            "questions": [
                ("single-hop", f"What's the name of the baby {who}'s {parent} had?"),
                ("temporal", f"When did {name} arrive, the baby {who} told me about?"),
                ("paraphrase", f"Who close to {who} became a parent?"),
            ],
            "handle": "news from the maternity ward",
            "done": "heard a baby was born to someone close",
            "words": [parent, name],
            "entity": name,
        }
    if kind == "exam":
        exam, earns = _pick(rng, EXAMS)
        attempt = _pick(rng, ATTEMPTS)
        return {
            "ask": "Results day, right? Don't leave me hanging.",
            "say": f"Passed my {exam} on the {attempt} go! Never again.",
            "react": "I'm so proud of you. Celebrate tonight!",
            "callbacks": [f"Framed the letter from the {exam}, tacky but I don't care."],
            "questions": [
                ("single-hop", f"Which try was it when {who} got through the {exam}?"),
                ("temporal", f"When did {who} hear about the {exam}?"),
                ("paraphrase", f"What did {who} have to pass to get the {earns}?"),
            ],
            "handle": "exam result",
            "done": f"passed the {exam}",
            "words": [exam, attempt],
            "entity": f"the {exam}",
        }
    if kind == "decorate":
        room, colour = _pick(rng, ROOMS), _pick(rng, PAINT_COLOURS)
        return {
            "ask": "Why do you have paint in your hair in that selfie?",
            "say": f"Spent the whole weekend doing the {room} in {colour}. Two coats, no regrets.",
            "react": "Brave choice! Show me when it's dry.",
            "callbacks": [f"The {room} looks so much bigger now."],
            "questions": [
                ("single-hop", f"What shade did {who} pick for the walls?"),
                ("paraphrase", f"Which part of the home did {who} redo in {colour}?"),
            ],
            "handle": "redecorating",
            "done": "redecorated",
            "words": [room, colour],
            "entity": f"the {room}",
        }
    lake, origin = _pick(rng, LAKES)
    mishap = _pick(rng, CAMPING_MISHAPS)
    return {
        "ask": "How was sleeping under the stars?",
        "say": f"We pitched up by {lake} and on the second night {mishap}. Still beautiful.",
        "react": "Ha, a proper outdoors story then.",
        "callbacks": [f"Dried out the sleeping bags from {lake} at last."],
        "questions": [
            ("temporal", f"When did {who} camp at {lake}?"),
            ("open-domain", f"Which {origin} stretch of water did {who} stay beside?"),
            ("paraphrase", f"What went wrong when {who} slept outdoors?"),
        ],
        "handle": "camping trip",
        "done": f"camped at {lake}",
        "words": [lake, mishap],
        "entity": lake,
    }


HELDOUT_KINDS = [
    "race",
    "music",
    "vehicle",
    "volunteer",
    "lost",
    "garden",
    "newborn",
    "exam",
    "decorate",
    "camping",
]
ORDER_QUESTIONS = [
    "{who} {first}, and {who} also {second}. In what order did those happen?",
    "Remind me of the order: {who} {first} and {who} {second}. Which was earlier?",
    "Was it after {who} {second} that they {first}?",
]
BOTH_QUESTIONS = [
    "What's the latest with {a}'s {a_handle} and {b}'s {b_handle}?",
    "{a} brought up {entity_a} and {b} brought up {entity_b}. What was the story with each?",
]


def _worded_multi_hop(
    rng: random.Random,
    cid: str,
    stated: list[dict],
    *,
    order_questions: list[str],
    both_questions: list[str],
) -> list[dict]:
    """Questions that need two facts of a held-out family, in that family's wordings: the order
    of two facts of one person, and one fact of each person."""
    out = []
    by_person: dict[str, list[dict]] = {}
    for fact in stated:
        by_person.setdefault(fact["who"], []).append(fact)
    for who, facts in by_person.items():
        for first, second in zip(facts[::2], facts[1::2], strict=False):
            out.append(
                {
                    "conversation": cid,
                    "question": _pick(rng, order_questions).format(
                        who=who, first=first["done"], second=second["done"]
                    ),
                    "evidence": [first["evidence"], second["evidence"]],
                    "evidence_words": [first["words"], second["words"]],
                    "category": "multi-hop",
                }
            )
    people = list(by_person)
    if len(people) == 2:
        a, b = _pick(rng, by_person[people[0]]), _pick(rng, by_person[people[1]])
        out.append(
            {
                "conversation": cid,
                "question": _pick(rng, both_questions).format(
                    a=people[0],
                    b=people[1],
                    a_handle=a["handle"],
                    b_handle=b["handle"],
                    entity_a=a["entity"],
                    entity_b=b["entity"],
                ),
                "evidence": [a["evidence"], b["evidence"]],
                "evidence_words": [a["words"], b["words"]],
                "category": "multi-hop",
            }
        )
    return out


# --- the second held-out facts ----------------------------------------------------------------
# A third family, written after the search was tuned, for heldout2.json: its own people, events,
# vocabulary and question wordings, none shared with the facts above (dev's or the first
# held-out set's). Small talk is shared: it is filler.

FRESH_PAIRS = [
    ("Freya", "Kenji"),
    ("Amara", "Lucas"),
    ("Noor", "Declan"),
    ("Maren", "Emeka"),
    ("Ingrid", "Rohan"),
    ("Carmen", "Hugo"),
    ("Esther", "Bilal"),
    ("Daphne", "Santiago"),
]
HAIRCUTS = ["pixie cut", "blunt bob", "buzz cut", "curtain fringe", "shaggy mullet"]
SALONS = ["Snip Snap", "Hair Force One", "Curl Up & Dye", "Fringe Benefits"]
TATTOOS = [
    # (the design, what kind of thing it is, for a question that names only that)
    ("moth", "insect"),
    ("swallow", "bird"),
    ("fern", "plant"),
    ("koi", "fish"),
    ("hedgehog", "animal"),
]
TATTOO_SPOTS = ["forearm", "ribs", "collarbone", "calf", "shoulder blade"]
TATTOO_ARTISTS = ["Juno", "Benedikt", "Lark", "Odette"]
QUIZ_TEAMS = ["Quizteama Aguilera", "Les Quizerables", "The Know-It-Owls", "Agatha Quiztie"]
PUBS = ["Red Lion", "Plough", "Crown and Anchor", "Nag's Head"]
QUIZ_PRIZES = ["a fifty-quid bar tab", "a crate of cider", "a giant tin of biscuits"]
EYESIGHT = ["short-sighted", "long-sighted"]
FRAMES = ["tortoiseshell", "round gold", "thick black", "see-through pink"]
CLASSMATES = ["Fenella", "Rupert", "Tamsin", "Oskar"]
CLASSMATE_CAREERS = [
    # (what they run, where, the same told through what it is)
    ("vineyard", "Bordeaux", "making wine in France"),
    ("ski school", "Chamonix", "teaching skiing in the Alps"),
    ("goat farm", "Crete", "herding goats on a Greek island"),
    ("dive centre", "Zanzibar", "teaching diving off the coast of Tanzania"),
]
COURTS = [
    # (the city, the part of the country it is in)
    ("Leeds", "Yorkshire"),
    ("Cardiff", "Wales"),
    ("Norwich", "Norfolk"),
    ("Exeter", "Devon"),
]
JURY_LENGTHS = ["two weeks", "ten days", "three weeks"]
PRODUCTIONS = [
    # (the title, what it is, its genre)
    ("Wolves of Hartfield", "zombie film", "horror"),
    ("Letters to the Duchess", "period drama", "historical"),
    ("Blue Lamp Road", "police series", "crime"),
    ("Orbit Nine", "space film", "science-fiction"),
]
ALLERGENS = [
    # (what they react to, the group it belongs to)
    ("prawns", "shellfish"),
    ("cashews", "tree nut"),
    ("sesame", "seed"),
    ("kiwi", "fruit"),
]
SYMPTOMS = ["itchy throat", "puffy eyes", "hives"]
SPEEDS = [
    # (how fast, the limit)
    ("thirty-eight", "thirty"),
    ("fifty-three", "forty"),
    ("seventy-nine", "seventy"),
]
ROADS = ["the ring road", "Mill Lane", "the coast road", "Carver Street"]
LEAK_ROOMS = ["bathroom", "utility room", "airing cupboard", "en suite"]
PLUMBERS = ["Gareth", "Bronwen", "Stanislav", "Maeve"]


def _fresh_fact(rng: random.Random, kind: str, who: str) -> dict:
    """One fact of the second held-out family about ``who``, shaped as ``_heldout_fact``'s."""
    if kind == "haircut":
        style, salon = _pick(rng, HAIRCUTS), _pick(rng, SALONS)
        return {
            "ask": "Hold on, is that really you in your new profile picture?",
            "say": _pick(
                rng,
                [
                    f"It is! I finally went for a {style} at {salon}. "
                    "Feels like my head weighs nothing.",
                    f"Yep, that's me with a {style}. {salon} did it and I kept touching it "
                    "on the bus home.",
                ],
            ),
            "react": "It suits you so much, honestly.",
            "callbacks": [
                f"Went back to {salon} for a trim, they remembered me.",
                "Still not used to the cold on my neck in the mornings.",
            ],
            "questions": [
                ("single-hop", f"Where does {who} get their hair done these days?"),
                ("temporal", f"When did {who} change their hairstyle?"),
                (
                    "paraphrase",
                    _pick(
                        rng,
                        [f"Has {who} had a makeover lately?", f"Does {who} look different now?"],
                    ),
                ),
            ],
            "handle": "new haircut",
            "done": "got a new haircut",
            "words": [style, salon],
            "entity": f"the {style}",
        }
    if kind == "tattoo":
        design, group = _pick(rng, TATTOOS)
        spot, artist = _pick(rng, TATTOO_SPOTS), _pick(rng, TATTOO_ARTISTS)
        return {
            "ask": "So did you actually go through with it?",
            "say": _pick(
                rng,
                [
                    f"I did! First tattoo: a little {design} on my {spot}, done by {artist}. "
                    "Barely hurt.",
                    f"Ta-da, a tiny {design} on my {spot}. {artist} at the studio on the high "
                    "street did it.",
                ],
            ),
            "react": "Show me! I've wanted one for years.",
            "callbacks": [f"The {design} on my {spot} has stopped peeling, finally."],
            "questions": [
                ("single-hop", f"Who did the tattoo for {who}?"),
                ("open-domain", f"What sort of {group} does {who} have on their skin now?"),
                ("paraphrase", f"Did {who} get some body art in the end?"),
            ],
            "handle": "tattoo",
            "done": "got a tattoo",
            "words": [design, spot, artist],
            "entity": artist,
        }
    if kind == "quiz":
        team, pub, prize = _pick(rng, QUIZ_TEAMS), _pick(rng, PUBS), _pick(rng, QUIZ_PRIZES)
        return {
            "ask": "How did quiz night go?",
            "say": _pick(
                rng,
                [
                    f"We won! {team} came first at the {pub}, and the prize was {prize}.",
                    f"Top of the table! {team} finally beat the regulars at the {pub}. "
                    f"We walked off with {prize}.",
                ],
            ),
            "react": "Big brains, the lot of you.",
            "callbacks": [
                f"The {pub} quiz was brutal this week, a whole round on flags.",
                f"{team} came dead last tonight. Humbling.",
            ],
            "questions": [
                (
                    "single-hop",
                    _pick(
                        rng,
                        [
                            f"What does {who} call their trivia squad?",
                            f"What name does {who}'s trivia lot play under?",
                        ],
                    ),
                ),
                ("paraphrase", f"Is {who}'s general-knowledge team any good?"),
            ],
            "handle": "quiz team",
            "done": "won a pub quiz",
            "words": [team, pub],
            "entity": team,
        }
    if kind == "glasses":
        sight, frames = _pick(rng, EYESIGHT), _pick(rng, FRAMES)
        return {
            "ask": "Why were you squinting at the menu the other night?",
            "say": _pick(
                rng,
                [
                    f"The optician says I'm {sight}, so I've ordered {frames} frames. "
                    "I'll look like a professor.",
                    f"Eye test done: {sight}, who knew. Picked {frames} frames, collecting "
                    "them next week.",
                ],
            ),
            "react": "Ha, you'll look great in them.",
            "callbacks": [
                f"Wore the {frames} frames to work, three people noticed.",
                "Kept trying to push up glasses I wasn't wearing today.",
            ],
            "questions": [
                ("single-hop", f"Which specs did {who} end up choosing?"),
                ("temporal", f"When did {who} find out they need glasses?"),
                ("paraphrase", f"Does {who}'s vision need correcting?"),
            ],
            "handle": "eyesight",
            "done": "found out they needed glasses",
            "words": [sight, frames],
            "entity": f"the {frames} frames",
        }
    if kind == "reunion":
        classmate = _pick(rng, CLASSMATES)
        business, place, gist = _pick(rng, CLASSMATE_CAREERS)
        return {
            "ask": "So, was the reunion as awkward as you feared?",
            "say": _pick(
                rng,
                [
                    f"Surreal. {classmate} runs a {business} in {place} now! I felt very boring.",
                    f"Two decades since school and {classmate} turns up with a tan, running a "
                    f"{business} in {place}.",
                ],
            ),
            "react": "Ha, there's always one.",
            "callbacks": [
                f"{classmate} sent me a postcard from {place}.",
                "Started a group chat with the old class after the reunion. Chaos.",
            ],
            "questions": [
                ("single-hop", f"What does {classmate} do for a living now, according to {who}?"),
                ("open-domain", f"Which of {who}'s old schoolmates ended up {gist}?"),
                ("paraphrase", f"Did {who} catch up with anyone from their teenage years?"),
            ],
            "handle": "school reunion",
            "done": "went to a school reunion",
            "words": [classmate, business, place],
            "entity": classmate,
        }
    if kind == "jury":
        city, region = _pick(rng, COURTS)
        length = _pick(rng, JURY_LENGTHS)
        return {
            "ask": "What was that brown envelope you were so worried about?",
            "say": f"I've been called up for jury service, {length} at the crown court in {city}. "
            "Can't say a thing about the case.",
            "react": "Wow, civic duty. Good luck staying awake.",
            "callbacks": ["Another day of jury service, the coffee in that building is criminal."],
            "questions": [
                ("single-hop", f"How long has {who} got to serve on the jury?"),
                ("open-domain", f"Which city in {region} has {who} been summoned to for a trial?"),
                ("paraphrase", f"Has {who} been asked to help decide a verdict?"),
            ],
            "handle": "jury service",
            "done": "got called up for jury service",
            "words": ["jury service", length, city],
            "entity": f"the court in {city}",
        }
    if kind == "extra":
        title, production, genre = _pick(rng, PRODUCTIONS)
        return {
            "ask": "Did you get picked from that casting call in the end?",
            "say": _pick(
                rng,
                [
                    f"Spent all day as an extra on {title}, the {production} they're shooting "
                    "in town. Twelve hours for about three seconds on screen.",
                    f"I'm going to be on screen! Well, the back of my head, in {title}. It's a "
                    f"{production}, I played 'person crossing road'.",
                ],
            ),
            "react": "I'll be pausing every frame to find you.",
            "callbacks": [
                f"They've released a trailer for {title}, no sign of me.",
                "Still have the wristband from set on my fridge.",
            ],
            "questions": [
                (
                    "single-hop",
                    f"What's the title of the show or film {who} had a walk-on part in?",
                ),
                ("open-domain", f"Which {genre} production was {who} on set for?"),
                ("paraphrase", f"Will we be able to spot {who} on telly or at the cinema soon?"),
            ],
            "handle": "day as an extra",
            "done": "worked as an extra",
            "words": [title, production],
            "entity": title,
        }
    if kind == "allergy":
        allergen, group = _pick(rng, ALLERGENS)
        symptom = _pick(rng, SYMPTOMS)
        return {
            "ask": "Did the doctor ever work out what was wrong?",
            "say": f"The clinic rang: I'm properly allergic to {allergen}. "
            f"That explains the {symptom} after every takeaway.",
            "react": "Scary, but at least you know now.",
            "callbacks": [f"Checked every label in the supermarket for {allergen}, took an hour."],
            "questions": [
                ("open-domain", f"What kind of {group} does {who} have to avoid now?"),
                ("temporal", f"When did {who} get told they can't have {allergen}?"),
                (
                    "paraphrase",
                    _pick(
                        rng,
                        [
                            f"Is there something {who} shouldn't eat any more?",
                            f"Are there any foods {who} has to stay away from now?",
                        ],
                    ),
                ),
            ],
            "handle": "allergy test",
            "done": "found out about an allergy",
            "words": [allergen, symptom],
            "entity": allergen,
        }
    if kind == "speeding":
        speed, limit = _pick(rng, SPEEDS)
        road = _pick(rng, ROADS)
        return {
            "ask": "Why the grumpy face emoji this morning?",
            "say": f"Got a letter: caught doing {speed} in a {limit} zone on {road}. "
            "Three points and a fine.",
            "react": "Ouch. Cruise control from now on.",
            "callbacks": [
                f"Drove down {road} at a snail's pace today, still paranoid.",
                "Paid the fine today. That hurt.",
            ],
            "questions": [
                ("single-hop", f"How fast was {who} going when the camera caught them?"),
                ("temporal", f"When did {who} get done for speeding?"),
                (
                    "paraphrase",
                    _pick(
                        rng,
                        [
                            f"Is {who} in trouble for driving too quickly?",
                            f"Did {who} get penalised for going over the limit behind the wheel?",
                        ],
                    ),
                ),
            ],
            "handle": "speeding fine",
            "done": "got a speeding fine",
            "words": [speed, road],
            "entity": road,
        }
    room, plumber = _pick(rng, LEAK_ROOMS), _pick(rng, PLUMBERS)
    return {
        "ask": "Are you okay? Your message last night was all capitals.",
        "say": _pick(
            rng,
            [
                f"A pipe burst in the {room} and water came through the ceiling. {plumber} "
                "the plumber was here till midnight.",
                f"Flood at ours! Something in the {room} gave way and {plumber}, the plumber, "
                "saved us at 2am.",
            ],
        ),
        "react": "Nightmare. Is the ceiling going to hold?",
        "callbacks": [
            f"{plumber} came back to check the pipes, all good.",
            "The stain on the ceiling looks like a map of Australia now.",
        ],
        "questions": [
            ("single-hop", f"Who came out to sort {who}'s plumbing emergency?"),
            ("temporal", f"When did {who}'s place get flooded?"),
            (
                "paraphrase",
                _pick(
                    rng,
                    [
                        f"Has {who} had trouble with leaks at home?",
                        f"Did {who} have to deal with a soggy disaster at home?",
                    ],
                ),
            ),
        ],
        "handle": "burst pipe",
        "done": "had a pipe burst",
        "words": [room, plumber],
        "entity": plumber,
    }


FRESH_KINDS = [
    "haircut",
    "tattoo",
    "quiz",
    "glasses",
    "reunion",
    "jury",
    "extra",
    "allergy",
    "speeding",
    "leak",
]
SEQUENCE_QUESTIONS = [
    "Which happened first: {who} {first}, or {who} {second}?",
    "{who} {first} and {who} {second}. Which of those was more recent?",
    "Put these in order for me: {who} {second}; {who} {first}.",
]
PAIR_QUESTIONS = [
    "Any updates on {a}'s {a_handle}, and on {b}'s {b_handle}?",
    "How did things turn out with {entity_a} for {a}, and with {entity_b} for {b}?",
    "Catch me up: what happened with {a}'s {a_handle} and {b}'s {b_handle}?",
]


# --- the third held-out facts -----------------------------------------------------------------
# A fourth family, written for heldout3.json after the search was tuned, its question wordings
# set against a plain BM25 baseline and never against the search: its own people, events,
# vocabulary and question wordings, none shared with the facts above (dev's or either earlier
# held-out set's). Small talk is shared: it is filler.

FOURTH_PAIRS = [
    ("Astrid", "Malik"),
    ("Keira", "Nikolai"),
    ("Phoebe", "Dario"),
    ("Selin", "Gideon"),
    ("Linnea", "Adebayo"),
    ("Rania", "Fergus"),
    ("Harriet", "Yusuf"),
    ("Annika", "Ciaran"),
]
CHOIRS = [
    "Larkspur Singers",
    "Northgate Chorale",
    "St Wilfrid's Choir",
    "Bellfield Community Choir",
]
VOICE_PARTS = ["alto", "tenor", "soprano", "baritone"]
STARTER_NAMES = ["Clint Yeastwood", "Bread Pitt", "Doughy Parton", "Russell Crumb"]
FLOURS = ["rye", "spelt", "wholemeal"]
LODGERS = [
    # (their name, where they grew up, what someone from its country is called)
    ("Ximena", "Guadalajara", "Mexican"),
    ("Bartek", "Gdansk", "Polish"),
    ("Aiko", "Sapporo", "Japanese"),
    ("Thandiwe", "Durban", "South African"),
    ("Lorcan", "Galway", "Irish"),
]
LODGER_JOBS = ["trainee vet", "sound engineer", "nursing student", "tree surgeon"]
CHESS_EVENTS = ["Kettering Congress", "Castleford Open", "Marlow Rapidplay"]
CHESS_SCORES = ["four points out of six", "three and a half out of five", "five out of seven"]
OPENINGS = [
    # (the opening, what it is named after, for a question that names only that)
    ("Sicilian Defence", "a Mediterranean island"),
    ("Scandinavian Defence", "the Nordic countries"),
    ("Catalan Opening", "a corner of north-east Spain"),
    ("Dutch Defence", "the land of windmills and tulips"),
]
COMEDY_CLUBS = ["Giggle Cellar", "Crooked Mic", "Banana Shed", "Chuckle Hut"]
JOKE_TOPICS = ["self-checkout machines", "pigeons", "my mum's texts", "airport security"]
HOUSEPLANTS = [
    # (the plant, where it grows wild)
    ("monstera", "the rainforests of Mexico"),
    ("fiddle-leaf fig", "West Africa"),
    ("rubber plant", "India"),
    ("kentia palm", "an island off Australia"),
]
PLANT_NAMES = ["Gerald", "Sir Leafalot", "Morticia", "Big Steve"]
KAYAK_RIVERS = [
    # (the river, its country)
    ("Dordogne", "France"),
    ("Wye", "Wales"),
    ("Spey", "Scotland"),
    ("Vltava", "the Czech Republic"),
]
KAYAK_MISHAPS = [
    "capsized at the first weir",
    "lost a paddle in the rapids",
    "got wedged on a sandbank",
]
ESCAPE_THEMES = [
    # (the room, the time and place it is set in)
    ("Pharaoh's Tomb", "ancient Egypt"),
    ("Samurai Castle", "feudal Japan"),
    ("Viking Longhouse", "the Norse sagas"),
    ("Tsar's Palace", "imperial Russia"),
]
TIME_LEFT = ["ninety seconds", "four minutes", "eleven minutes"]
BALLOON_PLACES = [
    # (where it flew, the country)
    ("Cappadocia", "Turkey"),
    ("Bagan", "Myanmar"),
    ("the Masai Mara", "Kenya"),
    ("the Loire Valley", "France"),
]
BALLOON_GIVERS = ["my godmother", "Uncle Ambrose", "my grandparents", "the whole office"]
RAFFLE_EVENTS = ["school fete", "hospital fundraiser", "rugby club dinner"]
RAFFLE_PRIZES = ["a spa weekend", "a giant teddy bear", "a pressure cooker", "a signed cricket bat"]


def _fourth_fact(rng: random.Random, kind: str, who: str) -> dict:
    """One fact of the third held-out family about ``who``, shaped as ``_heldout_fact``'s."""
    if kind == "choir":
        choir, part = _pick(rng, CHOIRS), _pick(rng, VOICE_PARTS)
        return {
            "ask": "So? Did they let you in?",
            "say": _pick(
                rng,
                [
                    f"The audition worked! The {choir} took me on as a {part}. "
                    "First rehearsal is in the church hall.",
                    f"Auditioned last night and I'm in: the newest {part} in the {choir}. "
                    "My knees were shaking the whole time.",
                ],
            ),
            "react": "I knew they'd have you. Front row seat at the first concert, please.",
            "callbacks": [
                f"Rehearsal with the {choir} ran late, my throat is wrecked.",
                "We're learning a requiem in Latin. Send help.",
            ],
            "questions": [
                (
                    "single-hop",
                    _pick(
                        rng,
                        [f"Which choir is {who} singing with now?", f"What part does {who} sing?"],
                    ),
                ),
                ("temporal", f"When did {who} audition for the choir?"),
                (
                    "paraphrase",
                    _pick(
                        rng,
                        [
                            f"Is {who} in a singing group these days?",
                            f"Has {who} found somewhere to sing?",
                        ],
                    ),
                ),
            ],
            "handle": "choir audition",
            "done": "got into a choir",
            "words": [choir, part],
            "entity": f"the {choir}",
        }
    if kind == "sourdough":
        name, flour = _pick(rng, STARTER_NAMES), _pick(rng, FLOURS)
        return {
            "ask": "What's that jar on your windowsill in the video?",
            "say": _pick(
                rng,
                [
                    f"It's alive! My sourdough starter, bubbling away. I feed it {flour} flour "
                    f"every morning and it's called {name}.",
                    f"Meet {name}, my sourdough starter: {flour} flour and water that I now "
                    "have to feed like a pet.",
                ],
            ),
            "react": "Ha, I'll expect a loaf when I visit.",
            "callbacks": [
                f"{name} nearly climbed out of the jar overnight.",
                "Baked my first loaf, it could double as a doorstop.",
            ],
            "questions": [
                (
                    "single-hop",
                    _pick(
                        rng,
                        [
                            f"What did {who} name their starter?",
                            f"What flour does {who} use for the starter?",
                        ],
                    ),
                ),
                ("temporal", f"When did {who} get the sourdough going?"),
                ("paraphrase", f"What exactly is {name}, the thing {who} keeps mentioning?"),
            ],
            "handle": "sourdough",
            "done": "started baking their own bread",
            "words": ["sourdough", name, flour],
            "entity": name,
        }
    if kind == "lodger":
        name, town, demonym = _pick(rng, LODGERS)
        job = _pick(rng, LODGER_JOBS)
        return {
            "ask": "Any luck with the advert for the room?",
            "say": _pick(
                rng,
                [
                    f"We've got a lodger at last: {name}, a {job} from {town}. "
                    "Already labels everything in the fridge.",
                    f"Say hello to the new lodger, {name}! A {job}, grew up in {town}, "
                    "makes amazing coffee.",
                ],
            ),
            "react": "Fingers crossed they pay the rent on time.",
            "callbacks": [
                f"{name} cooked dinner for the whole house tonight, what a treat.",
                "Someone keeps finishing my oat milk. I have my suspicions.",
            ],
            "questions": [
                (
                    "single-hop",
                    _pick(
                        rng,
                        [
                            f"What does {who}'s lodger do for work?",
                            f"What's the job of the person living at {who}'s place?",
                        ],
                    ),
                ),
                ("open-domain", f"Who's the {demonym} person that moved into {who}'s spare room?"),
                ("paraphrase", f"How is {who} getting on living with {name}?"),
            ],
            "handle": "lodger",
            "done": "let out their spare room",
            "words": [name, job, town],
            "entity": name,
        }
    if kind == "chess":
        event, score = _pick(rng, CHESS_EVENTS), _pick(rng, CHESS_SCORES)
        opening, named_after = _pick(rng, OPENINGS)
        return {
            "ask": "Were the nerves worth it in the end?",
            "say": _pick(
                rng,
                [
                    f"Chess news: {score} at the {event}, and I won the last round with the "
                    f"{opening}. The old boys at the club are stunned.",
                    f"Back from the {event}! {score.capitalize()}, my best chess ever, and the "
                    f"{opening} won me the final game.",
                ],
            ),
            "react": "Grandmaster in the making, clearly.",
            "callbacks": [
                f"Studying the {opening} every night, my family thinks I've lost it.",
                "Got beaten at chess club by a twelve-year-old. Character building.",
            ],
            "questions": [
                (
                    "single-hop",
                    _pick(
                        rng,
                        [
                            f"How many points did {who} get at the {event}?",
                            f"How did {who} do in the chess tournament?",
                        ],
                    ),
                ),
                ("temporal", f"When was {who}'s chess tournament?"),
                ("open-domain", f"Which opening, named after {named_after}, is {who} so keen on?"),
            ],
            "handle": "chess tournament",
            "done": "played in a chess tournament",
            "words": [event, score, opening],
            "entity": f"the {event}",
        }
    if kind == "standup":
        club, topic = _pick(rng, COMEDY_CLUBS), _pick(rng, JOKE_TOPICS)
        return {
            "ask": "Well? How did it go on stage?",
            "say": _pick(
                rng,
                [
                    f"I did it: five minutes of stand-up at the {club} open mic. The bit about "
                    f"{topic} actually got a laugh!",
                    f"Survived my first open mic! The {club}, a room of forty strangers, and my "
                    f"joke about {topic} landed.",
                ],
            ),
            "react": "You're braver than me. I'd have fainted.",
            "callbacks": [
                f"Signed up for another slot at the {club}, I'm hooked.",
                "Rewrote half my set on the bus this morning.",
            ],
            "questions": [
                (
                    "single-hop",
                    _pick(
                        rng,
                        [
                            f"What was {who}'s comedy routine about?",
                            f"Which joke of {who}'s went down well?",
                        ],
                    ),
                ),
                ("temporal", f"When did {who} do the open mic?"),
                (
                    "paraphrase",
                    _pick(
                        rng,
                        [
                            f"How did {who}'s set at the {club} go?",
                            f"Has {who} been performing comedy anywhere?",
                        ],
                    ),
                ),
            ],
            "handle": "open mic",
            "done": "tried stand-up",
            "words": [club, topic],
            "entity": f"the {club}",
        }
    if kind == "plant":
        plant, native = _pick(rng, HOUSEPLANTS)
        name = _pick(rng, PLANT_NAMES)
        return {
            "ask": "What's that jungle behind you on the video call?",
            "say": _pick(
                rng,
                [
                    f"Meet {name}, my new {plant}. Taller than me, it took two of us to get it "
                    "up the stairs.",
                    f"I've brought home a {plant} from the garden centre and named it {name}. "
                    "It has its own corner now.",
                ],
            ),
            "react": "Gorgeous. Don't drown it like the last one.",
            "callbacks": [
                f"{name} has a new leaf unfurling, I'm so proud.",
                "Repotting the big one left soil all over the carpet.",
            ],
            "questions": [
                (
                    "single-hop",
                    _pick(
                        rng,
                        [
                            f"What's {who}'s {plant} called?",
                            f"What did {who} name the huge plant they bought?",
                        ],
                    ),
                ),
                ("open-domain", f"Which plant that grows wild in {native} does {who} keep?"),
                (
                    "paraphrase",
                    _pick(
                        rng,
                        [
                            f"Has {name} settled in at {who}'s place?",
                            f"Is {who} turning their home into a jungle?",
                        ],
                    ),
                ),
            ],
            "handle": "houseplant",
            "done": "bought a big houseplant",
            "words": [plant, name],
            "entity": name,
        }
    if kind == "kayak":
        river, country = _pick(rng, KAYAK_RIVERS)
        mishap = _pick(rng, KAYAK_MISHAPS)
        return {
            "ask": "You're back! Did you stay dry?",
            "say": _pick(
                rng,
                [
                    f"Three days kayaking down the {river}. I {mishap}, obviously, but the "
                    "scenery was unreal.",
                    f"Not entirely. Kayaked the whole stretch of the {river} and {mishap} "
                    "on day two.",
                ],
            ),
            "react": "Ha, of course you did. Glad you're in one piece.",
            "callbacks": [
                f"Still finding sand from the {river} in my rucksack.",
                "My arms have only just stopped aching from all that paddling.",
            ],
            "questions": [
                (
                    "single-hop",
                    _pick(
                        rng,
                        [
                            f"What went wrong on {who}'s kayaking trip?",
                            f"What mishap did {who} have out on the water?",
                        ],
                    ),
                ),
                ("temporal", f"When did {who} go kayaking?"),
                (
                    "open-domain",
                    _pick(
                        rng,
                        [
                            f"Which river in {country} did {who} paddle down?",
                            f"What river in {country} was {who} out on?",
                        ],
                    ),
                ),
            ],
            "handle": "kayaking trip",
            "done": "went kayaking",
            "words": [river, mishap],
            "entity": f"the {river}",
        }
    if kind == "escape":
        theme, setting = _pick(rng, ESCAPE_THEMES)
        left = _pick(rng, TIME_LEFT)
        return {
            "ask": "Did you lot get out in time?",
            "say": _pick(
                rng,
                [
                    f"Yes! Out of the {theme} escape room with {left} to spare. I was useless "
                    "but the others were geniuses.",
                    f"Escape room done: the {theme} one, cracked with {left} left on the clock.",
                ],
            ),
            "react": "Team of geniuses. I'd still be stuck in there.",
            "callbacks": [
                f"Booked another escape room, apparently the {theme} one was the easy one.",
                "Still annoyed about that last padlock.",
            ],
            "questions": [
                (
                    "single-hop",
                    _pick(
                        rng,
                        [
                            f"How close did {who} cut it in the escape room?",
                            f"Which escape room did {who}'s group do?",
                        ],
                    ),
                ),
                ("open-domain", f"Which escape room set in {setting} did {who}'s group beat?"),
                (
                    "paraphrase",
                    f"Did {who} and friends puzzle their way out before time ran out?",
                ),
            ],
            "handle": "escape room",
            "done": "did an escape room",
            "words": [theme, left],
            "entity": f"the {theme}",
        }
    if kind == "balloon":
        place, country = _pick(rng, BALLOON_PLACES)
        giver = _pick(rng, BALLOON_GIVERS)
        return {
            "ask": "How was the big birthday surprise?",
            "say": _pick(
                rng,
                [
                    f"Hot-air balloon over {place} at sunrise! A present from {giver}, and I "
                    "cried a bit, not going to lie.",
                    f"Went up in a hot-air balloon over {place}, a gift from {giver}. "
                    "Silent, freezing, magical.",
                ],
            ),
            "react": "That's the most romantic thing I've ever heard.",
            "callbacks": [
                f"Printed the sunrise photos from {place}, they're going on the wall.",
                "Still can't believe I stood in a basket that high up.",
            ],
            "questions": [
                (
                    "single-hop",
                    _pick(
                        rng,
                        [
                            f"Who gave {who} the balloon ride?",
                            f"Who treated {who} to that sunrise flight?",
                        ],
                    ),
                ),
                ("open-domain", f"Where in {country} did {who} drift across the sky?"),
                ("paraphrase", f"What was it like for {who}, drifting above {place}?"),
            ],
            "handle": "balloon ride",
            "done": "went up in a hot-air balloon",
            "words": [place, giver],
            "entity": place,
        }
    event, prize = _pick(rng, RAFFLE_EVENTS), _pick(rng, RAFFLE_PRIZES)
    return {
        "ask": "Why are you grinning like that?",
        "say": _pick(
            rng,
            [
                f"I never win anything, but my ticket came up in the {event} raffle: {prize}!",
                f"Guess who won {prize} in the raffle at the {event}? Me!",
            ],
        ),
        "react": "No way! Buy me a lottery ticket next time.",
        "callbacks": [
            f"Still can't believe my luck at the {event}.",
            "Everyone at work wants to borrow my winnings now.",
        ],
        "questions": [
            ("single-hop", f"What did {who} win in the raffle?"),
            (
                "temporal",
                _pick(
                    rng,
                    [
                        f"When was the {event} where {who} got lucky?",
                        f"When did {who}'s raffle ticket come up?",
                    ],
                ),
            ),
            ("paraphrase", f"Has {who} had any luck in a prize draw lately?"),
        ],
        "handle": "raffle",
        "done": "won a raffle",
        "words": [event, prize],
        "entity": f"the {event} raffle",
    }


FOURTH_KINDS = [
    "choir",
    "sourdough",
    "lodger",
    "chess",
    "standup",
    "plant",
    "kayak",
    "escape",
    "balloon",
    "raffle",
]
BEFORE_QUESTIONS = [
    "Was it before or after {who} {second} that {who} {first}?",
    "Which was earlier: {who} {first}, or when they {second}?",
    "I know {who} {first} and also {second}. Which of the two came first?",
]
EACH_QUESTIONS = [
    "How are things going with {a}'s {a_handle}? And {b}'s {b_handle}?",
    "Remind me what {a} said about {entity_a}, and what {b} said about {entity_b}.",
    "I've lost track of {a}'s {a_handle} and {b}'s {b_handle}. Any news on either?",
]


def _small_talk(rng: random.Random) -> str:
    return _pick(rng, SMALL_TALK).format(
        day=_pick(rng, DAY),
        reason=_pick(rng, REASONS),
        thing=_pick(rng, THINGS),
        weather=_pick(rng, WEATHER),
        food=_pick(rng, FOODS),
        topic=_pick(rng, TOPICS),
        place=_pick(rng, PLACES),
        drink=_pick(rng, DRINKS),
    )


def _opener(rng: random.Random) -> str:
    return _pick(rng, OPENERS).format(
        day=_pick(rng, DAY), reason=_pick(rng, REASONS), thing=_pick(rng, THINGS)
    )


def conversation(
    rng: random.Random,
    *,
    cid: str,
    pair: tuple[str, str],
    sessions: int,
    facts_each: int,
    wording: str = "seen",
) -> tuple[dict, list[dict]]:
    """One conversation and its questions, its facts from ``WORDINGS[wording]``."""
    kinds, fact_of, multi_hop = WORDINGS[wording]
    start = datetime(2023, 1, 1) + timedelta(days=rng.randrange(365))
    people = list(pair)
    # Which session states which fact: spread over the conversation, never the first session.
    planned = []
    for who in people:
        for kind in rng.sample(kinds, facts_each):
            planned.append((rng.randrange(1, sessions), who, kind))
    by_session: dict[int, list[tuple[str, str]]] = {}
    for session, who, kind in planned:
        by_session.setdefault(session, []).append((who, kind))

    turns, questions, stated, callbacks_due = [], [], [], []
    day = start
    for session in range(1, sessions + 1):
        day += timedelta(days=rng.randint(2, 9))
        clock = day.replace(hour=rng.choice([8, 12, 18, 19, 20, 21]), minute=rng.randrange(60))
        number = 0
        speaker = rng.randrange(2)

        def add(text: str, who: str, session=session) -> str:
            nonlocal number, clock
            number += 1
            clock += timedelta(minutes=rng.randint(1, 6))
            # Prefixed with the conversation: every conversation has a D1:4, and an evidence id
            # read without its conversation would name another conversation's small talk.
            turn_id = f"{cid}:D{session}:{number}"
            turns.append({"id": turn_id, "ts": clock.isoformat(), "speaker": who, "text": text})
            return turn_id

        add(_opener(rng), people[speaker])
        facts_here = by_session.get(session, [])
        slots = rng.randint(10, 20)
        fact_at = sorted(rng.sample(range(slots), min(len(facts_here), slots)))
        due_now = [c for c in callbacks_due if c[0] <= session]
        callbacks_due = [c for c in callbacks_due if c[0] > session]
        for slot in range(slots):
            speaker = 1 - speaker
            if slot in fact_at:
                who, kind = facts_here[fact_at.index(slot)]
                other = people[1 - people.index(who)]
                fact = fact_of(rng, kind, who)
                add(fact["ask"], other)
                evidence = add(fact["say"], who)
                add(fact["react"], other)
                stated.append({**fact, "who": who, "evidence": evidence, "ts": clock})
                for text in fact["callbacks"]:
                    callbacks_due.append((session + rng.randint(1, 6), who, text))
                for category, question in fact["questions"]:
                    questions.append(
                        {
                            "conversation": cid,
                            "question": question,
                            "evidence": [evidence],
                            "evidence_words": [fact["words"]],
                            "category": category,
                        }
                    )
            elif due_now and rng.random() < 0.5:
                _, who, text = due_now.pop()
                add(text, who)
            else:
                add(_small_talk(rng), people[speaker])
        for _, who, text in due_now:
            add(text, who)
        add(_pick(rng, SMALL_TALK[-3:]), people[1 - speaker])

    questions += multi_hop(rng, cid, stated)
    return {"id": cid, "turns": turns}, questions


def _multi_hop(rng: random.Random, cid: str, stated: list[dict]) -> list[dict]:
    """Questions that need two stated facts: an order in time, or both people at once."""
    out = []
    by_person: dict[str, list[dict]] = {}
    for fact in stated:
        by_person.setdefault(fact["who"], []).append(fact)
    for who, facts in by_person.items():
        for first, second in zip(facts[::2], facts[1::2], strict=False):
            out.append(
                {
                    "conversation": cid,
                    "question": f"Which came first for {who}: {first['handle']} "
                    f"or {second['handle']}?",
                    "evidence": [first["evidence"], second["evidence"]],
                    "evidence_words": [first["words"], second["words"]],
                    "category": "multi-hop",
                }
            )
    people = list(by_person)
    if len(people) == 2:
        a_facts, b_facts = by_person[people[0]], by_person[people[1]]
        for a, b in zip(rng.sample(a_facts, len(a_facts)), b_facts, strict=False):
            out.append(
                {
                    "conversation": cid,
                    "question": f"What links {a['entity']} for {people[0]} "
                    f"and {b['entity']} for {people[1]}?",
                    "evidence": [a["evidence"], b["evidence"]],
                    "evidence_words": [a["words"], b["words"]],
                    "category": "multi-hop",
                }
            )
            break
    return out


# Which facts, and which question wordings, a dataset is made of: the kinds, one fact of a kind,
# and the questions that need two facts.
WORDINGS = {
    "seen": (FACT_KINDS, _fact, _multi_hop),
    "unseen": (
        HELDOUT_KINDS,
        _heldout_fact,
        partial(_worded_multi_hop, order_questions=ORDER_QUESTIONS, both_questions=BOTH_QUESTIONS),
    ),
    "fresh": (
        FRESH_KINDS,
        _fresh_fact,
        partial(
            _worded_multi_hop,
            order_questions=SEQUENCE_QUESTIONS,
            both_questions=PAIR_QUESTIONS,
        ),
    ),
    "fourth": (
        FOURTH_KINDS,
        _fourth_fact,
        partial(
            _worded_multi_hop,
            order_questions=BEFORE_QUESTIONS,
            both_questions=EACH_QUESTIONS,
        ),
    ),
}
# Whose conversations each wording is: every family has its own people.
WORDING_PAIRS = {
    "seen": PAIRS,
    "unseen": HELDOUT_PAIRS,
    "fresh": FRESH_PAIRS,
    "fourth": FOURTH_PAIRS,
}


def dataset(
    *, conversations: int, sessions: int, facts_each: int, seed: int, wording: str = "seen"
) -> dict:
    rng = random.Random(seed)
    pairs = WORDING_PAIRS[wording]
    convs, questions = [], []
    for n in range(conversations):
        conv, qs = conversation(
            rng,
            cid=f"c{n + 1}",
            pair=pairs[n % len(pairs)],
            sessions=sessions,
            facts_each=facts_each,
            wording=wording,
        )
        convs.append(conv)
        questions += qs
    return {"conversations": convs, "questions": questions}


SMALL = {"conversations": 2, "sessions": 8, "facts_each": 3, "seed": 1}
DEV = {"conversations": 8, "sessions": 30, "facts_each": 8, "seed": 3}
LARGE = {"conversations": 8, "sessions": 30, "facts_each": 8, "seed": 2}
HELDOUT = {"conversations": 8, "sessions": 30, "facts_each": 8, "seed": 4, "wording": "unseen"}
HELDOUT2 = {"conversations": 8, "sessions": 30, "facts_each": 8, "seed": 5, "wording": "fresh"}
HELDOUT3 = {"conversations": 8, "sessions": 30, "facts_each": 8, "seed": 6, "wording": "fourth"}
DATASETS = {
    "small": SMALL,
    "dev": DEV,
    "large": LARGE,
    "heldout": HELDOUT,
    "heldout2": HELDOUT2,
    "heldout3": HELDOUT3,
}


def dataset_write(name: str, *, directory: Path) -> dict:
    """Make the named dataset and write it to ``directory / f"{name}.json"``; return it."""
    data = dataset(**DATASETS[name])
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    (directory / f"{name}.json").write_text(text, encoding="utf-8")
    return data
