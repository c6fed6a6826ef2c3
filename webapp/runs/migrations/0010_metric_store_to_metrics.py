"""MetricBlock and MetricChunk belong to the metrics app (webapp/metrics) from here on.

State only: the tables, their rows, constraints and indexes stay as they are (runs_metricblock,
runs_metricchunk); metrics' 0001_initial takes the same tables into its state.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("runs", "0009_run_version")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(model_name="metricchunk", name="run"),
                migrations.DeleteModel(name="MetricBlock"),
                migrations.DeleteModel(name="MetricChunk"),
            ],
            database_operations=[],
        ),
    ]
