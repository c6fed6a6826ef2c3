"""Admin pages for runs, checkpoints and explanations (read-mostly)."""

from django.contrib import admin

from .models import Checkpoint, Explanation, Run, Worker


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "team", "status", "priority", "need_kind", "need_devices", "step", "total_steps",
                    "attempts", "worker", "device", "created_at"]
    list_filter = ["status", "team", "need_kind"]
    search_fields = ["id", "worker"]
    readonly_fields = ["lease_token", "lease_expires_at", "heartbeat_at", "event_seq", "attempts"]


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ["hostname", "kind", "capacity", "current_run", "last_seen", "started_at"]
    list_filter = ["kind"]
    search_fields = ["hostname"]
    readonly_fields = ["current_run"]


@admin.register(Checkpoint)
class CheckpointAdmin(admin.ModelAdmin):
    list_display = ["run", "step", "epoch", "path", "created_at"]


@admin.register(Explanation)
class ExplanationAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "method", "status", "created_at"]
    list_filter = ["status", "method"]
