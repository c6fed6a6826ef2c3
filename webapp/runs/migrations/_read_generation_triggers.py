"""The PostgreSQL triggers of migration 0008 (made there, dropped by 0009), kept for both."""

from django.conf import settings

FUNCTION = "netloom_read_generation_bump"
SEQUENCE = "netloom_read_generation_seq"

# (trigger name, table's app label and model, events, WHEN condition or "")
TRIGGERS = (
    ("netloom_rg_token_update", ("accounts", "ApiToken"), "UPDATE",
     "(to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at')"),
    ("netloom_rg_token_delete", ("accounts", "ApiToken"), "DELETE", ""),
    ("netloom_rg_user_update", tuple(settings.AUTH_USER_MODEL.split(".")), "UPDATE",
     "(to_jsonb(OLD) - 'last_login') IS DISTINCT FROM (to_jsonb(NEW) - 'last_login')"),
    ("netloom_rg_user_delete", tuple(settings.AUTH_USER_MODEL.split(".")), "DELETE", ""),
    ("netloom_rg_membership", ("accounts", "Membership"), "INSERT OR UPDATE OR DELETE", ""),
    ("netloom_rg_graph_update", ("graphs", "Graph"), "UPDATE", "OLD.name IS DISTINCT FROM NEW.name"),
    ("netloom_rg_graph_delete", ("graphs", "Graph"), "DELETE", ""),
    ("netloom_rg_dataset_update", ("datasets", "Dataset"), "UPDATE", "OLD.name IS DISTINCT FROM NEW.name"),
    ("netloom_rg_dataset_delete", ("datasets", "Dataset"), "DELETE", ""),
)


def _table(apps, label):
    return apps.get_model(*label)._meta.db_table


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    q = schema_editor.quote_name
    generation = q(_table(apps, ("runs", "ReadGeneration")))
    schema_editor.execute(f"CREATE SEQUENCE IF NOT EXISTS {SEQUENCE}")
    schema_editor.execute(
        f"CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"INSERT INTO {generation} (id, value) VALUES (1, nextval('{SEQUENCE}')) "
        f"ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value; RETURN NULL; END $$")
    schema_editor.execute(f"INSERT INTO {generation} (id, value) VALUES (1, nextval('{SEQUENCE}')) "
                          f"ON CONFLICT (id) DO NOTHING")
    for name, label, events, when in TRIGGERS:
        schema_editor.execute(
            f"CREATE TRIGGER {name} AFTER {events} ON {q(_table(apps, label))} FOR EACH ROW "
            f"{f'WHEN ({when}) ' if when else ''}EXECUTE FUNCTION {FUNCTION}()")


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    q = schema_editor.quote_name
    for name, label, _, _ in TRIGGERS:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name} ON {q(_table(apps, label))}")
    schema_editor.execute(f"DROP FUNCTION IF EXISTS {FUNCTION}()")
    schema_editor.execute(f"DROP SEQUENCE IF EXISTS {SEQUENCE}")
