"""Revisions made by a sweep (architecture variants) say so, and are never a graph's latest."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("graphs", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="graphrevision", name="origin",
            field=models.CharField(blank=True, default="", max_length=100),
        ),
    ]
