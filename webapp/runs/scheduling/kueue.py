"""Kueue's objects from the team limits set in Netloom's admin (NETLOOM_RUNNER=kubernetes).

On Kubernetes, team quotas and fair sharing of the cluster are Kueue's, not the claim loop's
(docs/decisions/0022-kubernetes-runner-and-kueue.md). One function renders them, `kueue_objects`:

- a ResourceFlavor (`flavor`; node labels as given) that provides cpu, memory and nvidia.com/gpu;
- per team a ClusterQueue `netloom-team-<id>` in the cohort `cohort`, with a nominal quota of its
  limits: max_concurrent_runs runs of max_devices_per_run devices (a pod per device at most, of
  `pod_cpu` and `pod_memory`); a team without a limit gets `default_runs` / `default_devices` and
  borrows without bound, a team with max_concurrent_runs may not borrow (its limit stays a cap) but
  lends what it leaves idle; fair sharing between the teams' queues, and a higher priority preempts
  a lower one inside a queue;
- per team a LocalQueue of the same name in the runs' namespace (each run's Job is labelled with
  it: webapp/runs/scheduling/kubernetes.py::run_objects);
- a WorkloadPriorityClass per run priority -10..10 (`netloom-priority-<n>`, `-minus-<n>`).

`manage.py kueue_manifests` prints them for the teams in the database (`kubectl apply -f -`, again
after a limit changes); `make k8s-manifests` writes an example (var/k8s/kueue.yaml). Pure data:
tests/test_k8s.py checks them against Kueue's CRD schemas (tests/data/kueue/).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .kubernetes import KUEUE_API, priority_class_name, team_queue_name

PRIORITIES = range(-10, 11)  # services.PRIORITY_MIN..PRIORITY_MAX
RESOURCES = ("cpu", "memory", "nvidia.com/gpu")


@dataclass(frozen=True)
class TeamLimits:
    """What Kueue needs of a team: its id, name and limits (None: none)."""

    id: int
    name: str
    max_concurrent_runs: int | None = None
    max_devices_per_run: int | None = None


def _quantity(count: int, per_pod: str) -> str:
    """count x a Kubernetes quantity like "4", "500m" or "16Gi"."""
    for suffix in ("Ki", "Mi", "Gi", "Ti", "m"):
        if per_pod.endswith(suffix):
            return f"{count * int(per_pod[: -len(suffix)])}{suffix}"
    return str(count * int(per_pod))


def kueue_objects(
    *,
    teams: list[TeamLimits],
    namespace: str = "netloom",
    cohort: str = "netloom",
    flavor: str = "default-flavor",
    flavor_node_labels: dict[str, str] | None = None,
    pod_cpu: str = "4",
    pod_memory: str = "16Gi",
    default_runs: int = 4,
    default_devices: int = 8,
) -> list[dict[str, Any]]:
    """The ResourceFlavor, each team's ClusterQueue and LocalQueue, and the priority classes."""
    objects: list[dict[str, Any]] = [{
        "apiVersion": KUEUE_API, "kind": "ResourceFlavor",
        "metadata": {"name": flavor, "labels": _labels()},
        "spec": {"nodeLabels": dict(flavor_node_labels)} if flavor_node_labels else {},
    }]
    for team in sorted(teams, key=lambda t: t.id):
        name = team_queue_name(team.id)
        runs = team.max_concurrent_runs or default_runs
        devices = team.max_devices_per_run or default_devices
        quota = {"cpu": _quantity(runs * devices, pod_cpu), "memory": _quantity(runs * devices, pod_memory),
                 "nvidia.com/gpu": str(runs * devices)}
        capped = team.max_concurrent_runs is not None
        objects.append({
            "apiVersion": KUEUE_API, "kind": "ClusterQueue",
            "metadata": {"name": name, "labels": _labels(team),
                         "annotations": {"netloom.dev/team-name": team.name,
                                         "netloom.dev/limits": f"max_concurrent_runs={team.max_concurrent_runs}, "
                                                               f"max_devices_per_run={team.max_devices_per_run}"}},
            "spec": {
                "cohortName": cohort,
                "namespaceSelector": {},
                "queueingStrategy": "BestEffortFIFO",
                "fairSharing": {"weight": "1"},
                "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
                "resourceGroups": [{
                    "coveredResources": list(RESOURCES),
                    "flavors": [{"name": flavor, "resources": [
                        {"name": resource, "nominalQuota": quota[resource], **({"borrowingLimit": "0"} if capped else {})}
                        for resource in RESOURCES
                    ]}],
                }],
            },
        })
        objects.append({
            "apiVersion": KUEUE_API, "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace, "labels": _labels(team)},
            "spec": {"clusterQueue": name},
        })
    for priority in PRIORITIES:
        objects.append({
            "apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass",
            "metadata": {"name": priority_class_name(priority), "labels": _labels()},
            "value": priority * 100,
            "description": f"Netloom run priority {priority} (-10..10; higher is admitted first)",
        })
    return objects


def _labels(team: TeamLimits | None = None) -> dict[str, str]:
    labels = {"app.kubernetes.io/name": "netloom", "app.kubernetes.io/component": "kueue"}
    if team is not None:
        labels["netloom.dev/team"] = str(team.id)
    return labels


def team_limits() -> list[TeamLimits]:
    """Every team's limits, from the database."""
    from webapp.accounts.models import Team

    return [TeamLimits(id=pk, name=name, max_concurrent_runs=runs, max_devices_per_run=devices)
            for pk, name, runs, devices in Team.objects.order_by("pk").values_list(
                "pk", "name", "max_concurrent_runs", "max_devices_per_run")]
