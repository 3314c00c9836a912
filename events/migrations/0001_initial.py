"""The event log and the turns move from the Heart into this app, keeping their tables; their
content types follow, so the admin log's entries about them still point at them."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models, router


MOVED = ("event", "eventtag", "turn")


def _content_types_relabel(apps, schema_editor, *, old: str, new: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    alias = schema_editor.connection.alias
    if not router.allow_migrate_model(alias, content_type):
        return
    types = content_type.objects.using(alias)
    for model in MOVED:
        if not types.filter(app_label=new, model=model).exists():
            types.filter(app_label=old, model=model).update(app_label=new)


def content_types_moved(apps, schema_editor):
    _content_types_relabel(apps, schema_editor, old="heart", new="events")


def content_types_back(apps, schema_editor):
    _content_types_relabel(apps, schema_editor, old="events", new="heart")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("heart", "0003_turn_heartbeat"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        # The models came from the Heart with their tables: the state moves, no table does.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Event',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('ts', models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                        ('content', models.TextField()),
                        ('actor', models.CharField(blank=True, db_index=True, max_length=64)),
                        ('image', models.FileField(blank=True, max_length=255, upload_to='images/%Y/%m/')),
                    ],
                    options={
                        'db_table': 'heart_event',
                        'ordering': ['ts', 'id'],
                    },
                ),
                migrations.CreateModel(
                    name='EventTag',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('tag', models.CharField(db_index=True, max_length=64)),
                        ('event', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='tags', to='events.event')),
                    ],
                    options={
                        'db_table': 'heart_eventtag',
                        'constraints': [models.UniqueConstraint(fields=('event', 'tag'), name='heart_eventtag_unique_event_tag')],
                    },
                ),
                migrations.CreateModel(
                    name='Turn',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('done', 'Done'), ('error', 'Error')], db_index=True, default='queued', max_length=8)),
                        ('number', models.PositiveIntegerField(help_text='The turn counter when this message arrived.')),
                        ('partial_text', models.TextField(blank=True, help_text='Reply text received so far while streaming.')),
                        ('error', models.TextField(blank=True)),
                        ('attempts', models.PositiveSmallIntegerField(default=0)),
                        ('model', models.CharField(blank=True, max_length=100)),
                        ('queued_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('heartbeat_at', models.DateTimeField(blank=True, help_text='Last sign of life of the worker answering: its claim, then each streamed save.', null=True)),
                        ('first_token_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('input_tokens', models.PositiveIntegerField(blank=True, null=True)),
                        ('output_tokens', models.PositiveIntegerField(blank=True, null=True)),
                        ('cache_read_tokens', models.PositiveIntegerField(blank=True, null=True)),
                        ('cache_write_tokens', models.PositiveIntegerField(blank=True, null=True)),
                        ('event', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, related_name='turn', to='events.event')),
                        ('reply_event', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='reply_to_turn', to='events.event')),
                    ],
                    options={
                        'db_table': 'heart_turn',
                        'ordering': ['queued_at', 'id'],
                        'constraints': [models.CheckConstraint(condition=models.Q(('status__in', ['queued', 'running', 'done', 'error'])), name='heart_turn_status_valid')],
                    },
                ),
    ],
            database_operations=[],
        ),
        # Content types live in the default store, not in this app's.
        migrations.RunPython(content_types_moved, content_types_back, hints={"store": "default"}),
    ]
