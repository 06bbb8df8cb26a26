"""Run the Pulumi program in-process under the SDK's mock runtime, recording every registered resource.

No Pulumi CLI, no provider plugins, no cloud: invokes the program calls (the ACK kubeconfig, the ARMS endpoint)
are answered with offline placeholders, and provider-computed outputs (ids) are invented.
"""
import json
from typing import Any, Callable, Optional

import pulumi
from pulumi.runtime.mocks import MockMonitor

from gpuplatform.records import RegisteredResource, normalize

OFFLINE_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: offline, cluster: {server: "https://127.0.0.1:6443"}}]
contexts: [{name: offline, context: {cluster: offline, user: offline}}]
current-context: offline
users: [{name: offline, user: {token: offline}}]
"""


OFFLINE_TOKEN = "offline-token"
OFFLINE_SECRETS = {OFFLINE_KUBECONFIG, OFFLINE_TOKEN}
"""Values the invokes answer with that stand in for secrets; the plan masks them like real ones."""


def _arms_prometheus(args) -> dict:
    cluster = (args.args.get("ids") or ["offline"])[0]
    return {"ids": [cluster], "enableDetails": True, "prometheis": [{
        "id": cluster, "clusterId": cluster, "clusterName": cluster, "clusterType": "aliyun-cs",
        "httpApiIntraUrl": f"http://offline-intranet.arms.aliyuncs.com:9090/api/v1/prometheus/offline/{cluster}",
        "httpApiInterUrl": f"https://offline.arms.aliyuncs.com:9443/api/v1/prometheus/offline/{cluster}",
        "authToken": OFFLINE_TOKEN}]}


INVOKES: dict[str, Callable[[Any], dict]] = {
    "alicloud:cs/getClusterCredential:getClusterCredential": lambda a: {
        "kubeConfig": OFFLINE_KUBECONFIG, "clusterId": a.args.get("clusterId"), "certificateAuthorities": []},
    "alicloud:arms/getPrometheus:getPrometheus": _arms_prometheus,
}

COMPUTED: dict[str, Callable[[Any], dict]] = {
    "alicloud:cs/managedKubernetes:ManagedKubernetes": lambda a: {"id": f"c-offline-{a.name}"},
    "alicloud:cs/nodePool:NodePool": lambda a: {"nodePoolId": f"np-offline-{a.name}"},
}


class OfflineMocks(pulumi.runtime.Mocks):
    def __init__(self):
        self.inputs: dict[tuple[str, str], dict] = {}
        self.invokes: list[tuple[str, dict]] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        self.inputs[(args.typ, args.name)] = args.inputs
        extra = COMPUTED.get(args.typ, lambda a: {})(args)
        # only provider-computed outputs go back: the program never reads inputs back from resources, and
        # echoing every input doubles the serialization work per resource
        state = {k: v for k, v in extra.items() if k != "id"}
        return extra.get("id", f"{args.name}-offline-id"), state

    def call(self, args: pulumi.runtime.MockCallArgs):
        self.invokes.append((args.token, dict(args.args)))
        return INVOKES.get(args.token, lambda a: {})(args)


class RecordingMonitor(MockMonitor):
    """Keeps what the engine would receive besides inputs: parent, protect, explicit dependencies."""

    def __init__(self, mocks: OfflineMocks):
        super().__init__(mocks)
        self.requests: list[tuple[str, Any]] = []

    def RegisterResource(self, request):
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.requests.append((response.urn, request))
        return response


def _name_of(urn: str) -> Optional[str]:
    if not urn or urn.split("::")[2].endswith("pulumi:pulumi:Stack"):
        return None  # top-level resources: the stack is the engine's, not ours
    return urn.rsplit("::", 1)[-1]


def synthesize(config: dict[str, Any], program: Optional[Callable[[], Any]] = None, *, stack: str = "offline",
               project: str = "gpu-platform", secret_keys: tuple = ()) -> list[RegisteredResource]:
    """Run ``program`` (default: the gpu-platform program) with ``config`` (full keys, e.g.
    ``gpu-platform:nodePools``) and return every registered resource in registration order."""
    if program is None:
        from gpuplatform.program import main as program
    mocks = OfflineMocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.reset_options()
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False, monitor=monitor)
    pulumi.runtime.set_all_config({k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()},
                                  list(secret_keys))
    pulumi.runtime.test(lambda: program())()
    urns = {urn for urn, _ in monitor.requests}
    if len(urns) != len(monitor.requests):
        raise RuntimeError("two resources share a URN; the engine would reject this program")
    out = []
    for urn, req in monitor.requests:
        inputs = normalize(mocks.inputs.get((req.type, req.name), {}))
        out.append(RegisteredResource(
            type=req.type, name=req.name, inputs=inputs, parent=_name_of(req.parent), custom=bool(req.custom),
            protect=bool(req.protect), depends_on=[_name_of(d) for d in req.dependencies], urn=urn))
    return out


def stack_config_from_namespace(raw: dict[str, Any]) -> dict[str, Any]:
    from components.config import PROJECT

    return {f"{PROJECT}:{k}": v for k, v in raw.items()}
