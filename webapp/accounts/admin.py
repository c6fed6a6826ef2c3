"""Admin pages for teams, memberships and API tokens."""

from django.contrib import admin

from .models import ApiToken, Membership, OidcIdentity, Team


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "max_concurrent_runs", "max_devices_per_run", "created_at"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "team", "role", "created_at"]
    list_filter = ["role", "team"]
    search_fields = ["user__username", "team__name"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    # The hash is useless to a person and the secret is never stored: show neither.
    list_display = [
        "prefix",
        "user",
        "name",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["revoked_at"]
    search_fields = ["user__username", "name", "prefix"]
    exclude = ["token_hash"]
    readonly_fields = ["prefix", "user", "created_at", "last_used_at"]

    def has_add_permission(self, request):  # tokens are made through the API (plaintext shown once)
        return False


@admin.register(OidcIdentity)
class OidcIdentityAdmin(admin.ModelAdmin):
    """Who signed in with SSO as whom; deleting a row lets that provider account match afresh."""

    list_display = ["user", "subject", "issuer", "created_at", "last_sign_in_at"]
    search_fields = ["user__username", "subject"]
    readonly_fields = ["user", "issuer", "subject", "created_at", "last_sign_in_at"]
