"""Migrate a stack's database and create two teams' users, tokens, datasets and a graph; print JSON.

Run as `python -m tests.stack.e2e_seed` with DJANGO_SETTINGS_MODULE=tests.stack.e2e_settings.
"""

import json

import django


def main() -> None:
    """Create the world the end-to-end tests use."""
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model

    from webapp.accounts.models import Role
    from webapp.accounts.services.memberships import membership_add
    from webapp.accounts.services.teams import team_create
    from webapp.accounts.services.tokens import token_create
    from webapp.datasets.services import dataset_builtin_create
    from webapp.graphs.services import graph_create

    spec = {
        "version": 1,
        "inputs": [{"id": "x", "shape": [4], "dtype": "float32"}],
        "nodes": [
            {"id": "fc1", "op": "Linear", "params": {"out_features": 16}, "inputs": ["x"]},
            {"id": "act", "op": "ReLU", "inputs": ["fc1"]},
            {"id": "fc2", "op": "Linear", "params": {"out_features": 3}, "inputs": ["act"]},
        ],
        "outputs": ["fc2"],
    }
    users = get_user_model().objects
    world: dict = {}
    for key, team_name in (("a", "Team A"), ("b", "Team B")):
        team = team_create(name=team_name)
        admin = users.create_user(username=f"admin_{key}", password="pw")
        membership_add(team=team, user=admin, role=Role.ADMIN)
        dataset = dataset_builtin_create(team=team, name="iris", builtin="iris", options={}, created_by=admin)
        graph = graph_create(team=team, name=f"Iris MLP {key.upper()}", spec=spec, created_by=admin)
        world[key] = {"team": team.pk, "dataset": dataset.pk, "graph": graph.pk,
                      "token": token_create(user=admin, name="e2e")[1]}
    viewer = users.create_user(username="viewer_a", password="pw")
    membership_add(team=team_create(name="Team V"), user=viewer, role=Role.ADMIN)
    from webapp.accounts.models import Team

    membership_add(team=Team.objects.get(name="Team A"), user=viewer, role=Role.VIEWER)
    world["viewer_a"] = {"token": token_create(user=viewer, name="e2e")[1]}
    print(json.dumps(world))


if __name__ == "__main__":
    main()
