"""Admin pages for jobs (read only: every change goes through webapp/jobs/services.py)."""

from django.contrib import admin

from .models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "team", "state", "attempts", "subject_id", "created_at", "finished_at"]
    list_filter = ["kind", "state", "team"]
    search_fields = ["kind"]
    readonly_fields = [f.name for f in Job._meta.fields]

    def has_add_permission(self, request) -> bool:  # noqa: ANN001
        return False

    def has_change_permission(self, request, obj=None) -> bool:  # noqa: ANN001
        return False
