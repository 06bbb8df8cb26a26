"""GpuCluster: the Kubernetes cluster the platform runs on, and the providers every child uses.

Three targets, chosen by ``cluster.kind``:

* ``ack-managed``: a VPC, its vSwitches (named by zone and CIDR), an ACK managed cluster created with its network
  plugin and disk CSI driver, and its system pool (``cluster.systemPool``: the nodes for everything but GPU work,
  which every add-on and chart waits for); every other add-on is a ``KubernetesAddon``. The cluster's version is
  never sent below the one ACK runs (``_keep_running_version``), and the inputs the stack does not own that Read
  writes back are ignored after creation (``catalogs/ack.py`` ``cluster_ignored_inputs``), so the second
  ``pulumi up`` is a no-op;
* ``ack-existing``: an existing ACK cluster adopted by id (no cluster resource; add-ons via ``KubernetesAddon``, an
  add-on the cluster already runs adopted as it is, never rewritten);
* ``kubeconfig``: any cluster by kubeconfig path/content and context (no Alibaba resources at all).

On ACK one ``alicloud.Provider`` built from ``cluster.region`` serves every Alibaba resource and lookup of the
stack (``alicloud_provider``), so nothing depends on ``alicloud:region`` (a stack file naming another region is
refused: components/stack_config.py) or ``ALICLOUD_REGION``.

The kubeconfig is a secret. On ACK it is the user's long-lived ACK kubeconfig (``cs.get_cluster_credential``
without ``temporary_duration_minutes``: valid three years, the same on every run), for the public API endpoint
(the credential API hard-codes ``PrivateIpAddress=false``), or, on a cluster created without one
(``publicApiEndpoint: false``), the same credential pointed at the intranet endpoint the cluster reports. A
temporary credential would be stored in the state and break ``destroy``/``refresh`` once expired, and change the
provider on every preview. Trade-off: a
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
from gpuplatform.catalogs.timeouts import ADDON_TIMEOUTS
from gpuplatform.catalogs.versions import ACK_ADDONS
from gpuplatform.components.clouds import cloud_for
from gpuplatform.components.clouds.compat import AckFlags
from gpuplatform.components.config import AckExistingCluster, AckManagedCluster, KubeconfigCluster, Model
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.config import Cluster as ClusterSpec
from gpuplatform.components.assembly import BUILT, ComposedComponent
from gpuplatform.components.node_pool_inputs import autoscaled_pool_options, system_pool_inputs


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
    chart_packages: NotRequired[str]
    """A directory of Helm chart packages (``<chart>-<version>.tgz``) the components on this cluster install the
    pinned charts from, instead of the charts' repositories (an air-gapped deployer). Default none."""
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


class GpuCluster(AckFlags, ComposedComponent, pulumi.ComponentResource):
    """The cluster target, its Kubernetes provider and (on ACK) the Alibaba Cloud provider of its region."""

    cluster_id: pulumi.Output[str]
    vswitch_ids: pulumi.Output[list]
    kubeconfig: pulumi.Output[str]
    alicloud_provider: Optional[pulumi.ProviderResource]
    """``alicloud.Provider`` for ``cluster.region``; pass it to every Alibaba resource and invoke. None off ACK."""

    def __init__(self, name: str, args: GpuClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        from gpuplatform.components import assembly
        from gpuplatform.components.args import ArgsIssue, check_args, component_label, did_you_mean, raise_for
        from gpuplatform.components.args import reprefix
        from gpuplatform.components.validation import validate as _validate

        label = component_label("GpuCluster", name)
        with assembly.checking(self, label) as outcome:
            raise_for(check_args("GpuCluster", name, args, GpuClusterArgs))
            self.label = label
            issues = [ArgsIssue(f"{label} args.addons", f"{a!r} is not an ACK add-on of the catalog"
                                f"{did_you_mean(a, ack.ADDONS)}; allowed: {', '.join(sorted(ack.ADDONS))}")
                      for a in args.get("addons") or [] if a not in ack.ADDONS]
            paths = {"cluster": f"{label} args.cluster", "settings": f"{label} args"}
            try:
                cluster = assembly.parse_section(ClusterSpec, args["cluster"], "cluster")
                self.settings = assembly.settings(
                    args.get("environment", "dev"), args.get("protect"), args.get("allow_public_endpoints", False),
                    allow_end_of_life_charts=list(args.get("allow_end_of_life_charts") or []),
                    chart_packages=args.get("chart_packages"))
                self.spec = cluster
                issues += reprefix(_validate(self.view(), areas=("cluster",), installs_charts=False), paths)
            except ConfigError as exc:
                issues += reprefix(exc.issues, paths)
            raise_for(issues)
            self.kubernetes_version: str = cluster.kubernetes_version
            self.environment: str = self.settings.environment
            self.protect: bool = self.settings.protect_resources
            self.allow_public_endpoints: bool = self.settings.allow_public_endpoints
            self.node_pools: list = []
            """The GpuNodePools built on this cluster so far (each checks the cluster-wide rules against the
            others)."""
            self.cloud = cloud_for(cluster)
            """The cluster's cloud profile (components/clouds)."""
            self.simulate_gpus = bool(getattr(cluster, "simulate_gpus", False))
            self.adopted = isinstance(cluster, AckExistingCluster)
        if not outcome.build:
            return
        spec = _Args(cluster=cluster, addons=list(args.get("addons") or []), protect=self.settings.protect_resources,
                     stack_name=args.get("stack_name"))
        # the stack policies read the environment, version and exposure setting of a consumer's stack from these
        # (a GpuPlatform registers the same; docs/policies.md "What the policies see")
        props = {"kind": cluster.kind, "environment": self.environment, "kubernetesVersion": self.kubernetes_version,
                 "allowPublicEndpoints": self.allow_public_endpoints}
        super().__init__("gpuplatform:index:GpuCluster", name, props, opts)
        outcome.restore()
        child = pulumi.ResourceOptions(parent=self)
        self.addons: dict[str, pulumi.Resource] = {}
        """Add-on name -> its ``KubernetesAddon``: what a resource that needs the add-on waits for."""
        self.alicloud_provider = None
        self._ali_opts = None
        if self.cloud.uses_cloud_provider:
            import pulumi_alicloud as alicloud

            self.alicloud_provider = alicloud.Provider(f"{name}-alicloud", region=cluster.region, opts=child)
            ali = pulumi.ResourceOptions(parent=self, provider=self.alicloud_provider)
        self._name = name
        self.system_nodes: list[pulumi.Resource] = []
        """What a pod that is not GPU work waits for: the system pool of a cluster the stack creates (add-ons and
        Helm releases wait for its nodes, or their pods have nowhere to run)."""
        self._intranet_endpoint: Optional[pulumi.Output] = None
        self.node_autoscaling: Optional[pulumi.Resource] = None
        """The cluster's ``cs.AutoscalingConfig``, once an autoscaled pool asked for it (``require_node_autoscaling``)."""
        self._ali = ali if self.cloud.uses_cloud_provider else None
        if isinstance(cluster, AckManagedCluster):
            self._create_ack(name, cluster, spec, ali)
        elif isinstance(cluster, AckExistingCluster):
            self.cluster_id = pulumi.Output.from_input(cluster.cluster_id)
            # sorted, as a cluster the stack creates passes them: ACK's order on read is not documented
            self.vswitch_ids = pulumi.Output.from_input(sorted(cluster.vswitch_ids))
        if self.cloud.uses_cloud_provider:
            # On an adopted cluster the add-ons may have been there before the stack: ``retain_on_delete`` keeps
            # ``pulumi destroy`` from uninstalling what the cluster's other tenants rely on. Every add-on waits
            # for the system pool: ACK's install task waits for the add-on's pods to be ready.
            self._ali_opts = pulumi.ResourceOptions.merge(ali, pulumi.ResourceOptions(
                retain_on_delete=self.adopted, depends_on=list(self.system_nodes),
                custom_timeouts=pulumi.CustomTimeouts(**ADDON_TIMEOUTS)))
            self._installed_addons = self._installed_before(cluster) if self.adopted else {}
            self.require_addons(*spec.addons)
            # no temporary_duration_minutes: the long-lived kubeconfig, the same on every run (docs/ack.md)
            cred = alicloud.cs.get_cluster_credential_output(
                cluster_id=self.cluster_id,
                opts=pulumi.InvokeOutputOptions(parent=self, provider=self.alicloud_provider))
            kubeconfig = cred.kube_config
            if self._intranet_endpoint is not None:
                kubeconfig = pulumi.Output.all(kubeconfig, self._intranet_endpoint).apply(
                    lambda a: kubeconfig_for_endpoint(a[0], a[1]))
            if cluster.credential == ACK_RAM_TOOL:
                kubeconfig = pulumi.Output.all(kubeconfig, self.cluster_id).apply(
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
        switches = [self._vswitch(name, "vsw", i, v, vpc, ali) for i, v in enumerate(cluster.vswitches)]
        pod_switches = [self._vswitch(name, "pod-vsw", i, v, vpc, ali) for i, v in enumerate(cluster.pod_vswitches)]
        # ACK's order on read is not documented and a list attribute compares by position: sorted ids read back
        # the same whether ACK keeps the order it was given or sorts
        self.vswitch_ids = pulumi.Output.all(*[s.id for s in switches]).apply(sorted)
        network = ({"pod_cidr": cluster.effective_pod_cidr, "node_cidr_mask": ack.FLANNEL_NODE_CIDR_MASK}
                   if cluster.network_plugin == "flannel"
                   else {"pod_vswitch_ids": pulumi.Output.all(*[s.id for s in pod_switches]).apply(sorted)})
        cluster_name = cluster.name or default_cluster_name(spec.stack_name or pulumi.get_stack())
        ignored = ack.cluster_ignored_inputs(cluster.network_plugin)
        existing = own_cluster(self.alicloud_provider, self, cluster_name)
        _refuse_endpoint_change(cluster, cluster_name, existing, self.label)
        if self._keep_running_version(cluster, cluster_name, existing):
            ignored.append("version")
        ack_cluster = alicloud.cs.ManagedKubernetes(
            f"{name}-ack",
            name=cluster_name,
            cluster_spec=cluster.cluster_spec,
            version=cluster.kubernetes_version,
            vswitch_ids=self.vswitch_ids,
            service_cidr=cluster.service_cidr,
            new_nat_gateway=True,
            slb_internet_enabled=cluster.public_api_endpoint,
            deletion_protection=spec.protect,
            # the endpoint it was created with, read back on every later run (_refuse_endpoint_change)
            tags={ack.STACK_TAG: stack_identity(),
                  ack.ENDPOINT_TAG: ack.endpoint_tag_value(cluster.public_api_endpoint)},
            # read by the provider's create call only: the network plugin and CSI driver the cluster needs to
            # start; everything else is a KubernetesAddon (require_addons)
            addons=ack.creation_addons(cluster.network_plugin, cluster.cluster_spec, ACK_ADDONS),
            **ack.CLUSTER_FIXED_INPUTS_SNAKE,
            # read at creation only (ForceNew, ignored afterwards: cluster_ignored_inputs)
            proxy_mode=cluster.proxy_mode or ack.default_proxy_mode(cluster.kubernetes_version),
            **network,
            opts=pulumi.ResourceOptions.merge(ali, pulumi.ResourceOptions(protect=spec.protect,
                                                                          ignore_changes=ignored)))
        self.cluster_id = ack_cluster.id
        if not cluster.public_api_endpoint:
            self._intranet_endpoint = ack_cluster.connections.apply(_private_intranet_endpoint)
        if cluster.system_pool.enabled:
            self.system_pool = alicloud.cs.NodePool(
                f"{name}-{ack.SYSTEM_POOL_NAME}", cluster_id=self.cluster_id, vswitch_ids=self.vswitch_ids,
                **system_pool_inputs(cluster.system_pool),
                opts=pulumi.ResourceOptions.merge(ali, pulumi.ResourceOptions(
                    protect=spec.protect, ignore_changes=autoscaled_pool_options(False).ignore_changes)))
            self.system_nodes = [self.system_pool]

    def _vswitch(self, name: str, kind: str, index: int, v, vpc, ali: pulumi.ResourceOptions):
        """A vSwitch named by its zone and CIDR (both ForceNew), so adding, removing or reordering the list touches
        no other vSwitch; the alias is the name it had in 0.2.0, by list position."""
        import pulumi_alicloud as alicloud

        switch_name = f"{name}-{kind}-{v.zone_id}-{v.cidr.replace('.', '-').replace('/', '-')}"
        return alicloud.vpc.Switch(switch_name, vpc_id=vpc.id, cidr_block=v.cidr, zone_id=v.zone_id,
                                   vswitch_name=switch_name,
                                   opts=pulumi.ResourceOptions.merge(ali, pulumi.ResourceOptions(
                                       aliases=[pulumi.Alias(name=f"{name}-{kind}-{index}")])))

    def _keep_running_version(self, cluster: AckManagedCluster, cluster_name: str, existing=None) -> bool:
        """Whether the cluster runs a newer version than the stack states (an upgrade outside the stack), read
        from ACK (``cs.get_clusters``, the stack's own cluster by name and tag). The provider's Read stores ACK's
        current version and its Update calls UpgradeCluster whenever ``version`` differs
        (resource_alicloud_cs_managed_kubernetes.go ``UpgradeAlicloudKubernetesCluster``), which for an older
        version is a downgrade ACK refuses, on every later ``pulumi up``: such a cluster is kept as it runs
        (``ignore_changes``), a newer version in the stack upgrades it. An older minor is an error: the stack's
        charts are pinned for the minor it states."""
        running = existing.current_version if existing is not None else None
        if running is None:
            return False
        ours, live = ack.parse_ack_version(cluster.kubernetes_version), ack.parse_ack_version(running)
        if ours is None or live is None or ours >= live:
            return False
        path = f"gpu-platform:cluster.kubernetesVersion ({self.label} args.cluster.kubernetesVersion)"
        if ours[:2] != live[:2]:
            raise pulumi.RunError(
                f"{path}: {cluster.kubernetes_version!r}, but cluster {cluster_name!r} runs {running!r} (upgraded "
                "outside the stack: ACK console, auto upgrade or end-of-life upgrade). ACK does not downgrade, and "
                f"the stack's charts are pinned for {ours[0]}.{ours[1]}; set kubernetesVersion to {running!r}")
        pulumi.log.warn(f"{path}: {cluster.kubernetes_version!r}, but cluster {cluster_name!r} runs {running!r} "
                        "(upgraded outside the stack); the cluster is kept at the version it runs. Set "
                        f"kubernetesVersion to {running!r} to record it", resource=self)
        return True

    def _installed_before(self, cluster: AckExistingCluster) -> dict[str, dict]:
        """Add-ons already installed on an adopted cluster, with the config ACK stores (``cs.get_kubernetes_addons``:
        ``current_version`` empty for an add-on that is not installed)."""
        import pulumi_alicloud as alicloud

        found = alicloud.cs.get_kubernetes_addons(
            cluster_id=cluster.cluster_id, opts=pulumi.InvokeOptions(parent=self, provider=self.alicloud_provider))
        out = {}
        for addon in found.addons or []:
            if addon.current_version:
                try:
                    out[addon.name] = json.loads(addon.current_config or "{}")
                except ValueError:
                    out[addon.name] = {}
        return out

    def require_node_autoscaling(self, pool_label: str) -> list[pulumi.Resource]:
        """Cluster-level node autoscaling for an autoscaled pool, once per cluster: ACK scales a node pool only
        after it is enabled for the cluster (ACK "Enable node auto scaling"). A cluster the stack creates gets a
        ``cs.AutoscalingConfig`` with ``cluster.nodeAutoscaling``; an adopted cluster's is not the stack's to set
        (the setting is cluster-wide and the provider's Delete leaves it as it is), so one where it is off is
        refused, naming the console step. Off ACK there is nothing to enable. Returns what the pool waits for."""
        if not self.cloud.uses_cloud_provider:
            return []
        from gpuplatform.catalogs.node_autoscaling import SCALER_ADDONS

        if self.adopted:
            if not any(a in self._installed_addons for a in SCALER_ADDONS.values()):
                raise pulumi.RunError(
                    f"{pool_label}: autoscaling is true, but node autoscaling is off on the adopted cluster "
                    f"{self.spec.cluster_id!r} (neither of the add-ons {', '.join(map(repr, SCALER_ADDONS.values()))}"
                    " is installed: cs.get_kubernetes_addons), so ACK would never add a node to the pool. The stack "
                    "does not enable it on a cluster it did not create (the setting is cluster-wide): enable it in "
                    "the ACK console (Clusters > Nodes > Node Pools > Configure Auto Scaling) or set the pool's "
                    "autoscaling: false with desiredNodes")
            return []
        if self.node_autoscaling is None:
            import pulumi_alicloud as alicloud

            # the provider's Delete does nothing (resource_alicloud_cs_autoscaling_config.go): destroying the stack
            # leaves the setting on the cluster, which is deleted with it
            self.node_autoscaling = alicloud.cs.AutoscalingConfig(
                f"{self._name}-node-autoscaling", cluster_id=self.cluster_id,
                **self.spec.node_autoscaling.argument_values(),
                opts=pulumi.ResourceOptions.merge(self._ali, pulumi.ResourceOptions(depends_on=list(self.system_nodes))))
        return [self.node_autoscaling]

    def addon_dependencies(self, *names: str) -> list[pulumi.Resource]:
        """What a resource that needs the named add-ons waits for, of those installed so far."""
        return [self.addons[n] for n in dict.fromkeys(names) if n in self.addons]

    def require_addons(self, *names: str) -> list[pulumi.Resource]:
        """Install the named ACK add-ons once per cluster (the first component that needs one installs it) and
        return what a resource that needs them waits for. Off ACK there is nothing to install.

        ``KubernetesAddon`` installs a missing add-on, adopts (and updates) one that is already there, and can be
        added at any later ``pulumi up``; the add-on is a child of the cluster whichever component asked first,
        so its URN does not depend on the order components are built in."""
        if not self.cloud.uses_cloud_provider:
            return []
        import pulumi_alicloud as alicloud

        for addon in dict.fromkeys(names):
            if addon in self.addons:
                continue
            catalog = ack.ADDONS[addon]
            kwargs = {"version": ACK_ADDONS[addon]} if ACK_ADDONS.get(addon) else {}
            installed = self._installed_addons.get(addon)
            if installed is not None:
                # an add-on the adopted cluster had before: adopted as it is. The provider would rewrite its config
                # whenever ours is not a subset of the live one (resource_alicloud_cs_kubernetes_addon.go
                # needUpgrade/updateAddonConfig), on a cluster other teams use; a stack that needs another
                # config is refused instead (config_conflict)
                conflict = config_conflict(addon, catalog.required, installed, self.allow_public_endpoints)
                if conflict:
                    raise pulumi.RunError(conflict)
                kwargs.pop("version", None)
            elif catalog.config:
                # Go's compact JSON, which the provider's Read writes back: any other spelling differs every run
                kwargs["config"] = ack.go_json(catalog.config)
            self.addons[addon] = alicloud.cs.KubernetesAddon(
                f"{self._name}-{addon}", cluster_id=self.cluster_id, name=addon, opts=self._ali_opts, **kwargs)
        return self.addon_dependencies(*names)


def config_conflict(addon: str, required: dict, live: dict, allow_public_endpoints: bool) -> Optional[str]:
    """Why an add-on installed before the stack cannot serve it as it is configured (None: it can). An Internet
    SLB for the NGINX add-on is accepted where the stack allows public endpoints."""
    wrong = {}
    for key, allowed in required.items():
        accepted = set(allowed) | ({"internet"} if allow_public_endpoints and key == "IngressSlbNetworkType" else set())
        if live.get(key) not in accepted:
            wrong[key] = (live.get(key), sorted(accepted))
    if not wrong:
        return None
    shown = ", ".join(f"{k}={v!r} (the stack needs {' or '.join(map(repr, a))})" for k, (v, a) in wrong.items())
    return (f"ACK add-on {addon!r} is installed on the adopted cluster with {shown}. The stack does not rewrite the "
            "configuration of an add-on it did not install (other workloads of the cluster use it): change it "
            "in the ACK console (Operations > Add-ons), or leave out what needs it")


def stack_identity() -> str:
    """``<project>/<stack>``: the value of the tag a cluster the stack creates carries (catalogs/ack.py STACK_TAG)."""
    return f"{pulumi.get_project()}/{pulumi.get_stack()}"


def _refuse_endpoint_change(cluster: AckManagedCluster, cluster_name: str, existing, label: str) -> None:
    """``slb_internet_enabled`` reaches ACK only in the create call: the provider's Update never sends it and its
    Read never reads it (resource_alicloud_cs_managed_kubernetes.go), so flipping ``publicApiEndpoint`` on a cluster
    that exists changes nothing on ACK but re-points the stack's kubeconfig at an endpoint the cluster does not
    have. The cluster carries the value it was created with as a tag (``catalogs/ack.py`` ``ENDPOINT_TAG``); a
    stack that states the other is refused. A cluster created before the tag existed is taken to have the value
    the stack states (the tag is added then)."""
    if existing is None:
        return
    recorded = (existing.tags or {}).get(ack.ENDPOINT_TAG)
    wanted = ack.endpoint_tag_value(cluster.public_api_endpoint)
    if recorded is None or recorded == wanted:
        return
    was = recorded == ack.endpoint_tag_value(True)
    raise pulumi.RunError(
        f"gpu-platform:cluster.publicApiEndpoint ({label} args.cluster.publicApiEndpoint): "
        f"{str(cluster.public_api_endpoint).lower()}, but cluster {cluster_name!r} was created with "
        f"publicApiEndpoint {str(was).lower()} ({ack.ENDPOINT_TAG}={recorded}). ACK sets the API server's Internet "
        "endpoint only when it creates a cluster (the provider never sends a change), so the stack would lose its "
        f"way to the API server; allowed: {str(was).lower()}. To change it, bind or unbind the API server's EIP in "
        "the ACK console (Cluster Information > Basic Information), then set publicApiEndpoint and the "
        f"{ack.ENDPOINT_TAG} tag to match")


def own_cluster(provider, parent, cluster_name: str):
    """The stack's own cluster as ``cs.get_clusters`` reports it (found by name and the stack's tag), or None
    before it exists. Two clusters claiming the stack are an error: the stack cannot tell which is its own."""
    import pulumi_alicloud as alicloud

    found = alicloud.cs.get_clusters(cluster_name=cluster_name, cluster_type="ManagedKubernetes",
                                     opts=pulumi.InvokeOptions(parent=parent, provider=provider))
    identity = stack_identity()
    ours = [c for c in found.clusters or []
            if c.cluster_name == cluster_name and (c.tags or {}).get(ack.STACK_TAG) == identity]
    if len(ours) > 1:
        raise pulumi.RunError(f"clusters {', '.join(c.cluster_id for c in ours)} are all named {cluster_name!r} and "
                              f"tagged {ack.STACK_TAG}={identity}; the stack manages one: remove the tag from the "
                              "others")
    return ours[0] if ours else None


def running_version(provider, parent, cluster_name: str) -> Optional[str]:
    """The version ACK runs the stack's own cluster at, or None before it exists."""
    found = own_cluster(provider, parent, cluster_name)
    return found.current_version if found is not None else None


def _field(entry, name: str):
    value = getattr(entry, name, None)
    if value is None and isinstance(entry, dict):
        value = entry.get(name) or entry.get("".join(w.capitalize() if i else w for i, w in enumerate(name.split("_"))))
    return value


def _private_intranet_endpoint(connections) -> str:
    """The intranet endpoint of a cluster created with ``publicApiEndpoint: false``, after checking that it has no
    Internet one. The provider cannot send ``slb_internet_enabled = false``: its create adds
    ``EndpointPublicAccess`` to the CreateCluster request only when ``d.GetOk`` finds the attribute, and GetOk
    reports a false bool as unset (resource_alicloud_cs_managed_kubernetes.go, resourceAlicloudCSManagedKubernetes
    Create). So the request carries nothing, and the cluster is private only by CreateCluster's own default for
    ``endpoint_public_access``. That default is read here instead of trusted: a cluster whose Read reports an
    Internet endpoint (``connections.api_server_internet``, from DescribeClusterDetail ``master_url``) fails the
    run, naming the console step that removes it."""
    public = [v for v in (_field(e, "api_server_internet") for e in connections or []) if v]
    if public:
        raise pulumi.RunError(
            f"gpu-platform:cluster.publicApiEndpoint: false, but ACK created the cluster with an Internet API endpoint "
            f"({public[0]}): the provider sends no EndpointPublicAccess when it is false, so ACK's own default "
            "applied. Unbind the API server's EIP in the ACK console (Cluster Information > Basic Information > "
            "API Server Internet Endpoint) and run pulumi up again")
    return _intranet_endpoint(connections)


def _intranet_endpoint(connections) -> str:
    """``connections[0].api_server_intranet`` of a ``ManagedKubernetes`` (the provider's Read takes it from
    DescribeClusterDetail ``master_url``'s ``intranet_api_server_endpoint``)."""
    for entry in connections or []:
        value = getattr(entry, "api_server_intranet", None)
        if value is None and isinstance(entry, dict):
            value = entry.get("api_server_intranet") or entry.get("apiServerIntranet")
        if value:
            return value
    return ""


def kubeconfig_for_endpoint(kubeconfig: str, endpoint: str) -> str:
    """The kubeconfig with every cluster's server set to ``endpoint`` (the same credential and CA): a cluster
    created without a public endpoint is reached on its intranet endpoint."""
    if not endpoint:
        raise pulumi.RunError("the cluster reports no intranet API server endpoint (connections.api_server_intranet);"
                              " the kubeconfig cannot be pointed at it")
    doc = yaml.safe_load(kubeconfig)
    for entry in doc.get("clusters") or []:
        entry.setdefault("cluster", {})["server"] = endpoint
    return yaml.safe_dump(doc, sort_keys=True)
