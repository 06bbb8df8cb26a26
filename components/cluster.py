"""GpuCluster: the Kubernetes cluster the platform runs on, and the providers every child uses.

Three targets, chosen by ``cluster.kind``:

* ``ack-managed``: a VPC, its vSwitches and an ACK managed cluster created with its network plugin and disk CSI
  driver; every other add-on is a ``KubernetesAddon``;
* ``ack-existing``: an existing ACK cluster adopted by id (no cluster resource; add-ons via ``KubernetesAddon``);
* ``kubeconfig``: any cluster by kubeconfig path/content and context (no Alibaba resources at all).

On ACK one ``alicloud.Provider`` built from ``cluster.region`` serves every Alibaba resource and lookup of the
stack (``alicloud_provider``), so nothing depends on ``alicloud:region`` or ``ALICLOUD_REGION``.

The kubeconfig is a secret. On ACK it is the user's long-lived ACK kubeconfig (``cs.get_cluster_credential``
without ``temporary_duration_minutes``: valid three years, the same on every run), for the public API endpoint
(the credential API hard-codes ``PrivateIpAddress=false``). A temporary credential would be stored in the state
and break ``destroy``/``refresh`` once expired, and change the provider on every preview. Trade-off: a
long-lived client certificate sits in the (encrypted) state; revoke it in the ACK console when a user leaves.
With ``credential: ack-ram-tool`` the kubeconfig keeps only the API endpoint and CA and runs the ack-ram-tool
credential plugin for every connection. See docs/ack.md.
"""
import json
from typing import Literal, Optional, TypedDict

import yaml

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import NotRequired

from gpuplatform.catalogs import ack
from gpuplatform.catalogs.versions import ACK_ADDONS
from gpuplatform.components.config import AckExistingCluster, AckManagedCluster, KubeconfigCluster, Model
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.config import Cluster as ClusterSpec
from gpuplatform.components.assembly import BUILT


class GpuClusterArgs(TypedDict):
    cluster: dict
    """Cluster target in the stack-file format (``gpu-platform:cluster``): ``kind`` ack-managed | ack-existing |
    kubeconfig and its fields, e.g. ``{"kind": "kubeconfig", "kubernetesVersion": "1.33", "context": "ml"}``.
    Required."""
    environment: NotRequired[Literal["dev", "staging", "prod", "local"]]
    """The environment the cluster serves: ``prod`` protects the cluster and its GPU pools and runs two metrics
    adapter replicas. Default ``dev``."""
    protect: NotRequired[bool]
    """Pulumi ``protect`` (and ACK deletion protection) on the cluster; node pools default to the same. Default:
    true in ``prod``, false elsewhere."""
    allow_public_endpoints: NotRequired[bool]
    """Whether services on this cluster may be exposed as Internet-facing LoadBalancers. Default false."""
    allow_end_of_life_charts: NotRequired[list[str]]
    """Charts (e.g. ``["cert-manager"]``) whose end-of-life pinned version the components on this cluster may
    install when no supported pin covers its Kubernetes version. Default none."""
    addons: NotRequired[list[str]]
    """ACK add-ons (names from ``catalogs/ack.py``) to install besides the ones the components need, which they
    install themselves (managed Prometheus for ARMS monitoring, the GPU sharing installer for cGPU and MIG pools,
    the node repair add-ons for managed pools, the NGINX controller for nginx Ingresses). Default none."""
    kubeconfig: NotRequired[pulumi.Input[str]]
    """kubeconfig contents for ``kind: kubeconfig`` (treated as a secret). Default: ``kubeconfigPath`` or
    ``$KUBECONFIG``."""
    stack_name: NotRequired[str]
    """Used for the default cluster name. Default ``pulumi.get_stack()``."""


class _Args(Model):
    cluster: ClusterSpec
    addons: list[str] = []
    protect: bool = False
    stack_name: Optional[str] = None


def default_cluster_name(stack: str) -> str:
    return f"gpu-platform-{stack}"


ACK_RAM_TOOL = "ack-ram-tool"
EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"


def credential_plugin_kubeconfig(ack_kubeconfig: str, cluster_id: str) -> str:
    """A kubeconfig for the endpoint and CA of ``ack_kubeconfig`` whose user runs the ack-ram-tool credential
    plugin (``ack-ram-tool credential-plugin get-credential``, AliyunContainerService/ack-ram-tool docs
    "get-kubeconfig"): no client credential in it, and the same text on every run."""
    source = yaml.safe_load(ack_kubeconfig)
    endpoint = source["clusters"][0]["cluster"]
    user = f"{ACK_RAM_TOOL}-{cluster_id}"
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": cluster_id,
        "clusters": [{"name": cluster_id, "cluster": {k: endpoint[k] for k in ("server", "certificate-authority-data")
                                                      if k in endpoint}}],
        "contexts": [{"name": cluster_id, "context": {"cluster": cluster_id, "user": user}}],
        "users": [{"name": user, "user": {"exec": {
            "apiVersion": EXEC_API_VERSION, "command": ACK_RAM_TOOL,
            "args": ["credential-plugin", "get-credential", "--cluster-id", cluster_id, "--api-version", "v1beta1",
                     "--log-level", "error"],
            "interactiveMode": "Never", "provideClusterInfo": False}}}],
    }, sort_keys=True)


class GpuCluster(pulumi.ComponentResource):
    """The cluster target, its Kubernetes provider and (on ACK) the Alibaba Cloud provider of its region."""

    cluster_id: pulumi.Output[str]
    vswitch_ids: pulumi.Output[list]
    kubeconfig: pulumi.Output[str]
    alicloud_provider: Optional[pulumi.ProviderResource]
    """``alicloud.Provider`` for ``cluster.region``; pass it to every Alibaba resource and invoke. None off ACK."""

    def __init__(self, name: str, args: GpuClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        from gpuplatform.components import assembly
        from gpuplatform.components.args import ArgsIssue, check_args, component_label, did_you_mean, raise_for
        from gpuplatform.components.args import stop_on_config_error
        from gpuplatform.components.validation import validate as _validate

        raise_for(check_args("GpuCluster", name, args, GpuClusterArgs))
        label = component_label("GpuCluster", name)
        self.label = label
        unknown = [a for a in args.get("addons") or [] if a not in ack.ADDONS]
        raise_for([ArgsIssue(f"{label} args.addons", f"{a!r} is not an ACK add-on of the catalog"
                             f"{did_you_mean(a, ack.ADDONS)}; allowed: {', '.join(sorted(ack.ADDONS))}")
                   for a in unknown])
        try:
            cluster = assembly.parse_section(ClusterSpec, args["cluster"], "cluster")
            self.settings = assembly.settings(args.get("environment", "dev"), args.get("protect"),
                                              args.get("allow_public_endpoints", False),
                                              allow_end_of_life_charts=list(args.get("allow_end_of_life_charts") or []))
            self.spec = cluster
            issues = _validate(self.view(), areas=("cluster",), installs_charts=False)
            if issues:
                raise ConfigError(issues)
        except ConfigError as exc:
            stop_on_config_error(exc, {"cluster": f"{label} args.cluster", "settings": f"{label} args"})
        spec = _Args(cluster=cluster, addons=list(args.get("addons") or []), protect=self.settings.protect_resources,
                     stack_name=args.get("stack_name"))
        self.kubernetes_version: str = cluster.kubernetes_version
        self.environment: str = self.settings.environment
        self.protect: bool = self.settings.protect_resources
        self.allow_public_endpoints: bool = self.settings.allow_public_endpoints
        self.node_pools: list = []
        """The GpuNodePools built on this cluster so far (each checks the cluster-wide rules against the others)."""
        # the stack policies read the environment, version and exposure setting of a consumer's stack from these
        # (a GpuPlatform registers the same; docs/policies.md "What the policies see")
        props = {"kind": cluster.kind, "environment": self.environment, "kubernetesVersion": self.kubernetes_version,
                 "allowPublicEndpoints": self.allow_public_endpoints}
        super().__init__("gpuplatform:index:GpuCluster", name, props, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.is_ack = cluster.kind != "kubeconfig"
        self.is_ack_pro = self.is_ack and bool(getattr(cluster, "professional", False))
        self.simulate_gpus = bool(getattr(cluster, "simulate_gpus", False))
        self.addons: dict[str, pulumi.Resource] = {}
        """Add-on name -> its ``KubernetesAddon``: what a resource that needs the add-on waits for."""
        self.adopted = isinstance(cluster, AckExistingCluster)
        self.alicloud_provider = None
        self._ali_opts = None
        if self.is_ack:
            import pulumi_alicloud as alicloud

            self.alicloud_provider = alicloud.Provider(f"{name}-alicloud", region=cluster.region, opts=child)
            ali = pulumi.ResourceOptions(parent=self, provider=self.alicloud_provider)
        self._name = name
        if isinstance(cluster, AckManagedCluster):
            self._create_ack(name, cluster, spec, ali)
        elif isinstance(cluster, AckExistingCluster):
            self.cluster_id = pulumi.Output.from_input(cluster.cluster_id)
            self.vswitch_ids = pulumi.Output.from_input(list(cluster.vswitch_ids))
        if self.is_ack:
            # On an adopted cluster the add-ons may have been there before the stack: ``retain_on_delete`` keeps
            # ``pulumi destroy`` from uninstalling what the cluster's other tenants rely on.
            self._ali_opts = pulumi.ResourceOptions.merge(ali, pulumi.ResourceOptions(retain_on_delete=self.adopted))
            self.require_addons(*spec.addons)
            # no temporary_duration_minutes: the long-lived kubeconfig, the same on every run (docs/ack.md)
            cred = alicloud.cs.get_cluster_credential_output(
                cluster_id=self.cluster_id,
                opts=pulumi.InvokeOutputOptions(parent=self, provider=self.alicloud_provider))
            kubeconfig = cred.kube_config
            if cluster.credential == ACK_RAM_TOOL:
                kubeconfig = pulumi.Output.all(cred.kube_config, self.cluster_id).apply(
                    lambda a: credential_plugin_kubeconfig(a[0], a[1]))
            self.kubeconfig = pulumi.Output.secret(kubeconfig)
            provider_args = {"kubeconfig": self.kubeconfig}
        else:
            assert isinstance(cluster, KubeconfigCluster)
            self.cluster_id = pulumi.Output.from_input(cluster.context or "current-context")
            self.vswitch_ids = pulumi.Output.from_input([])
            source = args.get("kubeconfig") or cluster.kubeconfig_path
            self.kubeconfig = pulumi.Output.secret(source) if source else pulumi.Output.secret("")
            provider_args = {"kubeconfig": self.kubeconfig} if source else {}
            if cluster.context:
                provider_args["context"] = cluster.context
        # The provider waits for nothing but the kubeconfig: whatever waits for the provider waits for its
        # dependencies too (the SDK resolves a resource's provider reference before registering it), so the
        # add-ons are waited for by the objects that need them (see ``require_addons``).
        self.provider = k8s.Provider(f"{name}-k8s", **provider_args, opts=child)
        BUILT.append(self)  # for the tools that read a composed program (components/assembly.py)
        # registered outputs are what AnalyzeStack sees of a component, its inputs are not
        self.register_outputs({**props, "cluster_id": self.cluster_id, "kubeconfig": self.kubeconfig})

    def view(self, node_pools=(), monitoring=None, workloads=(), namespace=None, **extra):
        """The stack-file config of this cluster and the parts given (see :mod:`components.assembly`)."""
        from gpuplatform.components import assembly

        return assembly.view(self.settings, self.spec, node_pools, monitoring, workloads, namespace, **extra)

    def _create_ack(self, name: str, cluster: AckManagedCluster, spec: _Args, ali: pulumi.ResourceOptions) -> None:
        import pulumi_alicloud as alicloud

        vpc = alicloud.vpc.Network(f"{name}-vpc", vpc_name=f"{name}-vpc", cidr_block=cluster.vpc_cidr, opts=ali)
        switches = [alicloud.vpc.Switch(f"{name}-vsw-{i}", vpc_id=vpc.id, cidr_block=v.cidr, zone_id=v.zone_id,
                                        vswitch_name=f"{name}-vsw-{i}", opts=ali)
                    for i, v in enumerate(cluster.vswitches)]
        pod_switches = [alicloud.vpc.Switch(f"{name}-pod-vsw-{i}", vpc_id=vpc.id, cidr_block=v.cidr,
                                            zone_id=v.zone_id, vswitch_name=f"{name}-pod-vsw-{i}", opts=ali)
                        for i, v in enumerate(cluster.pod_vswitches)]
        network = ({"pod_cidr": cluster.effective_pod_cidr} if cluster.network_plugin == "flannel"
                   else {"pod_vswitch_ids": [s.id for s in pod_switches]})
        ack_cluster = alicloud.cs.ManagedKubernetes(
            f"{name}-ack",
            name=cluster.name or default_cluster_name(spec.stack_name or pulumi.get_stack()),
            cluster_spec=cluster.cluster_spec,
            version=cluster.kubernetes_version,
            vswitch_ids=[s.id for s in switches],
            service_cidr=cluster.service_cidr,
            new_nat_gateway=True,
            slb_internet_enabled=cluster.public_api_endpoint,
            proxy_mode="ipvs",
            deletion_protection=spec.protect,
            # read by the provider's create call only: the network plugin and CSI driver the cluster needs to
            # start; everything else is a KubernetesAddon (_install_addons)
            addons=ack.creation_addons(cluster.network_plugin, cluster.cluster_spec, ACK_ADDONS),
            **network,
            opts=pulumi.ResourceOptions.merge(ali, pulumi.ResourceOptions(protect=spec.protect)))
        self.cluster_id = ack_cluster.id
        self.vswitch_ids = pulumi.Output.all(*[s.id for s in switches])

    def addon_dependencies(self, *names: str) -> list[pulumi.Resource]:
        """What a resource that needs the named add-ons waits for, of those installed so far."""
        return [self.addons[n] for n in dict.fromkeys(names) if n in self.addons]

    def require_addons(self, *names: str) -> list[pulumi.Resource]:
        """Install the named ACK add-ons once per cluster (the first component that needs one installs it) and
        return what a resource that needs them waits for. Off ACK there is nothing to install.

        ``KubernetesAddon`` installs a missing add-on, adopts (and updates) one that is already there, and can be
        added at any later ``pulumi up``; the add-on is a child of the cluster whichever component asked first,
        so its URN does not depend on the order components are built in."""
        if not self.is_ack:
            return []
        import pulumi_alicloud as alicloud

        for addon in dict.fromkeys(names):
            if addon in self.addons:
                continue
            catalog = ack.ADDONS[addon]
            kwargs = {"version": ACK_ADDONS[addon]} if ACK_ADDONS.get(addon) else {}
            if catalog.config:
                kwargs["config"] = json.dumps(catalog.config, sort_keys=True)
            self.addons[addon] = alicloud.cs.KubernetesAddon(
                f"{self._name}-{addon}", cluster_id=self.cluster_id, name=addon, opts=self._ali_opts, **kwargs)
        return self.addon_dependencies(*names)
