"""Admin views of sweeps and their trials (read-mostly: the services own every state change)."""

from django.contrib import admin

from .models import Sweep, SweepTrial


@admin.register(Sweep)
class SweepAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "team", "status", "strategy", "pruner", "budget", "created_at")
    list_filter = ("status", "strategy", "pruner")
    search_fields = ("name",)
    raw_id_fields = ("graph_revision", "dataset", "created_by")


@admin.register(SweepTrial)
class SweepTrialAdmin(admin.ModelAdmin):
    list_display = ("id", "sweep", "number", "state", "value", "run")
    list_filter = ("state",)
    raw_id_fields = ("sweep", "run")
