"""Metric points move into chunks: one row per 64 steps of a metric, not one per point.

The rollup table becomes MetricBlock and MetricChunk holds the points packed
(webapp/metrics/store.py). Every stored series is moved in step order, its blocks written
again from its points, and then the row-per-point table is dropped. Going back moves every point
into the row-per-point table again (the summaries stay valid: they are of the same points).
"""

import django.db.models.deletion
from django.db import migrations, models


def points_into_blocks(apps, schema_editor):
    from webapp.metrics.store import metric_points_import

    point = apps.get_model("runs", "MetricPoint")
    block = apps.get_model("runs", "MetricBlock")
    for run_id, key in (
        point.objects.order_by("run_id", "key").values_list("run_id", "key").distinct()
    ):
        block.objects.filter(run_id=run_id, key=key).delete()  # made again with the chunks
        rows = (
            point.objects.filter(run_id=run_id, key=key)
            .order_by("step")
            .values_list("step", "epoch", "value", "seq")
            .iterator(chunk_size=50_000)
        )
        metric_points_import(run_id=run_id, key=key, points=rows)


def chunks_into_points(apps, schema_editor):
    import numpy as np

    point = apps.get_model("runs", "MetricPoint")
    chunk = apps.get_model("runs", "MetricChunk")
    rows = chunk.objects.order_by("run_id", "key", "block").values_list(
        "run_id", "key", "steps", "epochs", "values", "seqs"
    )
    batch = []
    for run_id, key, steps, epochs, values, seqs in rows.iterator(chunk_size=1000):
        for step, epoch, value, seq in zip(
            np.frombuffer(bytes(steps), "<i8").tolist(),
            np.frombuffer(bytes(epochs), "<f8").tolist(),
            np.frombuffer(bytes(values), "<f8").tolist(),
            np.frombuffer(bytes(seqs), "<i8").tolist(),
            strict=True,
        ):
            value = None if value != value else value  # NaN: a value stored as null
            batch.append(
                point(run_id=run_id, key=key, step=step, epoch=epoch, value=value, seq=seq)
            )
        if len(batch) >= 5000:
            point.objects.bulk_create(batch)
            batch = []
    point.objects.bulk_create(batch)


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0006_run_import"),
    ]

    operations = [
        migrations.RenameModel("MetricRollup", "MetricBlock"),
        migrations.AlterField(
            model_name="metricblock",
            name="run",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="metric_blocks",
                to="runs.run",
            ),
        ),
        migrations.RemoveConstraint(model_name="metricblock", name="metricrollup_unique_block"),
        migrations.AddConstraint(
            model_name="metricblock",
            constraint=models.UniqueConstraint(
                fields=("run", "key", "level", "block"), name="metricblock_unique_block"
            ),
        ),
        migrations.CreateModel(
            name="MetricChunk",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(max_length=100)),
                ("block", models.BigIntegerField()),
                ("steps", models.BinaryField()),
                ("epochs", models.BinaryField()),
                ("values", models.BinaryField()),
                ("seqs", models.BinaryField()),
                ("min_seq", models.BigIntegerField()),
                ("max_seq", models.BigIntegerField()),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="metric_chunks",
                        to="runs.run",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["run", "max_seq"], name="metricchunk_run_seq")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("run", "key", "block"), name="metricchunk_unique_block"
                    )
                ],
            },
        ),
        migrations.RunPython(points_into_blocks, chunks_into_points),
        migrations.DeleteModel(name="MetricPoint"),
    ]
