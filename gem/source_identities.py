"""The identities of the source documents: the person's five and the companion's two.

An installation starts with none (the set-up asks who talks here); these are for a person who
brings the source documents' conversations (``manage.py source_identities``)."""

SOURCE_IDENTITIES = [
    ("hasuki", "user", "#c4a0d4"),
    ("renki", "user", "#7ab0d4"),
    ("luna", "user", "#b0b0bc"),
    ("chloe", "user", "#d4c478"),
    ("strah", "user", "#9a6b72"),
    ("claude", "companion", "#8b8ec8"),
    ("y'lhara", "companion", "#9fc4b8"),
]
