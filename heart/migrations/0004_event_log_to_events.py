"""The event log and the turns leave the Heart for the events app (their tables stay)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('heart', '0003_turn_heartbeat'),
        ('events', '0001_initial'),
    ]

    operations = [
        # The event log and the turns went to the events app with their tables: only the state
        # forgets them here.
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(
                    model_name='eventtag',
                    name='heart_eventtag_unique_event_tag',
                ),
                migrations.RemoveConstraint(
                    model_name='turn',
                    name='heart_turn_status_valid',
                ),
                migrations.RemoveField(
                    model_name='turn',
                    name='event',
                ),
                migrations.RemoveField(
                    model_name='turn',
                    name='reply_event',
                ),
                migrations.DeleteModel(
                    name='EventTag',
                ),
                migrations.DeleteModel(
                    name='Event',
                ),
                migrations.DeleteModel(
                    name='Turn',
                ),
    ],
            database_operations=[],
        ),
    ]
