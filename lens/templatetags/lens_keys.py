"""The fragment keys the Lens's key box completes: ``{% fragment_keys as keys %}``."""

from django import template

from gem.models import Fragment

register = template.Library()

KEYS_COMPLETED = 1000  # the first keys by name; a longer list is found by typing more


@register.simple_tag
def fragment_keys() -> list[str]:
    return list(
        Fragment.objects.order_by("key_folded", "key").values_list("key", flat=True)[
            :KEYS_COMPLETED
        ]
    )
