"""Admin pages for blocks and their versions (versions are read-only)."""

from django.contrib import admin

from .models import Block, BlockVersion


class BlockVersionInline(admin.TabularInline):
    model = BlockVersion
    extra = 0
    fields = ["number", "note", "created_by", "created_at"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Block)
class BlockAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "created_by", "updated_at"]
    list_filter = ["team"]
    search_fields = ["name", "description"]
    inlines = [BlockVersionInline]


@admin.register(BlockVersion)
class BlockVersionAdmin(admin.ModelAdmin):
    list_display = ["block", "number", "note", "created_by", "created_at"]
    search_fields = ["block__name", "note"]

    def get_readonly_fields(self, request, obj=None):
        # Versions are immutable: graphs embed copies of their definitions.
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request):
        return False
