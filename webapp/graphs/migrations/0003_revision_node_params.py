"""Each revision's node parameters, for the runs list's nodes.<id>.<param> filter and ordering;
existing revisions get theirs from their spec, in batches (no spec is rewritten)."""

from django.db import migrations, models


def fill(apps, schema_editor):
    from webapp.graphs.models import spec_node_params

    GraphRevision = apps.get_model("graphs", "GraphRevision")
    batch = []
    for revision in GraphRevision.objects.only("pk", "spec").iterator(chunk_size=500):
        revision.node_params = spec_node_params(revision.spec)
        batch.append(revision)
        if len(batch) == 500:
            GraphRevision.objects.bulk_update(batch, ["node_params"])
            batch = []
    if batch:
        GraphRevision.objects.bulk_update(batch, ["node_params"])


class Migration(migrations.Migration):
    dependencies = [("graphs", "0002_revision_origin")]

    operations = [
        migrations.AddField(
            model_name="graphrevision",
            name="node_params",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
