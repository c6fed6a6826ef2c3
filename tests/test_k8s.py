"""The Kubernetes path, checked offline: the Helm chart rendered for both value sets (`make
k8s-manifests`) and every object held to what a cluster would refuse or a deployment would regret.

- every built-in object validates strictly against the Kubernetes 1.33 schemas (kubernetes-validate);
- KEDA's ScaledObjects and TriggerAuthentications against their CRD's schema (the models
  @kubernetes-models/keda generates from KEDA's published CRDs, run by deploy/checks/);
- commands name modules and files of the project, every environment variable is one Netloom reads,
  every container has requests and limits and none runs as root;
- the web tier has >= 2 replicas, probes on /healthz, a PodDisruptionBudget and an Ingress; GPU pools
  request `nvidia.com/gpu`; the ScaledObjects watch the very Redis lists Celery fills (a message sent
  through kombu with the instance's prefix lands in the list a trigger names).
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import uuid
from typing import Any

import pytest
import yaml

from tests.test_deploy import ROOT, module_exists, netloom_reads
from webapp.queues import ALL_QUEUES, DATASETS_QUEUE, KUBERNETES_QUEUE, SHORT_QUEUE, train_queue

kubernetes_validate = pytest.importorskip("kubernetes_validate")

VALUE_SETS = ("one-gpu-node", "gpu-fleet", "kueue-fleet")
CHECKS = ROOT / "deploy" / "checks"
CRD_KINDS = {"ScaledObject", "TriggerAuthentication"}
WORKLOADS = {"Deployment", "StatefulSet", "Job"}
# What the image sets itself (Dockerfile ENV) or Kubernetes sets: not settings of Netloom's.
NOT_SETTINGS = {"POSTGRES_USER", "POSTGRES_DB", "POSTGRES_PASSWORD", "PGDATA"}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Each value set's objects, rendered by the same command `make k8s-manifests` runs."""
    out = tmp_path_factory.mktemp("k8s")
    done = subprocess.run([sys.executable, str(ROOT / "deploy" / "render.py"), "--out", str(out), *VALUE_SETS],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return {name: [doc for doc in yaml.safe_load_all((out / f"{name}.yaml").read_text()) if doc]
            for name in VALUE_SETS}


def objects(rendered: dict[str, list[dict[str, Any]]], kind: str | None = None):
    for value_set, docs in rendered.items():
        for doc in docs:
            if kind is None or doc["kind"] == kind:
                yield value_set, doc


def pod_spec(doc: dict[str, Any]) -> dict[str, Any] | None:
    if doc["kind"] in WORKLOADS:
        return doc["spec"]["template"]["spec"]
    return None


def containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod_spec(doc)
    return [] if spec is None else [*spec.get("initContainers", []), *spec["containers"]]


def named(rendered: dict[str, list[dict[str, Any]]], value_set: str, kind: str, suffix: str) -> dict[str, Any]:
    found = [doc for doc in rendered[value_set] if doc["kind"] == kind and doc["metadata"]["name"].endswith(suffix)]
    assert len(found) == 1, f"{value_set}: expected one {kind} named *{suffix}, found {len(found)}"
    return found[0]


def test_both_value_sets_render_the_whole_release(rendered):
    for value_set, docs in rendered.items():
        kinds = {doc["kind"] for doc in docs}
        assert {"Deployment", "Service", "PodDisruptionBudget", "Ingress", "ConfigMap",
                "PersistentVolumeClaim"} <= kinds, (value_set, kinds)
        deployments = {doc["metadata"]["name"].removeprefix("netloom-netloom-") for doc in docs
                       if doc["kind"] == "Deployment"}
        assert {"web", "serving", "worker-short", "worker-datasets", "beat"} <= deployments, deployments
        if value_set == "kueue-fleet":  # runs are Jobs: the worker that makes them, no train pools
            assert "worker-kubernetes" in deployments and not any(n.startswith("worker-train-") for n in deployments)
        else:
            assert any(name.startswith("worker-train-") for name in deployments), deployments
    assert any(doc["kind"] == "ScaledObject" for doc in rendered["gpu-fleet"])
    assert not any(doc["kind"] == "ScaledObject" for doc in rendered["one-gpu-node"])


def test_every_builtin_object_is_valid_for_kubernetes_1_33_strictly(rendered):
    problems = []
    for value_set, doc in objects(rendered):
        if doc["kind"] in CRD_KINDS:
            continue
        try:
            kubernetes_validate.validate(doc, "1.33.0", strict=True)
        except kubernetes_validate.ValidationError as exc:
            problems.append(f"{value_set} {doc['kind']}/{doc['metadata']['name']}: {exc.message} at {list(exc.path)}")
    assert not problems, "\n".join(problems)


def test_the_strict_check_refuses_a_misspelt_field(rendered):
    # The check above is only worth something if an unknown field ("readinesProbe") fails it.
    doc = json.loads(json.dumps(named(rendered, "one-gpu-node", "Deployment", "-web")))
    doc["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {"httpGet": {"path": "/healthz", "port": 8000}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, "1.33.0", strict=True)


def crd_check(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    node = shutil.which("node")
    if node is None or not (CHECKS / "node_modules").is_dir():
        pytest.skip("needs Node.js and deploy/checks/node_modules (`make k8s-tools`)")
    done = subprocess.run([node, str(CHECKS / "validate_crds.mjs")], input=json.dumps(docs),
                          capture_output=True, text=True, check=False, cwd=CHECKS)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_keda_objects_match_the_crd_schema(rendered):
    docs = [doc for _, doc in objects(rendered) if doc["kind"] in CRD_KINDS]
    assert docs
    results = crd_check(docs)
    assert [r for r in results if r["error"]] == []
    # ... and the schema check does refuse a ScaledObject without its target.
    broken = json.loads(json.dumps(docs[0]))
    broken["spec"].pop("scaleTargetRef", None)
    assert "scaleTargetRef" in (crd_check([broken])[0]["error"] or "")


def argv_of(container: dict[str, Any]) -> list[list[str]]:
    """The container's command and its exec probes' commands, shell scripts split into argument lists."""
    found = [list(container.get("command", [])) + list(container.get("args", []))]
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        if command := container.get(probe, {}).get("exec", {}).get("command"):
            found.append(list(command))
    out = []
    for argv in found:
        if argv[:2] == ["sh", "-c"]:
            out.append(shlex.split(argv[2]))
        elif argv:
            out.append(argv)
    return out


def test_every_command_names_a_module_or_file_of_the_project(rendered):
    checked = 0
    for value_set, doc in objects(rendered):
        if doc["metadata"]["name"].endswith(("-postgresql", "-redis")):
            continue  # the optional in-chart datastores run their own images
        for container in containers(doc):
            for argv in argv_of(container):
                where = f"{value_set} {doc['metadata']['name']}/{container['name']}: {argv}"
                if argv[0] == "python" and argv[1] == "-m":
                    assert module_exists(argv[2]), where
                elif argv[0] == "python":
                    assert (ROOT / argv[1]).is_file(), where
                elif argv[0] == "celery":
                    assert argv[1] == "-A" and module_exists(argv[2]), where
                    if argv[3] == "worker":
                        assert argv[argv.index("-Q") + 1] in ALL_QUEUES, where
                else:
                    pytest.fail(f"unknown program {where}")
                checked += 1
    assert checked > 10


def test_each_worker_health_check_pings_its_own_name(rendered):
    for value_set, doc in objects(rendered, "Deployment"):
        for container in containers(doc):
            argv = container.get("command", [])
            if argv[:4] != ["celery", "-A", "webapp.celery", "worker"]:
                continue
            name = argv[argv.index("-n") + 1].split("@")[0]
            (ping,) = [a for a in argv_of(container)[1:] if "ping" in a]
            assert ping[ping.index("-d") + 1].split("@")[0] == name, (value_set, doc["metadata"]["name"])


def test_every_environment_variable_is_one_netloom_reads(rendered):
    read = netloom_reads()
    for value_set, doc in objects(rendered):
        names: set[str] = set()
        if doc["kind"] == "ConfigMap":
            names |= set(doc["data"])
        if doc["kind"] == "Secret":
            names |= set(doc.get("stringData", {})) | set(doc.get("data", {}))
        for container in containers(doc):
            names |= {env["name"] for env in container.get("env", [])}
        unknown = names - read - NOT_SETTINGS
        assert not unknown, f"{value_set} {doc['kind']}/{doc['metadata']['name']} sets what nothing reads: {unknown}"


def test_every_container_has_requests_and_limits_and_none_runs_as_root(rendered):
    for value_set, doc in objects(rendered):
        spec = pod_spec(doc)
        if spec is None:
            continue
        pod = spec.get("securityContext", {})
        for container in containers(doc):
            where = f"{value_set} {doc['metadata']['name']}/{container['name']}"
            resources = container.get("resources", {})
            for part in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(resources.get(part, {})), f"{where}: {part}"
            context = {**pod, **container.get("securityContext", {})}
            assert context.get("runAsNonRoot") is True, where
            assert context.get("runAsUser", 0) != 0, where
            assert context.get("allowPrivilegeEscalation") is False, where


def test_the_web_tier_has_replicas_probes_a_disruption_budget_and_an_ingress(rendered):
    for value_set in VALUE_SETS:
        web = named(rendered, value_set, "Deployment", "-web")
        assert web["spec"]["replicas"] >= 2
        (container,) = web["spec"]["template"]["spec"]["containers"]
        for probe in ("readinessProbe", "livenessProbe"):
            assert container[probe]["httpGet"]["path"] == "/healthz", probe
            headers = {h["name"]: h["value"] for h in container[probe]["httpGet"]["httpHeaders"]}
            assert headers["X-Forwarded-Proto"] == "https"
        labels = web["spec"]["template"]["metadata"]["labels"]
        pdb = named(rendered, value_set, "PodDisruptionBudget", "-web")
        assert pdb["spec"]["minAvailable"] >= 1
        assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
        service = named(rendered, value_set, "Service", "-web")
        assert service["spec"]["selector"].items() <= labels.items()
        ingress = named(rendered, value_set, "Ingress", "-web")
        (path,) = ingress["spec"]["rules"][0]["http"]["paths"]
        # One path to the pod's nginx, which routes the streams (/ws/) itself; long reads for them.
        assert path["path"] == "/" and path["backend"]["service"]["name"] == service["metadata"]["name"]
        assert int(ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600
        config = named(rendered, value_set, "ConfigMap", "netloom")
        assert config["data"]["ALLOWED_HOSTS"] == ingress["spec"]["rules"][0]["host"]
        # The front sends /v2/ (inference) to the model server's Service, at the port it serves.
        upstream = {e["name"]: e["value"] for e in container["env"]}["SERVING_UPSTREAM"]
        serving = named(rendered, value_set, "Service", "-serving")
        assert upstream == f"{serving['metadata']['name']}:{serving['spec']['ports'][0]['port']}"
        server = named(rendered, value_set, "Deployment", "-serving")["spec"]["template"]["spec"]["containers"][0]
        assert {e["name"]: e["value"] for e in server["env"]}["SERVING_PORT"] == str(serving["spec"]["ports"][0]["port"])


def test_gpu_pools_request_their_gpus_and_every_pod_shares_the_media_volume(rendered):
    pools = 0
    for _, doc in objects(rendered, "Deployment"):
        spec = pod_spec(doc)
        claims = {v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"] if "persistentVolumeClaim" in v}
        assert len(claims) == 1, doc["metadata"]["name"]
        (worker,) = spec["containers"]
        devices = {env["name"]: env["value"] for env in worker.get("env", [])}.get("NETLOOM_DEVICES")
        if devices and devices.startswith("cuda"):
            pools += 1
            gpus = worker["resources"]["limits"]["nvidia.com/gpu"]
            assert worker["resources"]["requests"]["nvidia.com/gpu"] == gpus >= 1
            assert any(t["key"] == "nvidia.com/gpu" for t in spec["tolerations"])
            assert spec["terminationGracePeriodSeconds"] >= 60
    assert pools == 3  # one in the one-node set, two in the fleet


def test_every_train_queue_a_fleet_pool_fits_is_watched_by_exactly_one_scaled_object(rendered):
    docs = rendered["gpu-fleet"]
    deployments = {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] == "Deployment"}
    watched: dict[str, str] = {}
    for doc in (d for d in docs if d["kind"] == "ScaledObject"):
        target = deployments[doc["spec"]["scaleTargetRef"]["name"]]
        assert "replicas" not in target["spec"], "KEDA owns the replica count of a scaled pool"
        for trigger in doc["spec"]["triggers"]:
            assert trigger["type"] == "redis"
            prefix, queue = trigger["metadata"]["listName"].split(":", 1)
            assert prefix == "netloom" and queue in ALL_QUEUES
            assert queue not in watched, f"{queue} is watched by {watched[queue]} and {doc['metadata']['name']}"
            watched[queue] = doc["metadata"]["name"]
    expected = {train_queue(kind, n) for kind in ("gpu", "any") for n in range(1, 5)}
    expected |= {train_queue("cpu", 1), SHORT_QUEUE, DATASETS_QUEUE}
    assert set(watched) == expected
    # The 1-GPU pool scales to zero and takes the 1-GPU runs; the 4-GPU pool the rest.
    assert watched[train_queue("gpu", 1)].endswith("train-gpu-1")
    assert watched[train_queue("any", 3)].endswith("train-gpu-4")


def test_a_trigger_names_the_redis_list_celery_fills(rendered, settings):
    """The list a ScaledObject watches is the key kombu writes a queued message to."""
    import redis
    from celery import Celery

    (trigger, *_) = next(d for d in rendered["gpu-fleet"] if d["kind"] == "ScaledObject")["spec"]["triggers"]
    queue = trigger["metadata"]["listName"].split(":", 1)[1]
    prefix = f"k8s-check-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(settings.REDIS_URL)
    app = Celery("k8s-check", broker=settings.REDIS_URL,
                 broker_transport_options={"global_keyprefix": f"{prefix}:"})
    try:
        app.send_task("runs.train", args=[0], queue=queue)
        assert client.llen(f"{prefix}:{queue}") == 1
    finally:
        for key in client.scan_iter(f"{prefix}:*"):
            client.delete(key)
        app.close()


def test_the_kubernetes_runner_has_its_worker_settings_and_no_more_api_rights_than_it_uses(rendered):
    docs = rendered["kueue-fleet"]
    config = named(rendered, "kueue-fleet", "ConfigMap", "netloom")["data"]
    assert config["NETLOOM_RUNNER"] == "kubernetes" and config["NETLOOM_K8S_NAMESPACE"] == "netloom"
    assert config["NETLOOM_DEVICES"] == "auto", "the web tier accepts cuda runs: the cluster has the GPUs"
    pod = json.loads(config["NETLOOM_K8S_RUN_POD"])
    assert pod["gpuNodeSelector"] == {"netloom.dev/gpu-pool": "quad"} and pod["cpu"] == "8"
    claim = named(rendered, "kueue-fleet", "PersistentVolumeClaim", "-media")
    assert config["NETLOOM_MEDIA_CLAIM"] == claim["metadata"]["name"]
    worker = named(rendered, "kueue-fleet", "Deployment", "-worker-kubernetes")
    spec = worker["spec"]["template"]["spec"]
    argv = spec["containers"][0]["command"]
    assert argv[argv.index("-Q") + 1] == "kubernetes" == KUBERNETES_QUEUE
    account = named(rendered, "kueue-fleet", "ServiceAccount", "-runner")["metadata"]["name"]
    assert spec["serviceAccountName"] == account
    (binding,) = [d for d in docs if d["kind"] == "RoleBinding"]
    assert binding["subjects"][0]["name"] == account
    (role,) = [d for d in docs if d["kind"] == "Role"]
    rights = {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
              for resource in rule["resources"] for verb in rule["verbs"]}
    assert ("batch", "jobs", "create") in rights and ("batch", "jobs", "delete") in rights
    assert ("kueue.x-k8s.io", "workloads", "list") in rights
    assert not any(verb in ("update", "patch", "*") or resource == "secrets" for _, resource, verb in rights)
    for value_set in ("one-gpu-node", "gpu-fleet"):  # the Celery path makes no Jobs
        assert named(rendered, value_set, "ConfigMap", "netloom")["data"]["NETLOOM_RUNNER"] == "celery"
        assert not any(d["kind"] in ("Role", "ServiceAccount") for d in rendered[value_set])


# --- a multi-node run as an indexed Job (webapp/runs/scheduling/kubernetes.py) -------------------


def test_the_multinode_job_is_valid_and_its_pods_find_each_other_by_name():
    from webapp.runs.scheduling.kubernetes import multinode_job

    service, job = multinode_job(run_id=7, job_file="/data/media/runs/7/ranks/job.json", nodes=3,
                                 processes_per_node=2, gpus_per_node=2, image="netloom:latest", queue="team-a")
    for doc in (service, job):
        kubernetes_validate.validate(doc, "1.33.0", strict=True)
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == 3
    assert spec["suspend"] is True, "Kueue admits a queued Job by unsuspending it"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-a"
    pod = spec["template"]["spec"]
    # Pod 0 is <job>-0.<subdomain>: the headless Service of that name selects the Job's pods.
    assert pod["subdomain"] == service["metadata"]["name"] and service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"job-name": job["metadata"]["name"]}
    (container,) = pod["containers"]
    argv = container["command"]
    assert argv[argv.index("--rdzv-endpoint") + 1].startswith(f"{job['metadata']['name']}-0.{pod['subdomain']}:")
    assert argv[argv.index("--nnodes") + 1] == "3" and argv[argv.index("--nproc-per-node") + 1] == "2"
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert module_exists(argv[argv.index("-m", 3) + 1])


@pytest.mark.slow
def test_the_jobs_two_pods_as_local_processes_train_the_weights_of_one_process(tmp_path):
    """Each pod's exact command and environment, run here: pod 0's name resolves to loopback."""
    import os
    import socket

    from safetensors.torch import load_file

    from engine.train.distributed import JOB_FILE, job_write
    from tests.engine.train.test_distributed import CONFIG, assert_same_weights, job, one_process
    from webapp.runs.scheduling.kubernetes import MEDIA_MOUNT, multinode_job

    media = tmp_path / "media"
    folder = media / "runs" / "7" / "ranks"
    job_write(folder, job({**CONFIG, "processes": 2}, media / "runs" / "7"))
    _, manifest = multinode_job(run_id=7, job_file=f"{MEDIA_MOUNT}/runs/7/ranks/{JOB_FILE}", nodes=2,
                                processes_per_node=1, image="netloom:latest")
    (container,) = manifest["spec"]["template"]["spec"]["containers"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = container["command"][container["command"].index("--rdzv-endpoint") + 1]

    def local(arg: str) -> str:
        # The cluster's DNS name of pod 0 and the media volume's mount, as this machine has them.
        return arg.replace(endpoint, f"127.0.0.1:{port}").replace(MEDIA_MOUNT, str(media))

    argv = [sys.executable if a == "python" else local(a) for a in container["command"]]
    env = {**os.environ, **{e["name"]: e["value"] for e in container["env"]}, "PYTHONPATH": str(ROOT)}
    pods = [subprocess.Popen(argv, cwd=ROOT, env={**env, "JOB_COMPLETION_INDEX": str(index)},
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for index in range(2)]
    for pod in pods:
        out, _ = pod.communicate(timeout=240)
        assert pod.returncode == 0, out.decode(errors="replace")[-3000:]
    single, _ = one_process(CONFIG)
    outcomes = [json.loads((folder / f"rank-{rank}.json").read_text()) for rank in (0, 1)]
    assert all(o["world"] == 2 and o["status"] == "succeeded" for o in outcomes), outcomes
    weights = [load_file(folder / f"rank-{rank}.safetensors") for rank in (0, 1)]
    assert_same_weights(weights[0], weights[1])
    assert_same_weights(weights[0], single.model.state_dict())


# --- Kueue: the teams' queues, from their limits (webapp/runs/scheduling/kueue.py) ---------------

KUEUE_CRDS = ROOT / "tests" / "data" / "kueue"


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """A CRD's structural schema with unknown fields refused, as the API server prunes them (and
    `fieldValidation=Strict` refuses them): additionalProperties false wherever properties are listed."""
    if not isinstance(schema, dict):
        return schema
    out = {key: ([_strict(v) for v in value] if isinstance(value, list) else _strict(value) if isinstance(value, dict)
                 and key not in ("properties",) else value) for key, value in schema.items()}
    if "properties" in schema:
        out["properties"] = {name: _strict(sub) for name, sub in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    return out


@pytest.fixture(scope="module")
def kueue_schemas() -> dict[str, Any]:
    """kind -> a validator of Kueue's v1beta2 schema for it (the CRDs of Kueue v0.19.2, tests/data/kueue/)."""
    import jsonschema

    found = {}
    for path in KUEUE_CRDS.glob("kueue.x-k8s.io_*.yaml"):
        crd = yaml.safe_load(path.read_text())
        (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta2"]
        schema = _strict(version["schema"]["openAPIV3Schema"])
        found[crd["spec"]["names"]["kind"]] = jsonschema.Draft7Validator(schema)
    assert set(found) == {"ClusterQueue", "LocalQueue", "ResourceFlavor", "WorkloadPriorityClass"}
    return found


def kueue_problems(schemas: dict[str, Any], docs: list[dict[str, Any]]) -> list[str]:
    problems = []
    for doc in docs:
        assert doc["apiVersion"] == "kueue.x-k8s.io/v1beta2", doc["apiVersion"]
        for error in schemas[doc["kind"]].iter_errors(doc):
            problems.append(f"{doc['kind']}/{doc['metadata']['name']}: {error.message} at {list(error.path)}")
    return problems


@pytest.fixture(scope="module")
def kueue_example(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """var/k8s/kueue.yaml as `make k8s-manifests` writes it."""
    sys.path.insert(0, str(ROOT / "deploy"))
    try:
        from render import kueue_example as render_kueue
    finally:
        sys.path.remove(str(ROOT / "deploy"))
    return [doc for doc in yaml.safe_load_all(render_kueue()) if doc]


def test_the_kueue_objects_match_kueues_crd_schemas(kueue_schemas, kueue_example):
    kinds = {doc["kind"] for doc in kueue_example}
    assert kinds == {"ResourceFlavor", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass"}
    assert kueue_problems(kueue_schemas, kueue_example) == []
    # ... and the check refuses a misspelt field and a quota that is no quantity.
    (queue, *_) = [doc for doc in kueue_example if doc["kind"] == "ClusterQueue"]
    broken = json.loads(json.dumps(queue))
    broken["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuotas"] = "1"
    assert any("nominalQuotas" in p for p in kueue_problems(kueue_schemas, [broken]))
    broken = json.loads(json.dumps(queue))
    broken["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "four"
    assert kueue_problems(kueue_schemas, [broken])


def test_team_limits_become_quotas_a_cohort_and_borrowing(kueue_example):
    queues = {doc["metadata"]["name"]: doc for doc in kueue_example if doc["kind"] == "ClusterQueue"}
    local = {doc["metadata"]["name"]: doc for doc in kueue_example if doc["kind"] == "LocalQueue"}
    assert set(queues) == set(local) == {"netloom-team-1", "netloom-team-2", "netloom-team-3"}
    assert all(doc["spec"]["clusterQueue"] == name for name, doc in local.items())
    assert {doc["spec"]["cohortName"] for doc in queues.values()} == {"netloom"}

    def quota(name: str) -> dict[str, dict[str, Any]]:
        (group,) = queues[name]["spec"]["resourceGroups"]
        return {r["name"]: r for r in group["flavors"][0]["resources"]}

    # Research: 2 runs at once of at most 4 GPUs: 8 GPUs, and no borrowing (its limit is a cap).
    assert quota("netloom-team-1")["nvidia.com/gpu"] == {"name": "nvidia.com/gpu", "nominalQuota": "8", "borrowingLimit": "0"}
    # Vision: 8 GPUs per run, no cap on runs: the default 4 runs, and it borrows what others leave.
    assert quota("netloom-team-2")["nvidia.com/gpu"]["nominalQuota"] == "32"
    assert "borrowingLimit" not in quota("netloom-team-2")["nvidia.com/gpu"]
    priorities = {doc["metadata"]["name"]: doc["value"] for doc in kueue_example if doc["kind"] == "WorkloadPriorityClass"}
    assert len(priorities) == 21 and priorities["netloom-priority-10"] > priorities["netloom-priority-0"] > \
        priorities["netloom-priority-minus-10"]


def test_the_example_jobs_queue_and_priority_class_exist_in_the_kueue_objects(kueue_example):
    from webapp.runs.scheduling.kubernetes import PRIORITY_LABEL, QUEUE_LABEL

    sys.path.insert(0, str(ROOT / "deploy"))
    try:
        from render import multinode_example
    finally:
        sys.path.remove(str(ROOT / "deploy"))
    _, job = [doc for doc in yaml.safe_load_all(multinode_example()) if doc]
    names = {(doc["kind"], doc["metadata"]["name"]) for doc in kueue_example}
    assert ("LocalQueue", job["metadata"]["labels"][QUEUE_LABEL]) in names
    assert ("WorkloadPriorityClass", job["metadata"]["labels"][PRIORITY_LABEL]) in names


@pytest.mark.django_db
def test_kueue_manifests_renders_the_teams_in_the_database(kueue_schemas, settings):
    from io import StringIO

    from django.core.management import call_command

    from webapp.accounts.models import Team
    from webapp.runs.scheduling.kubernetes import team_queue_name

    capped = Team.objects.create(name="Capped", max_concurrent_runs=1, max_devices_per_run=2)
    free = Team.objects.create(name="Free")
    out = StringIO()
    call_command("kueue_manifests", "--namespace", "ml", "--pod-cpu", "500m", stdout=out)
    docs = [doc for doc in yaml.safe_load_all(out.getvalue()) if doc]
    assert kueue_problems(kueue_schemas, docs) == []
    local = {doc["metadata"]["name"]: doc for doc in docs if doc["kind"] == "LocalQueue"}
    assert {team_queue_name(capped.pk), team_queue_name(free.pk)} <= set(local)
    assert local[team_queue_name(capped.pk)]["metadata"]["namespace"] == "ml"
    (queue,) = [doc for doc in docs if doc["kind"] == "ClusterQueue" and doc["metadata"]["name"] == team_queue_name(capped.pk)]
    resources = {r["name"]: r for r in queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert resources["cpu"]["nominalQuota"] == "1000m" and resources["nvidia.com/gpu"]["nominalQuota"] == "2"


@pytest.mark.django_db
def test_the_chart_carries_the_kueue_objects_the_command_renders(kueue_schemas, tmp_path):
    """`manage.py kueue_manifests --format values` into the chart: the release holds them as rendered."""
    from io import StringIO

    from django.core.management import call_command

    from webapp.accounts.models import Team

    Team.objects.create(name="Capped", max_concurrent_runs=2, max_devices_per_run=4)
    out = StringIO()
    call_command("kueue_manifests", "--format", "values", stdout=out)
    (tmp_path / "kueue-values.yaml").write_text(out.getvalue())
    sys.path.insert(0, str(ROOT / "deploy"))
    try:
        from render import CHART, VALUES, helm_binary
    finally:
        sys.path.remove(str(ROOT / "deploy"))
    done = subprocess.run([helm_binary(), "template", "netloom", str(CHART), "--namespace", "netloom",
                           "-f", str(VALUES / "kueue-fleet.yaml"), "-f", str(tmp_path / "kueue-values.yaml")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    carried = [doc for doc in yaml.safe_load_all(done.stdout) if doc and doc["apiVersion"].startswith("kueue.x-k8s.io/")]
    def key(doc: dict[str, Any]) -> tuple[str, str]:
        return doc["kind"], doc["metadata"]["name"]

    assert sorted(carried, key=key) == sorted(yaml.safe_load(out.getvalue())["kueue"]["objects"], key=key)
    assert kueue_problems(kueue_schemas, carried) == []
    assert {"ClusterQueue", "LocalQueue", "ResourceFlavor", "WorkloadPriorityClass"} == {d["kind"] for d in carried}
