"""Property: whatever valid config a user writes, the objects `plan` authors from it are accepted by the API
server (gpuplatform.apiserver: the strict schema of the cluster's version and the semantic rules), so nothing we
create is refused at `pulumi up`. Configs are generated from the checked-in stacks by seeded random changes to
what users write most (ports, env, secret references, volumes, replica bounds, GPU requests); the ones validation
refuses are discarded, since those never reach the API server."""
import copy
import random

import pytest

from gpuplatform.apiserver import rejections, schema_version
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.validation import kubernetes_version, load
from gpuplatform.plan import manifest_files
from gpuplatform.synth import stack_config_from_namespace, synthesize
from support import stack_raw

SEEDS = range(10)
_NAMES = ["http", "grpc", "metrics", "admin", "http2", "api"]


def _generated(seed: int) -> dict:
    rnd = random.Random(seed)
    raw = stack_raw(rnd.choice(["dev", "staging", "prod"]))
    w = raw["workloads"][rnd.randrange(len(raw["workloads"]))]
    serving = [p for p in w["ports"] if p.get("protocol", "http") in ("http", "grpc")][:1]
    extra = rnd.sample(_NAMES, rnd.randint(0, 3))
    w["ports"] = serving + [{"name": n, "containerPort": rnd.randint(1024, 65535),
                             "protocol": rnd.choice(["http", "grpc", "metrics"])}
                            for n in extra if n not in {p["name"] for p in serving}]
    w["env"] = {f"{rnd.choice(['MODEL', 'LOG', 'NUM', 'MAX'])}_{i}": rnd.choice(["1", "info", "true", "8"])
                for i in range(rnd.randint(0, 4))}
    if rnd.random() < 0.5:
        w["secretEnv"] = {"HF_TOKEN": {"secretName": "hf", "key": "token"}}
    w["volumes"] = [{"name": f"data{i}", "mountPath": f"/data/{i}", "pvc": f"claim-{i}"}
                    for i in range(rnd.randint(0, 2))]
    if w.get("autoscaling", {}).get("autoscaler", "hpa") == "hpa" and "autoscaling" in w:
        lo = rnd.randint(1, 2)
        w["autoscaling"].update(minReplicas=lo, maxReplicas=lo + rnd.randint(1, 3))
    return raw


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_valid_configs_author_only_objects_the_api_server_accepts(seed):
    raw = _generated(seed)
    try:
        cfg = load(copy.deepcopy(raw))
    except ConfigError:
        pytest.skip("validation refuses this config; it never reaches the API server")
    version = kubernetes_version(cfg)
    schemas = schema_version(f"{version[0]}.{version[1]}" if version else None)
    records = synthesize(stack_config_from_namespace(raw))
    patches = {id(r.inputs) for r in records if r.type.endswith("Patch")}
    found = [f"{f}: {r.render()}" for f, doc in manifest_files(records).items() if not f.startswith("helmrelease-")
             for r in rejections(doc, schemas, patch=id(doc) in patches)]
    assert found == []


def test_most_generated_configs_are_valid():
    """The generator must exercise the property, not be refused wholesale."""
    valid = 0
    for seed in SEEDS:
        try:
            load(_generated(seed))
            valid += 1
        except ConfigError:
            pass
    assert valid >= len(SEEDS) // 2
