"""The local control plane is shaped like a real cluster where it matters: the pinned release, TLS, no anonymous
access, RBAC in force, kwok nodes Ready with the capacity they were given."""
import ssl
import time
import urllib.error
import urllib.request

import pytest

from gpuplatform.rehearse.apply import Discovery
from gpuplatform.rehearse.engines import pinned_versions
from gpuplatform.rehearse.placement import create_nodes
from gpuplatform.components.placement import NodeGroup


def test_it_runs_the_pinned_release(control_plane):
    assert control_plane.get("/version")["gitVersion"] == pinned_versions()["KUBERNETES_VERSION"]


def test_a_request_without_a_client_certificate_is_refused(control_plane):
    ctx = ssl.create_default_context(cafile=control_plane.pki.path("ca.crt"))
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(control_plane.server + "/api/v1/namespaces", context=ctx, timeout=10)
    assert refused.value.code == 401


def test_rbac_denies_a_service_account_nothing_grants(control_plane):
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": "system:serviceaccount:default:default", "resourceAttributes": {
                  "verb": "list", "resource": "secrets", "namespace": "kube-system"}}}
    status, body = control_plane.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    assert status == 201
    assert body["status"]["allowed"] is False


def test_a_kwok_node_is_ready_with_the_capacity_it_was_given(control_plane):
    group = NodeGroup("pool t4", {"gpuplatform.io/pool": "t4"}, ({"key": "nvidia.com/gpu", "value": "present",
                                                                 "effect": "NoSchedule"},),
                      {"cpu": 15.5, "memory": 58 * 2 ** 30, "nvidia.com/gpu": 1.0, "pods": 64.0}, 1)
    create_nodes(control_plane, Discovery(control_plane), [group])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        node = control_plane.get("/api/v1/nodes/pool-t4-0")
        ready = [c for c in node["status"].get("conditions", []) if c["type"] == "Ready"]
        # the node lifecycle controller lifts its not-ready taint a moment after the node turns Ready
        lifted = not any(t["key"].startswith("node.kubernetes.io/") for t in node["spec"].get("taints", []))
        if ready and ready[0]["status"] == "True" and lifted:
            break
        time.sleep(0.5)
    assert ready and ready[0]["status"] == "True"
    # the server stores quantities in canonical form (59392Mi is 58Gi)
    assert node["status"]["allocatable"] == {"cpu": "15500m", "memory": "58Gi", "nvidia.com/gpu": "1",
                                             "pods": "64"}
    assert node["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]


def test_nothing_the_control_plane_dials_can_leave_the_machine(control_plane):
    """A webhook, an aggregated API or a pod address kwok made up: inside the control plane's network namespace
    the only routes are its own /30 and loopback, so a dial elsewhere fails at once (no packet leaves)."""
    import subprocess
    import sys

    probe = ("import socket, errno\n"
             "s = socket.socket(); s.settimeout(2)\n"
             "try:\n    s.connect(('10.244.0.5', 443)); print('connected')\n"
             "except OSError as e:\n    print(errno.errorcode.get(e.errno, e))\n")
    done = subprocess.run(control_plane.network.inside([sys.executable, "-c", probe]), capture_output=True,
                          text=True, timeout=30)
    assert done.stdout.strip() == "ENETUNREACH", done.stdout + done.stderr
    routes = subprocess.run(control_plane.network.inside(["ip", "route"]), capture_output=True, text=True,
                            timeout=10).stdout
    assert "default" not in routes
