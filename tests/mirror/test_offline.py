"""The offline Mirror (``mirror.offline``): pure, extractive, labelled."""

from mirror.offline import OFFLINE_LABEL, answer
from mirror.output import output_parse

CHUNK = "\n".join(
    [
        "#1 luna: I always forget the keys.",
        "#2 claude (say): I know.",
        "#2 claude (do): She laughs. Then she hands them over.",
        "#2 claude (narrate): The door clicks.",
        "#3 luna: thanks",
        "#3 luna: thanks",
    ]
)


def test_it_cleans_by_collapsing_repeats_only():
    assert answer("clean", [("Chunk", CHUNK)]).splitlines()[-1] == "#3 luna: thanks"
    assert answer("clean", [("Chunk", CHUNK)]).count("thanks") == 1


def test_it_compresses_action_and_keeps_every_say():
    compressed = answer("compress", [("Chunk, cleaned", CHUNK)])
    assert "#2 claude (say): I know." in compressed
    assert "#2 claude (do): She laughs." in compressed
    assert "door clicks" not in compressed


def test_it_summarises_extractively_with_a_label_and_pin_suggestions():
    output = output_parse(
        answer("summarise", [("Context (read only)", "#0 luna: old"), ("Chunk, cleaned", CHUNK)])
    )
    assert output.shape.startswith(OFFLINE_LABEL)
    assert "old" not in output.content  # context is not summarised
    assert [(s.type, s.content) for s in output.suggestions] == [
        ("pin", "I always forget the keys.")
    ]


def test_it_merges_the_shapes_of_its_parts():
    merged = output_parse(answer("merge", [("Summaries to merge", "### L0\nOne.\n### L0\nTwo.")]))
    assert merged.shape == f"{OFFLINE_LABEL} 2 summaries merged."
    assert merged.notes == ("- One.", "- Two.")
