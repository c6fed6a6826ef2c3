"""The read generation (models.ReadGeneration) and, on PostgreSQL, the triggers that move it.

Each trigger sets the one row to a value it has never had, the next of a sequence of its own,
inside the writing transaction (upserted: a flushed table gets it back), so a reader sees the new
value in the same snapshot as the change, and a second change in one transaction moves it again
(the transaction's id would not: a read between the two would be taken for current after both).
The sequence belongs to no table, so nothing that empties or resets the tables restarts it.
Token and user updates count unless only the time of last use / last login changed (a token's use
is recorded once a minute, a sign-in records last_login: neither changes what a read may see).
"""

from django.conf import settings
from django.db import migrations, models

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


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0007_metric_blocks"),
        ("accounts", "0002_scheduling"),
        ("graphs", "0002_revision_origin"),
        ("datasets", "0002_dataset_progress"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ReadGeneration",
            fields=[
                ("id", models.PositiveSmallIntegerField(primary_key=True, serialize=False)),
                ("value", models.BigIntegerField()),
            ],
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
