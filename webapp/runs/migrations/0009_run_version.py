"""A run's `version` (the detail's cache key) in place of the read generation and its triggers.

The triggers of 0008 are dropped on PostgreSQL before the table they wrote goes.
"""

from django.db import migrations, models

from ._read_generation_triggers import create_triggers, drop_triggers


class Migration(migrations.Migration):
    dependencies = [("runs", "0008_read_generation")]

    operations = [
        migrations.AddField(model_name="run", name="version", field=models.BigIntegerField(default=0)),
        migrations.RunPython(drop_triggers, create_triggers),
        migrations.DeleteModel(name="ReadGeneration"),
    ]
