import datetime

import django.utils.timezone
from django.db import migrations


def jobs_for_unfinished_work(apps, schema_editor):
    """Exports and explanations become jobs (webapp/jobs). Work an older server left unfinished was
    sent as a `runs.export`/`runs.explain` task that nothing takes any more: give each a queued
    job whose send is owed, so the reaper sends it. A failed export keeps its outcome as a failed
    job (kept as long as any finished job); a ready one needs none (its files say so)."""
    Run = apps.get_model("runs", "Run")
    Explanation = apps.get_model("runs", "Explanation")
    Job = apps.get_model("jobs", "Job")
    now = django.utils.timezone.now()
    succeeded = Run.objects.filter(status="succeeded")
    pending = succeeded.filter(export_status="pending").values_list("pk", "team_id", "created_by_id")
    Job.objects.bulk_create(
        Job(kind="runs.export", team_id=team_id, owner_id=owner_id, subject_id=run_id,
            max_attempts=3, send_owed=True, sent_at=now, created_at=now)
        for run_id, team_id, owner_id in pending
    )
    failed = succeeded.filter(export_status="failed").values_list("pk", "team_id", "created_by_id", "export_error")
    Job.objects.bulk_create(
        Job(kind="runs.export", team_id=team_id, owner_id=owner_id, subject_id=run_id, state="failed",
            max_attempts=3, attempts=1, error={"message": error or "the export failed", "code": "export_failed"},
            created_at=now, finished_at=now, expires_at=now + datetime.timedelta(days=7))
        for run_id, team_id, owner_id, error in failed
    )
    unfinished = Explanation.objects.filter(status__in=["queued", "running"]).values_list(
        "pk", "run__team_id", "created_by_id"
    )
    Job.objects.bulk_create(
        Job(kind="runs.explain", team_id=team_id, owner_id=owner_id, subject_id=explanation_id,
            max_attempts=3, send_owed=True, sent_at=now, created_at=now)
        for explanation_id, team_id, owner_id in unfinished
    )


class Migration(migrations.Migration):

    dependencies = [
        ("jobs", "0001_initial"),
        ("runs", "0010_metric_store_to_metrics"),
    ]

    operations = [
        migrations.RunPython(jobs_for_unfinished_work, migrations.RunPython.noop),
        migrations.RemoveField(model_name="explanation", name="sent_at"),
        migrations.RemoveField(model_name="run", name="export_error"),
        migrations.RemoveField(model_name="run", name="export_requested_at"),
        migrations.RemoveField(model_name="run", name="export_requests"),
        migrations.RemoveField(model_name="run", name="export_sent_at"),
        migrations.RemoveField(model_name="run", name="export_status"),
    ]
