"""network.policy-enforced and network.policy-peers against recorded API responses: Terway with and without its
network policy switch, flannel, an enforcing plugin, an unknown one; a missing NetworkPolicy, a peer whose pods do
not run as documented, one on the host network."""
from __future__ import annotations

import copy
import json

import pytest
from k8s_fixture_server import FIXTURES, api_client_for
from kubernetes import client as k8s

from gpuplatform.verify.network import check_policy_enforced, check_policy_peers

STAGING = FIXTURES / "staging" / "healthy"
PROD = FIXTURES / "prod" / "healthy"


class Variant:
    """A broken variant written next to ``healthy`` for one test (only the responses that differ)."""

    def __init__(self, tmp_path, monkeypatch, stack: str):
        import k8s_fixture_server

        self.root = tmp_path / "k8s_api"
        (self.root / stack).mkdir(parents=True)
        (self.root / stack / "healthy").symlink_to(FIXTURES / stack / "healthy")
        monkeypatch.setattr(k8s_fixture_server, "FIXTURES", self.root)
        self.dir = self.root / stack / "variant"

    def write(self, path: str, doc: dict) -> None:
        target = self.dir / (path + ".json")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(doc))


def _run(fake_api, cfg, stack, variant, fn):
    server = fake_api(stack, variant)
    client = api_client_for(server)
    try:
        return fn(client)
    finally:
        client.close()


def enforced(fake_api, cfg, stack, variant="healthy"):
    return _run(fake_api, cfg, stack, variant,
                lambda c: check_policy_enforced(cfg, k8s.AppsV1Api(c), k8s.CoreV1Api(c)))


def peers(fake_api, cfg, stack, variant="healthy"):
    return _run(fake_api, cfg, stack, variant,
                lambda c: check_policy_peers(cfg, cfg.workloads[0], k8s.NetworkingV1Api(c), k8s.CoreV1Api(c)))


def test_terway_with_its_switch_on_passes_and_off_warns(fake_api, staging_cfg, tmp_path, monkeypatch):
    r = enforced(fake_api, staging_cfg, "staging")
    assert (r.ok, r.warning, r.message) == (True, False, "Terway (terway-eniip) enforces NetworkPolicy")
    v = Variant(tmp_path, monkeypatch, "staging")
    cm = json.loads((STAGING / "api/v1/namespaces/kube-system/configmaps/eni-config.json").read_text())
    cm["data"]["disable_network_policy"] = "true"
    v.write("api/v1/namespaces/kube-system/configmaps/eni-config", cm)
    r = enforced(fake_api, staging_cfg, "staging", "variant")
    assert (r.ok, r.warning) == (True, True)
    assert r.message == 'Terway (terway-eniip) runs with network policy off: kube-system/eni-config sets ' \
                        'disable_network_policy: "true"'


def test_flannel_warns_an_enforcing_plugin_passes_and_an_unknown_one_is_said(fake_api, prod_cfg, tmp_path,
                                                                          monkeypatch):
    r = enforced(fake_api, prod_cfg, "prod")
    assert (r.ok, r.warning) == (True, True) and r.message.startswith("flannel (kube-flannel-ds) does not enforce")
    v = Variant(tmp_path, monkeypatch, "prod")
    daemonsets = json.loads((PROD / "apis/apps/v1/namespaces/kube-system/daemonsets.json").read_text())
    calico = copy.deepcopy(daemonsets)
    calico["items"][0]["metadata"]["name"] = "calico-node"
    v.write("apis/apps/v1/namespaces/calico-system/daemonsets", calico)
    r = enforced(fake_api, prod_cfg, "prod", "variant")
    assert (r.ok, r.warning) == (True, False) and r.message.startswith("enforced by calico-node: Calico")
    other = copy.deepcopy(daemonsets)
    other["items"] = other["items"][1:]
    v.write("apis/apps/v1/namespaces/kube-system/daemonsets", other)
    (v.dir / "apis/apps/v1/namespaces/calico-system/daemonsets.json").unlink()
    r = enforced(fake_api, prod_cfg, "prod", "variant")
    assert (r.ok, r.warning) == (True, True)
    assert r.message == "no plugin known to enforce NetworkPolicy runs in kube-system, calico-system (DaemonSets: " \
                        "csi-plugin)"


def test_no_check_when_every_workload_turned_its_policy_off(prod_cfg):
    cfg = prod_cfg.model_copy(update={"workloads": [prod_cfg.workloads[0].model_copy(update={
        "network_policy": prod_cfg.workloads[0].network_policy.model_copy(update={"enabled": False})})]})
    assert check_policy_enforced(cfg, None, None) is None


def test_peers_found_as_documented_pass(fake_api, prod_cfg):
    r = peers(fake_api, prod_cfg, "prod")
    assert (r.ok, r.subject) == (True, "networkpolicy/inference/flower")
    assert r.message == ("present; the ingress controller: 1 pod(s) in kube-system; the Prometheus that scrapes it: "
                         "1 pod(s) in monitoring")


@pytest.mark.parametrize("mutate,message", [
    (lambda pods: pods["items"].pop(), "no pod of the ingress controller matches what the policy admits: "
                                       "kube-system/app=ingress-nginx (ACK's nginx-ingress-controller add-on)"),
    (lambda pods: pods["items"][-1]["spec"].update(hostNetwork=True),
     "the ingress controller runs on the host network (nginx-ingress-controller-6c5f7d8b9-m4k7p)"),
])
def test_a_peer_that_does_not_run_as_documented_fails(fake_api, prod_cfg, tmp_path, monkeypatch, mutate, message):
    v = Variant(tmp_path, monkeypatch, "prod")
    pods = json.loads((PROD / "api/v1/namespaces/kube-system/pods.json").read_text())
    mutate(pods)
    v.write("api/v1/namespaces/kube-system/pods", pods)
    r = peers(fake_api, prod_cfg, "prod", "variant")
    assert not r.ok and r.message.startswith(message)
    assert "networkPolicy.allowFrom" in r.cause or "ipBlock" in r.cause


def test_a_missing_policy_fails(fake_api, prod_cfg, tmp_path, monkeypatch):
    v = Variant(tmp_path, monkeypatch, "prod")
    v.write("apis/networking.k8s.io/v1/namespaces/inference/networkpolicies/flower",
            {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404,
             "message": "networkpolicies.networking.k8s.io \"flower\" not found"})
    r = peers(fake_api, prod_cfg, "prod", "variant")
    assert (r.ok, r.message) == (False, "NetworkPolicy not found: every pod of the cluster reaches the workload")
