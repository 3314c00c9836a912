"""Once the identities of the source documents, made on every new installation; a new
installation now starts with none, and one that ran this before keeps the identities it has.

The source documents' seven are in ``gem.source_identities`` for a person who brings them
(``manage.py source_identities``)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("gem", "0001_initial")]

    operations = []
