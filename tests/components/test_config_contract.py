"""The config contract, part two of the bad-input corpus: what the API server, the hardware or the secret store
would reject later is rejected before anything is registered, naming the path, the bad value and what is allowed.

Each case breaks one thing in a valid stack, the way users get it wrong (a URL where a host goes, ``8GB`` for
memory, a scheme on an NFS server...). ``test_config_validation.py`` holds the first part; together they are
the corpus.
"""
import pytest

from gpuplatform.components import k8s_validity as kv
from test_config_validation import CASES as FIRST_PART
from test_config_validation import assert_rejected, compose, set_in


def set_wl(field, value, i=0):
    return set_in(["workloads", i, field], value)


def with_ingress(**ingress):
    return set_in(["workloads", 0, "exposure", "ingress"],
                  {"className": "alb", "host": "flower.inference.example.com", "port": "http", **ingress})


def with_nfs(server="192.168.10.20", path="/exports/models"):
    return set_wl("volumes", [{"name": "models", "mountPath": "/models", "nfs": {"server": server, "path": path}}])


def second_workload(**changes):
    def mutate(raw):
        import copy
        w = copy.deepcopy(raw["workloads"][0])
        w.update(name="flower-canary", **changes)
        raw["workloads"].append(w)
    return mutate


def with_secret_env(name="HF_TOKEN", secret="hf-credentials", key="token"):
    return set_wl("secretEnv", {name: {"secretName": secret, "key": key}})


# (case id, base stack, mutation, expected path, fragments the message must contain)
CASES = [
    # ---- names the API server validates (DNS-1123 per kind)
    ("namespace-uppercase", "staging", set_in(["settings", "namespace"], "Inference"), "settings.namespace",
     ["'Inference'", "DNS-1123 label"]),
    ("namespace-underscore", "staging", set_in(["settings", "namespace"], "ml_inference"), "settings.namespace",
     ["'ml_inference'", "namespace name"]),
    ("namespace-too-long", "staging", set_in(["settings", "namespace"], "n" * 64), "settings.namespace",
     ["at most 63 characters"]),
    ("namespace-with-dot", "staging", set_in(["settings", "namespace"], "ml.inference"), "settings.namespace",
     ["'ml.inference'", "DNS-1123 label"]),
    ("secret-name-uppercase", "staging", with_secret_env(secret="HF-Credentials"),
     "workloads[0].secretEnv.HF_TOKEN.secretName", ["'HF-Credentials'", "Secret name", "DNS-1123 subdomain"]),
    ("secret-name-underscore", "staging", with_secret_env(secret="hf_credentials"),
     "workloads[0].secretEnv.HF_TOKEN.secretName", ["'hf_credentials'", "DNS-1123 subdomain"]),
    ("secret-key-with-slash", "staging", with_secret_env(key="tokens/hf"), "workloads[0].secretEnv.HF_TOKEN.key",
     ["'tokens/hf'", "Secret key", "letters, digits"]),
    ("tls-secret-name", "prod", with_ingress(tlsSecret="Flower_TLS"), "workloads[0].exposure.ingress.tlsSecret",
     ["'Flower_TLS'", "Secret name"]),
    ("pvc-name", "staging", set_wl("volumes", [{"name": "models", "mountPath": "/models", "pvc": "Models_PVC"}]),
     "workloads[0].volumes[0].pvc", ["'Models_PVC'", "PersistentVolumeClaim name"]),
    ("volume-name-uppercase", "staging", set_wl("volumes", [{"name": "Models", "mountPath": "/models",
                                                             "pvc": "models"}]),
     "workloads[0].volumes[0].name", ["'Models'", "volume name", "DNS-1123 label"]),
    ("mount-path-relative", "staging", set_wl("volumes", [{"name": "models", "mountPath": "models",
                                                           "pvc": "models"}]),
     "workloads[0].volumes[0].mountPath", ["'models'", "absolute path"]),
    # ---- ingress hosts
    ("ingress-host-is-url", "prod", with_ingress(host="https://flower.inference.example.com"),
     "workloads[0].exposure.ingress.host", ["is a URL", "'flower.inference.example.com'"]),
    ("ingress-host-with-path", "prod", with_ingress(host="flower.inference.example.com/v2"),
     "workloads[0].exposure.ingress.host", ["port or path", "'flower.inference.example.com'"]),
    ("ingress-host-with-port", "prod", with_ingress(host="flower.inference.example.com:443"),
     "workloads[0].exposure.ingress.host", ["port or path"]),
    ("ingress-host-ip", "prod", with_ingress(host="10.0.0.12"), "workloads[0].exposure.ingress.host",
     ["IP address", "DNS name"]),
    ("ingress-host-uppercase", "prod", with_ingress(host="Flower.Example.com"), "workloads[0].exposure.ingress.host",
     ["'Flower.Example.com'", "lowercase DNS name"]),
    ("ingress-wildcard-in-middle", "prod", with_ingress(host="flower.*.example.com"),
     "workloads[0].exposure.ingress.host", ["'flower.*.example.com'", "'*.'"]),
    ("ingress-double-wildcard", "prod", with_ingress(host="*.*.example.com"), "workloads[0].exposure.ingress.host",
     ["exactly one label"]),
    ("ingress-host-underscore", "prod", with_ingress(host="flower_svc.example.com"),
     "workloads[0].exposure.ingress.host", ["'flower_svc.example.com'"]),
    ("two-workloads-same-host", "prod", compose(with_ingress(), second_workload()),
     "workloads[1].exposure.ingress.host", ["'flower.inference.example.com'", "already routes '/'", "flower"]),
    # ---- resource quantities
    ("memory-gb", "staging", set_wl("resources", {"cpu": "2", "memory": "8GB"}), "workloads[0].resources.memory",
     ["'8GB' is not a Kubernetes quantity", "did you mean '8Gi'"]),
    ("memory-lowercase-gi", "staging", set_wl("resources", {"cpu": "2", "memory": "8gi"}),
     "workloads[0].resources.memory", ["'8gi'", "'8Gi'"]),
    ("memory-with-space", "staging", set_wl("resources", {"cpu": "2", "memory": "8 Gi"}),
     "workloads[0].resources.memory", ["'8 Gi'", "'8Gi'"]),
    ("memory-mb", "staging", set_wl("resources", {"cpu": "2", "memory": "512MB"}), "workloads[0].resources.memory",
     ["'512MB'", "'512Mi'"]),
    ("memory-bare-number", "staging", set_wl("resources", {"cpu": "2", "memory": "8"}),
     "workloads[0].resources.memory", ["8 bytes", "'8Gi'"]),
    ("memory-zero", "staging", set_wl("resources", {"cpu": "2", "memory": "0Gi"}), "workloads[0].resources.memory",
     ["'0Gi'", "not positive"]),
    ("cpu-millicores-typo", "staging", set_wl("resources", {"cpu": "500mi", "memory": "4Gi"}),
     "workloads[0].resources.cpu", ["'500mi'", "'500m'"]),
    ("cpu-with-word", "staging", set_wl("resources", {"cpu": "2 cores", "memory": "4Gi"}),
     "workloads[0].resources.cpu", ["'2 cores'", "did you mean '2'"]),
    ("cpu-negative", "staging", set_wl("resources", {"cpu": "-1", "memory": "4Gi"}), "workloads[0].resources.cpu",
     ["'-1'", "not positive"]),
    # ---- NFS
    ("nfs-server-url", "prod", with_nfs(server="nfs://192.168.10.20"), "workloads[0].volumes[0].nfs.server",
     ["'nfs://192.168.10.20'", "is a URL", "host name or IP address"]),
    ("nfs-server-with-export", "prod", with_nfs(server="192.168.10.20:/exports/models"),
     "workloads[0].volumes[0].nfs.server", ["port or path", "'path'"]),
    ("nfs-server-not-a-host", "prod", with_nfs(server="nas server 1"), "workloads[0].volumes[0].nfs.server",
     ["'nas server 1'", "not a host name or IP address"]),
    ("nfs-path-relative", "prod", with_nfs(path="exports/models"), "workloads[0].volumes[0].nfs.path",
     ["'exports/models'", "absolute path"]),
    # ---- environment variables
    ("env-name-with-space", "staging", set_wl("env", {"MODEL NAME": "bert"}), "workloads[0].env.MODEL NAME",
     ["'MODEL NAME'", "environment variable name"]),
    ("env-name-starts-with-digit", "staging", set_wl("env", {"1MODEL": "bert"}), "workloads[0].env.1MODEL",
     ["'1MODEL'", "not starting with a digit"]),
    ("env-name-with-equals", "staging", set_wl("env", {"MODEL=bert": "x"}), "workloads[0].env.MODEL=bert",
     ["'MODEL=bert'"]),
    ("secret-env-name", "staging", with_secret_env(name="HF TOKEN"), "workloads[0].secretEnv.HF TOKEN",
     ["'HF TOKEN'", "environment variable name"]),
    # ---- labels and taints everywhere the user supplies them
    ("pool-label-key-two-slashes", "staging", set_in(["nodePools", 0, "labels"], {"team/ml/owner": "ml"}),
     "nodePools[0].labels", ["'team/ml/owner'", "label key"]),
    ("pool-label-value-space", "staging", set_in(["nodePools", 0, "labels"], {"team": "ml platform"}),
     "nodePools[0].labels.team", ["'ml platform'", "label value"]),
    ("pool-label-value-too-long", "staging", set_in(["nodePools", 0, "labels"], {"team": "x" * 64}),
     "nodePools[0].labels.team", ["at most 63"]),
    ("pool-label-prefix-uppercase", "staging", set_in(["nodePools", 0, "labels"], {"Example.com/team": "ml"}),
     "nodePools[0].labels", ["'Example.com/team'", "DNS-subdomain prefix"]),
    ("taint-key-invalid", "staging", set_in(["nodePools", 0, "taints"], [{"key": "gpu type", "value": "a10"}]),
     "nodePools[0].taints[0].key", ["'gpu type'", "label key"]),
    ("taint-value-invalid", "staging", set_in(["nodePools", 0, "taints"], [{"key": "nvidia.com/gpu",
                                                                            "value": "yes please"}]),
     "nodePools[0].taints[0].value", ["'yes please'", "label value"]),
    # ---- hardware facts
    ("gpus-per-node-contradicts-instance", "staging", set_in(["nodePools", 0, "gpusPerNode"], 4),
     "nodePools[0].gpusPerNode", ["4 contradicts", "ecs.gn7i-c8g1.2xlarge has 1", "leave it out"]),
    ("gpu-model-contradicts-instance", "staging", set_in(["nodePools", 0, "gpuModel"], "T4"),
     "nodePools[0].gpuModel", ["'T4' contradicts", "A10"]),
    ("count-beyond-bare-metal-node", "prod", compose(set_in(["nodePools", 0, "sharing"], {"mode": "exclusive"}),
                                                     set_in(["workloads", 0, "gpu", "count"], 9)),
     "workloads[0].gpu.count", ["9: one replica needs more than a node", "8 GPU", "allowed: 1..8"]),
    ("plain-cluster-count-beyond-node", "local", set_in(["workloads", 0, "gpu", "count"], 3),
     "workloads[0].gpu.count", ["3: one replica needs more than a node", "Pending"]),
    # ---- secrets (as read from a stack file, the plain text never reaches the typed config)
    ("grafana-password-not-a-string", "local", set_in(["grafanaAdminPassword"], ["hunter2"]),
     "grafanaAdminPassword", ["value not shown"]),
]


def test_corpus_has_at_least_80_cases():
    ids = [c[0] for c in FIRST_PART + CASES]
    assert len(ids) == len(set(ids)) and len(ids) >= 80


@pytest.mark.parametrize("case,stack,mutate,path,fragments", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_rejected_with_path_value_and_allowed(case, stack, mutate, path, fragments):
    error = assert_rejected(stack, mutate, path, fragments)
    assert "hunter2" not in error.render()


# ---- the rules themselves, on values the API server accepts (they must stay accepted)
@pytest.mark.parametrize("value", ["1", "500m", "0.5", "2.5", "1e3", "100k"])
def test_cpu_quantities_the_api_server_accepts(value):
    assert kv.quantity(value, "cpu") is None


@pytest.mark.parametrize("value", ["8Gi", "8G", "512Mi", "1.5Gi", "128974848", "129e6", "1Ti"])
def test_memory_quantities_the_api_server_accepts(value):
    assert kv.quantity(value, "memory") is None


@pytest.mark.parametrize("value", ["flower.example.com", "*.example.com", "a", "triton-1.ml.internal"])
def test_hosts_the_api_server_accepts(value):
    assert kv.ingress_host(value) is None


@pytest.mark.parametrize("value", ["192.168.10.20", "nas.internal", "NAS01.corp.example.com", "fd00::20"])
def test_nfs_servers_accepted(value):
    assert kv.nfs_server(value) is None


@pytest.mark.parametrize("key", ["team", "example.com/team", "nvidia.com/gpu", "a_b.c-d"])
def test_label_keys_the_api_server_accepts(key):
    assert kv.label_key(key) is None


@pytest.mark.parametrize("name", ["MODEL", "_x", "model.name", "a-b", "HF_HOME"])
def test_env_names_the_api_server_accepts(name):
    assert kv.env_var_name(name) is None


def test_quantity_values():
    assert kv.quantity_value("8Gi") == 8 * 2 ** 30 and kv.quantity_value("500m") == 0.5
    assert kv.quantity_value("1e3") == 1000 and kv.quantity_value("16G") == 16e9
