"""Admin pages of the registry (versions and the alias history are read-only)."""

from django.contrib import admin

from .models import AliasMove, ModelVersion, RegisteredModel


@admin.register(RegisteredModel)
class RegisteredModelAdmin(admin.ModelAdmin):
    list_display = ["name", "team", "created_by", "updated_at"]
    list_filter = ["team"]
    search_fields = ["name", "description"]


@admin.register(ModelVersion)
class ModelVersionAdmin(admin.ModelAdmin):
    list_display = ["model", "number", "run", "created_by", "created_at"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(AliasMove)
class AliasMoveAdmin(admin.ModelAdmin):
    list_display = ["model", "alias", "from_version", "to_version", "actor", "at"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
