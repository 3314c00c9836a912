"""``manage.py source_identities``: the source documents' seven identities, for a person who
brings their conversations (the legacy import names its speakers by them)."""

from django.core.management.base import BaseCommand

from gem.models import Identity
from gem.services import IdentityRow, identities_set
from gem.source_identities import SOURCE_IDENTITIES
from silentstar.words import counted


class Command(BaseCommand):
    help = (
        "Add the source documents' identities (hasuki, renki, luna, chloe and strah for you; "
        "claude and y'lhara for the companion). The identities here stay as they are; a name "
        "already here is not added again."
    )

    def handle(self, *args, **options):
        here = [
            IdentityRow(id=pk, name=name, side=side, color=color)
            for pk, name, side, color in Identity.objects.order_by("id").values_list(
                "id", "name", "side", "color"
            )
        ]
        taken = {row.name.casefold() for row in here}
        added = [
            IdentityRow(name=name, side=side, color=color)
            for name, side, color in SOURCE_IDENTITIES
            if name.casefold() not in taken
        ]
        if not added:
            self.stdout.write("The source documents' identities are all here already.")
            return
        identities_set(identities=here + added)
        names = ", ".join(row.name for row in added)
        self.stdout.write(f"Added {counted(len(added), 'identity', 'identities')}: {names}.")
