"""A moment in a template as a person reads it (``silentstar.when``): ``{{ event.ts|when }}``
("6 Dec 2026, 04:34") and ``{{ item.due|when_short }}`` ("6 Dec, 04:34" this year)."""

from django import template

from silentstar.when import when, when_short

register = template.Library()
register.filter("when", when)
register.filter("when_short", when_short)
