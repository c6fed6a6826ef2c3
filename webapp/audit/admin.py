"""The audit log in the Django admin: read-only (nothing adds, changes or deletes an entry)."""

from django.contrib import admin

from .models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ["at", "team_name", "actor_name", "action", "object_type", "object_id", "object_repr"]
    list_filter = ["action", "team"]
    search_fields = ["actor_name", "action", "object_repr", "object_id"]
    date_hierarchy = "at"

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
