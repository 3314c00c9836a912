"""Fragment keys: compared regardless of case, and moved from one key to another.

Keys are compared case folded in Python (``str.casefold``), the same on SQLite and PostgreSQL:
``Fragment.key_folded`` holds a key folded, unique, so "biscuit" and "Biscuit" cannot both be
keys. The Gem's writes of fragments fill it in and refuse a case twin in words
(``twin_refusal``).

``key_move`` gives a fragment a new key with everything that points at it following: the rename
action (``gem.services.fragment_rename``) and the migration that renamed the later of two case
twins both run it, given the fragment model to write through (the live one, or a migration's).
"""

import re
from collections.abc import Iterable

# The ``State`` row listing the case twins an upgrade renamed apart (``[{"kept", "renamed",
# "was"}]``), for a person to fold.
CASE_TWINS = "case_twins"


def key_folded(key: str) -> str:
    """A key as keys are compared: case folded."""
    return key.casefold()


def mention(key: str) -> re.Pattern[str]:
    """A ``[key]`` mention in the ambient prose (as written: mentions name the key exactly)."""
    return re.compile(rf"\[{re.escape(key)}\]")


def mentions_repointed(text: str, *, old: str, new: str) -> str:
    """``text`` with every ``[old]`` written ``[new]``."""
    return mention(old).sub(lambda _: f"[{new}]", text)


def twin_refusal(keys: Iterable[str], *, fragment_model, leaving: Iterable[str] = ()) -> str | None:
    """Why fragments of these new ``keys`` cannot be made, in words, or None: a key the same as
    another but for case, among them or beside a fragment already here (other than those whose
    keys are ``leaving``)."""
    seen: dict[str, str] = {}
    for key in keys:
        folded = key_folded(key)
        if folded in seen and seen[folded] != key:
            return f"“{key}” and “{seen[folded]}” are the same key but for case: keep one."
        seen[folded] = key
    held = (
        fragment_model.objects.filter(key_folded__in=list(seen))
        .exclude(key__in=list(leaving))
        .values_list("key", "key_folded")[:1]
    )
    for key, folded in held:
        return f"“{seen[folded]}” is already a fragment, as “{key}”."
    return None


def key_move(*, fragment_model, old: str, new: str, using: str | None = None):
    """Give the fragment ``old`` the key ``new`` (a new row, every field but the key kept), with
    every row that points at it following (edges both ways, sources, working-memory links, the
    Loom's sessions), then remove the old row; returns the new one. ``new`` may differ from
    ``old`` only in case. In the caller's transaction; the ambient prose is the caller's."""
    fragments = fragment_model._default_manager.db_manager(using)
    before = fragments.get(key=old)
    fragments.filter(key=old).update(key_folded=None)  # frees the folded key for the new row
    kept = {
        field.attname: getattr(before, field.attname)
        for field in fragment_model._meta.concrete_fields
        if field.attname not in ("key", "key_folded")
    }
    moved = fragments.create(key=new, key_folded=key_folded(new), **kept)
    for relation in fragment_model._meta.related_objects:
        if relation.many_to_many:
            through = relation.through
            column = through._meta.get_field(relation.field.m2m_reverse_field_name()).attname
            links = through._default_manager.db_manager(using)
            links.filter(**{column: old}).update(**{column: new})
        else:
            rows = relation.related_model._default_manager.db_manager(using)
            rows.filter(**{relation.field.attname: old}).update(**{relation.field.attname: new})
    fragments.filter(key=old).delete()
    return moved
