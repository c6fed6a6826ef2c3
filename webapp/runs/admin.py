"""Admin pages for runs, checkpoints and explanations (read-mostly)."""

from django.contrib import admin

from .models import Checkpoint, Explanation, Run


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "team", "status", "step", "total_steps", "attempts", "worker", "created_at"]
    list_filter = ["status", "team"]
    search_fields = ["id", "worker"]
    readonly_fields = ["lease_token", "lease_expires_at", "heartbeat_at", "event_seq", "attempts"]


@admin.register(Checkpoint)
class CheckpointAdmin(admin.ModelAdmin):
    list_display = ["run", "step", "epoch", "path", "created_at"]


@admin.register(Explanation)
class ExplanationAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "method", "status", "created_at"]
    list_filter = ["status", "method"]
