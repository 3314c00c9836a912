"""A number said with its noun, the one way the project says "1 turn" and "2 turns".

Pure: standard library only, no Django, so the assembler, the Mirror's offline passes and the
pages all say counts the same way.
"""


def counted(number: int, one: str, many: str = "") -> str:
    """``number`` and its noun, singular for exactly one: "1 turn", "0 turns", "1,200 turns";
    ``many`` for a plural not made with an "s" ("summaries", "notes over the limit")."""
    return f"{number:,} {one if number == 1 else many or one + 's'}"
