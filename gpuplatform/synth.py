"""Run the Pulumi program in-process under the SDK's mock runtime, recording every registered resource.

No Pulumi CLI, no provider plugins, no cloud: invokes the program calls (the ACK kubeconfig, the ARMS endpoint)
are answered with offline placeholders, and provider-computed outputs (ids) are invented.
"""
import json
from contextlib import contextmanager
from typing import Any, Callable, Optional

import pulumi
from google.protobuf import struct_pb2
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.proto import resource_pb2, source_pb2

from gpuplatform.collector import collector_paused
from gpuplatform.records import RegisteredResource, normalize, restore_nulls

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
    # a first deploy: the stack's cluster does not exist yet, and an adopted cluster is taken to have none of the
    # add-ons the stack installs (a real run reads both from ACK)
    "alicloud:cs/getClusters:getClusters": lambda a: {"clusters": [], "ids": []},
    # an adopted cluster offline: node autoscaling taken as on (its add-on installed), which a plan cannot see;
    # the program refuses an autoscaled pool on a cluster where the live lookup finds it off
    "alicloud:cs/getKubernetesAddons:getKubernetesAddons": lambda a: {
        "clusterId": a.args.get("clusterId"), "ids": [f"{a.args.get('clusterId')}:cluster-autoscaler"],
        "addons": [{"name": "cluster-autoscaler", "currentVersion": "offline", "currentConfig": "{}",
                    "nextVersion": "", "required": False}]},
}

COMPUTED: dict[str, Callable[[str], dict]] = {
    "alicloud:cs/managedKubernetes:ManagedKubernetes": lambda name: {
        "id": f"c-offline-{name}", "connections": [{"apiServerIntranet": "https://192.168.0.250:6443",
                                                    "apiServerInternet": "https://127.0.0.1:6443"}]},
    "alicloud:cs/nodePool:NodePool": lambda name: {"nodePoolId": f"np-offline-{name}"},
    # read, never created: the ARMS GPU exporter DaemonSet, offline without tolerations of its own
    "kubernetes:apps/v1:DaemonSet": lambda name: {"spec": {"template": {"spec": {"tolerations": []}}}},
}


def provider_outputs(typ: str, name: str) -> tuple[str, dict]:
    """The id and provider-computed outputs a resource gets offline. Inputs are not echoed back: the program never
    reads an input back from a resource."""
    extra = COMPUTED.get(typ, lambda _: {})(name)
    return extra.get("id", f"{name}-offline-id"), {k: v for k, v in extra.items() if k != "id"}


class OfflineMocks(pulumi.runtime.Mocks):
    def __init__(self):
        self.invokes: list[tuple[str, dict]] = []
        self.invoke_providers: list[str] = []
        """The provider reference of each invoke (empty: the package's default provider)."""
        self.outputs: dict[str, Any] = {}
        """URN -> the outputs a resource registered (``register_outputs``; the stack's exports), as the engine
        receives them: serialized, secrets still marked."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        return provider_outputs(args.typ, args.name)

    def call(self, args: pulumi.runtime.MockCallArgs):
        self.invokes.append((args.token, dict(args.args)))
        self.invoke_providers.append(args.provider or "")
        return INVOKES.get(args.token, lambda a: {})(args)


def alias_specs(request) -> tuple[tuple[str, str, str], ...]:
    """(parent URN, type, name) of each alias of a registration, with unset fields resolved as the engine resolves
    them: the resource's own name and type, its own parent unless ``noParent`` (pulumi/pulumi
    ``proto/pulumi/alias.proto``, ``Alias.Spec``)."""
    out = []
    for alias in request.aliases:
        if alias.urn:
            out.append(("urn", "", alias.urn))
            continue
        spec = alias.spec
        parent = "" if spec.noParent else (spec.parentUrn or request.parent)
        out.append((parent, spec.type or request.type, spec.name or request.name))
    return tuple(out)


class RecordingMonitor(MockMonitor):
    """Keeps each registration request as the engine would receive it (inputs, parent, protect, dependencies).

    Inputs stay serialized until the program has finished: decoding them inside the registration call (as the
    SDK's own mock monitor does) costs as much again as the registration itself, on the SDK's worker threads."""

    def __init__(self, mocks: OfflineMocks):
        super().__init__(mocks)
        self.requests: list[tuple[str, Any]] = []
        self.aliases: dict[str, tuple] = {}

    def RegisterResource(self, request):
        urn = self.make_urn(request.parent, request.type, request.name)
        if request.type == "pulumi:pulumi:Stack":
            return resource_pb2.RegisterResourceResponse(urn=urn)
        resource_id, state = provider_outputs(request.type, request.name)
        if request.type == "alicloud:cs/managedKubernetes:ManagedKubernetes":
            # a cluster created without an Internet endpoint reports none (DescribeClusterDetail master_url)
            sent = request.object.fields.get("slbInternetEnabled")
            if sent is not None and sent.HasField("bool_value") and not sent.bool_value:
                state = {**state, "connections": [{k: v for k, v in c.items() if k != "apiServerInternet"}
                                                  for c in state.get("connections", [])]}
        outputs = struct_pb2.Struct()
        outputs.update(state)
        self.resources[urn] = MockMonitor.ResourceRegistration(urn, resource_id, state)
        self.requests.append((urn, request))
        self.aliases[urn] = alias_specs(request)
        return resource_pb2.RegisterResourceResponse(urn=urn, id=resource_id, object=outputs)

    def RegisterResourceOutputs(self, request):
        """``register_outputs``: the engine replaces a component's outputs with exactly these (pulumi
        ``pkg/resource/deploy/step_executor.go``, ``executeRegisterResourceOutputs``), and they are all
        ``AnalyzeStack`` ever sees of a component."""
        self.mocks.outputs[request.urn] = request.outputs
        return super().RegisterResourceOutputs(request)


@contextmanager
def _without_stack_traces():
    """Skip the Python stack the SDK attaches to every registration request.

    The engine uses it only to point its own diagnostics at source lines, and a plan has no engine; capturing it
    (a walk of the stack that reads every frame's source line) took a tenth of a 500-workload run. Only this
    in-process run is affected; ``pulumi preview`` and ``pulumi up`` go through the SDK untouched."""
    original = getattr(sdk_resource, "_get_stack_trace", None)
    if original is None:  # a newer SDK without the hook: slower, still correct
        yield
        return
    sdk_resource._get_stack_trace = source_pb2.StackTrace
    try:
        yield
    finally:
        sdk_resource._get_stack_trace = original


def _name_of(urn: str) -> Optional[str]:
    if not urn or urn.split("::")[2].endswith("pulumi:pulumi:Stack"):
        return None  # top-level resources: the stack is the engine's, not ours
    return urn.rsplit("::", 1)[-1]


def synthesize(config: dict[str, Any], program: Optional[Callable[[], Any]] = None, *, stack: str = "offline",
               project: str = "gpu-platform", secret_keys: Optional[tuple] = None,
               mocks: Optional[OfflineMocks] = None) -> list[RegisteredResource]:
    """Run ``program`` (default: the gpu-platform program) with ``config`` (full keys, e.g.
    ``gpu-platform:nodePools``) and return every registered resource in registration order.

    ``secret_keys`` are the keys the CLI would mark secret; default: the package's secret keys present in
    ``config`` (offline they come from a stack file, whose reader accepts them only encrypted). ``mocks``: an
    :class:`OfflineMocks` (or subclass) that answers the invokes and keeps what was invoked; default a new one."""
    if secret_keys is None:
        secret_keys = secret_config_keys(config)
    if program is None:
        from gpuplatform.program import main as program
    mocks = mocks or OfflineMocks()
    monitor = RecordingMonitor(mocks)
    from gpuplatform.components.assembly import BUILT

    BUILT.clear()  # what this run builds, for the tools that read a composed program
    pulumi.runtime.reset_options()
    # a plan is a preview: the engine hands back no final values, so the SDK does not decode every input again
    # to stand in for outputs the provider did not return
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=True, monitor=monitor)
    pulumi.runtime.set_all_config({k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()},
                                  list(secret_keys))
    def run() -> None:
        program()  # its return value means nothing to the engine (runpy hands back the module's globals)

    with collector_paused(), _without_stack_traces():
        pulumi.runtime.test(run)()
    urns = {urn for urn, _ in monitor.requests}
    if len(urns) != len(monitor.requests):
        raise RuntimeError("two resources share a URN; the engine would reject this program")
    out = []
    for urn, req in monitor.requests:
        secrets: set[str] = set()
        inputs = normalize(restore_nulls(req.object, rpc.deserialize_properties(req.object)), secrets)
        registered = mocks.outputs.get(urn)
        outputs = None if registered is None else normalize(rpc.deserialize_properties(registered, True))
        out.append(RegisteredResource(
            type=req.type, name=req.name, inputs=inputs, parent=_name_of(req.parent), parent_urn=req.parent,
            custom=bool(req.custom),
            protect=bool(req.protect), retain_on_delete=bool(req.retainOnDelete), import_id=req.importId,
            ignore_changes=tuple(req.ignoreChanges), depends_on=[_name_of(d) for d in req.dependencies], urn=urn,
            custom_timeouts={k: v for k in ("create", "update", "delete")
                             if (v := getattr(req.customTimeouts, k, ""))},
            provider=req.provider, secret_strings=frozenset(secrets), outputs=outputs,
            aliases=monitor.aliases.get(urn, ())))
    return out


def secret_config_keys(config: dict[str, Any]) -> tuple[str, ...]:
    """The full keys of ``config`` that hold the package's secrets."""
    from gpuplatform.components.config import PROJECT, SECRET_KEYS

    return tuple(k for k in (f"{PROJECT}:{name}" for name in SECRET_KEYS) if config.get(k) is not None)


def stack_config_from_namespace(raw: dict[str, Any]) -> dict[str, Any]:
    from gpuplatform.components.config import PROJECT

    return {f"{PROJECT}:{k}": v for k, v in raw.items()}
