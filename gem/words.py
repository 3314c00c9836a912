"""Common English words that say little about what a text is about.

Pure: no imports at all. One list for the whole project: lifecycle matching and duplicate
suggestions (``gem.match``) compare the words left without them, the search (``lens.search``)
drops them from a query, and the offline companion (``heart.offline``) skips them when it looks
up what a person asked it to remember. Besides the usual function words it holds the light
verbs of talk ("go", "say", "tell", "mention"), which match small talk far more than facts.
"""

STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each else ever few for from
    further get got had has have having he her here hers herself him himself his how i if in into
    is it its itself just me mention mentioned might more most must my myself no nor not now of
    off on once only or other our ours ourselves out over own said same say says she should so
    some such tell than that the their theirs them themselves then there these they this those
    through to too under until up very was we were what when where which while who whom whose why
    will with would you your yours yourself yourselves
    go goes going gone went
    """.split()
)
