"""The Anvil: the admin, where a person curates memory. Every write to fragments, edges and ambient
prose, and every promotion of a suggestion, is made here and recorded in the admin log. Each page
is a thin view over a service (``gem/services.py``, ``mirror/services.py``) or a read.

The registrations live in modules named for what they curate; importing them registers them.
"""

from anvil import (  # noqa: F401  (each module registers its models' pages)
    bridges,
    compass,
    conversation,
    fragments,
    loom,
    push,
    records,
    suggestions,
    versions,
    working_memory,
)
