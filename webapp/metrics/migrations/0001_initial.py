"""The metric store's tables, taken over from the runs app as they are.

State only: runs' 0010_metric_store_to_metrics lets go of the same tables; no row is rewritten and
the tables keep their names (Meta.db_table).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("runs", "0010_metric_store_to_metrics"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="MetricBlock",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("key", models.CharField(max_length=100)),
                        ("level", models.PositiveSmallIntegerField()),
                        ("block", models.BigIntegerField()),
                        ("n", models.IntegerField()),
                        ("first_step", models.BigIntegerField()),
                        ("first_epoch", models.FloatField()),
                        ("first_value", models.FloatField(null=True)),
                        ("last_step", models.BigIntegerField()),
                        ("last_epoch", models.FloatField()),
                        ("last_value", models.FloatField(null=True)),
                        ("min_step", models.BigIntegerField(null=True)),
                        ("min_epoch", models.FloatField(null=True)),
                        ("min_value", models.FloatField(null=True)),
                        ("max_step", models.BigIntegerField(null=True)),
                        ("max_epoch", models.FloatField(null=True)),
                        ("max_value", models.FloatField(null=True)),
                        ("run", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="metric_blocks", to="runs.run")),
                    ],
                    options={
                        "db_table": "runs_metricblock",
                        "constraints": [models.UniqueConstraint(fields=("run", "key", "level", "block"), name="metricblock_unique_block")],
                    },
                ),
                migrations.CreateModel(
                    name="MetricChunk",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("key", models.CharField(max_length=100)),
                        ("block", models.BigIntegerField()),
                        ("steps", models.BinaryField()),
                        ("epochs", models.BinaryField()),
                        ("values", models.BinaryField()),
                        ("seqs", models.BinaryField()),
                        ("min_seq", models.BigIntegerField()),
                        ("max_seq", models.BigIntegerField()),
                        ("run", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="metric_chunks", to="runs.run")),
                    ],
                    options={
                        "db_table": "runs_metricchunk",
                        "indexes": [models.Index(fields=["run", "max_seq"], name="metricchunk_run_seq")],
                        "constraints": [models.UniqueConstraint(fields=("run", "key", "block"), name="metricchunk_unique_block")],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
