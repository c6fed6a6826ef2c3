"""The read generation (models.ReadGeneration) and, on PostgreSQL, the triggers that move it.

Each trigger sets the one row to a value it has never had, the next of a sequence of its own,
inside the writing transaction (upserted: a flushed table gets it back), so a reader sees the new
value in the same snapshot as the change, and a second change in one transaction moves it again
(the transaction's id would not: a read between the two would be taken for current after both).
The sequence belongs to no table, so nothing that empties or resets the tables restarts it.
Token and user updates count unless only the time of last use / last login changed (a token's use
is recorded once a minute, a sign-in records last_login: neither changes what a read may see).
"""

from django.conf import settings
from django.db import migrations, models

from ._read_generation_triggers import create_triggers, drop_triggers


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0007_metric_blocks"),
        ("accounts", "0002_scheduling"),
        ("graphs", "0002_revision_origin"),
        ("datasets", "0002_dataset_progress"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ReadGeneration",
            fields=[
                ("id", models.PositiveSmallIntegerField(primary_key=True, serialize=False)),
                ("value", models.BigIntegerField()),
            ],
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
