"""Admin pages for graphs and their revisions (revisions are read-only)."""

from django.contrib import admin

from .models import Graph, GraphRevision


class GraphRevisionInline(admin.TabularInline):
    model = GraphRevision
    extra = 0
    fields = ["number", "spec_hash", "valid", "error_count", "created_by", "created_at"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Graph)
class GraphAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "created_by", "updated_at"]
    list_filter = ["team"]
    search_fields = ["name"]
    inlines = [GraphRevisionInline]


@admin.register(GraphRevision)
class GraphRevisionAdmin(admin.ModelAdmin):
    list_display = ["graph", "number", "valid", "error_count", "created_by", "created_at"]
    list_filter = ["valid"]
    search_fields = ["graph__name", "spec_hash"]

    def get_readonly_fields(self, request, obj=None):
        # Revisions are immutable: runs and exports point at them.
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request):
        return False
