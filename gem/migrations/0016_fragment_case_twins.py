"""Keys folded, and case twins renamed apart so that a folded key is unique (0017).

Two fragments whose keys differ only in case ("biscuit", "Biscuit") stay two fragments: the
later one (by ``created_at``, then key) is renamed as the rename action renames
(``gem.keys.key_move``: its edges, sources, working-memory links and Loom sessions follow, and
its ``[key]`` mentions in the ambient prose, in one new version of it), to its key with ``-2``
(or the next number free), and the pair is kept in ``State`` (``gem.keys.CASE_TWINS``) for the
Anvil to offer folding. No row is lost.
"""

import json
from collections import defaultdict

from django.db import migrations
from django.utils import timezone

from gem.keys import CASE_TWINS, key_folded, key_move, mentions_repointed

KEY_MAX_LENGTH = 100
BATCH = 1_000


def _key_free(key: str, taken: set[str]) -> str:
    """``key`` with the first ``-n`` (from 2) whose folded key is not ``taken``."""
    number = 2
    while True:
        suffix = f"-{number}"
        candidate = key[: KEY_MAX_LENGTH - len(suffix)] + suffix
        if key_folded(candidate) not in taken:
            return candidate
        number += 1


def case_twins_renamed(apps, schema_editor):
    alias = schema_editor.connection.alias
    fragment = apps.get_model("gem", "Fragment")
    fragments = fragment.objects.using(alias)
    twins = defaultdict(list)
    # Ordered in Python: PostgreSQL's collation may order keys apart from their case.
    for _, key in sorted(fragments.values_list("created_at", "key")):
        twins[key_folded(key)].append(key)
    taken = set(twins)
    pairs, renamed = [], {}
    for kept, *later in (keys for keys in twins.values() if len(keys) > 1):
        for key in later:
            new = _key_free(key, taken)
            taken.add(key_folded(new))
            key_move(fragment_model=fragment, old=key, new=new, using=alias)
            renamed[key] = new
            pairs.append({"kept": kept, "renamed": new, "was": key})
    unfolded = list(fragments.filter(key_folded__isnull=True).only("key"))
    for row in unfolded:
        row.key_folded = key_folded(row.key)
    fragments.bulk_update(unfolded, ["key_folded"], batch_size=BATCH)
    if not pairs:
        return
    prose = apps.get_model("gem", "AmbientProse").objects.using(alias)
    current = prose.order_by("-created_at", "-id").first()
    if current is not None:
        text = current.content
        for old, new in renamed.items():
            text = mentions_repointed(text, old=old, new=new)
        if text != current.content:
            prose.create(content=text, created_at=timezone.now())
    state = apps.get_model("gem", "State").objects.using(alias)
    state.update_or_create(key=CASE_TWINS, defaults={"value": json.dumps(pairs)})


class Migration(migrations.Migration):
    dependencies = [
        ("gem", "0015_fragment_key_folded"),
        # The Loom's sessions name fragments: they follow a renamed twin too.
        ("loom", "0003_call_draft_base"),
    ]

    operations = [
        migrations.RunPython(case_twins_renamed, migrations.RunPython.noop, elidable=False),
    ]
