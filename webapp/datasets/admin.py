"""Admin pages for datasets."""

from django.contrib import admin

from .models import Dataset


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "kind", "status", "size", "created_by", "created_at"]
    list_filter = ["kind", "status", "team"]
    search_fields = ["name", "original_filename"]
    readonly_fields = ["recipe", "summary", "error", "file", "size", "created_at", "updated_at"]
