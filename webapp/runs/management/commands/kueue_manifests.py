"""`manage.py kueue_manifests`: print Kueue's objects for every team's limits, as YAML.

    python manage.py kueue_manifests | kubectl apply -f -
    python manage.py kueue_manifests --format values > kueue-values.yaml   # or into the chart:
    helm upgrade netloom deploy/helm/netloom -f <your values> -f kueue-values.yaml

Run it again after a team's limits change (the admin's max_concurrent_runs, max_devices_per_run)
or a team is added (webapp/runs/scheduling/kueue.py says what each object holds).
"""

from __future__ import annotations

from typing import Any

import yaml
from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from webapp.runs.scheduling.kueue import kueue_objects, team_limits


class Command(BaseCommand):
    help = "Print Kueue's ResourceFlavor, ClusterQueues, LocalQueues and WorkloadPriorityClasses of the teams' limits."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--namespace", default=settings.NETLOOM_K8S_NAMESPACE,
                            help="the runs' namespace, where the LocalQueues go (default NETLOOM_K8S_NAMESPACE)")
        parser.add_argument("--cohort", default="netloom", help="the cohort every team's ClusterQueue joins")
        parser.add_argument("--flavor", default="default-flavor", help="the ResourceFlavor's name")
        parser.add_argument("--pod-cpu", default="4", help="cpu of one run pod (NETLOOM_K8S_RUN_POD's)")
        parser.add_argument("--pod-memory", default="16Gi", help="memory of one run pod")
        parser.add_argument("--default-runs", type=int, default=4, help="runs at once of a team without a limit")
        parser.add_argument("--default-devices", type=int, default=8, help="devices per run of a team without a limit")
        parser.add_argument("--format", choices=("yaml", "values"), default="yaml",
                            help="yaml: the objects (kubectl apply -f -); values: the chart's `kueue.objects` "
                                 "(helm -f), so the release installs and removes them")

    def handle(self, *args: Any, **options: Any) -> None:
        objects = kueue_objects(
            teams=team_limits(), namespace=options["namespace"], cohort=options["cohort"], flavor=options["flavor"],
            pod_cpu=options["pod_cpu"], pod_memory=options["pod_memory"], default_runs=options["default_runs"],
            default_devices=options["default_devices"],
        )
        if options["format"] == "values":
            self.stdout.write(yaml.safe_dump({"kueue": {"objects": objects}}, sort_keys=False), ending="")
        else:
            self.stdout.write(yaml.safe_dump_all(objects, sort_keys=False), ending="")
