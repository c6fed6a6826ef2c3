"""Runs get a name, notes, tags and where their weights start; checkpoints are keyed by folder name
(the `best` folder shares its step with an epoch folder) and keep their validation metrics;
a sweep's pruned trial has a status of its own."""

from pathlib import PurePath

from django.db import migrations, models


def name_checkpoints(apps, schema_editor):
    Checkpoint = apps.get_model("runs", "Checkpoint")
    for checkpoint in Checkpoint.objects.all().only("pk", "path", "step"):
        name = PurePath(checkpoint.path).name or f"step-{checkpoint.step:07d}"
        Checkpoint.objects.filter(pk=checkpoint.pk).update(name=name)


class Migration(migrations.Migration):
    dependencies = [("runs", "0003_metric_rollups")]

    operations = [
        migrations.AddField(model_name="run", name="name",
                            field=models.CharField(blank=True, default="", max_length=200)),
        migrations.AddField(model_name="run", name="notes", field=models.TextField(blank=True, default="")),
        migrations.AddField(model_name="run", name="tags", field=models.JSONField(blank=True, default=list)),
        migrations.AddField(model_name="run", name="init", field=models.JSONField(blank=True, default=dict)),
        migrations.AddField(model_name="run", name="origin", field=models.JSONField(blank=True, default=dict)),
        migrations.AlterField(
            model_name="run", name="status",
            field=models.CharField(
                choices=[("queued", "Queued"), ("running", "Running"), ("succeeded", "Succeeded"),
                         ("failed", "Failed"), ("cancelled", "Cancelled"), ("interrupted", "Interrupted"),
                         ("pruned", "Pruned")],
                db_index=True, default="queued", max_length=12),
        ),
        migrations.AddField(model_name="checkpoint", name="name",
                            field=models.CharField(default="", max_length=100), preserve_default=False),
        migrations.AddField(model_name="checkpoint", name="metrics",
                            field=models.JSONField(blank=True, default=dict)),
        migrations.RunPython(name_checkpoints, migrations.RunPython.noop),
        migrations.RemoveConstraint(model_name="checkpoint", name="checkpoint_unique_run_step"),
        migrations.AddConstraint(
            model_name="checkpoint",
            constraint=models.UniqueConstraint(fields=("run", "name"), name="checkpoint_unique_run_name"),
        ),
        migrations.AlterModelOptions(name="checkpoint", options={"ordering": ["run_id", "step", "name"]}),
    ]
