"""GpuCluster: the Kubernetes cluster the platform runs on, and the provider every in-cluster child uses.

Three targets, chosen by ``cluster.kind``:

* ``ack-managed``: a VPC, its vSwitches and an ACK managed (Pro) cluster with the add-ons the monitoring needs;
* ``ack-existing``: an existing ACK cluster adopted by id (no cluster resource; add-ons via ``KubernetesAddon``);
* ``kubeconfig``: any cluster by kubeconfig path/content and context (no Alibaba resources at all).

The kubeconfig is a secret. On ACK it comes from ``cs.get_cluster_credential_output`` and points at the public
API endpoint (the credential API hard-codes ``PrivateIpAddress=false``).
"""
import json
from typing import Optional, TypedDict

import pulumi
import pulumi_kubernetes as k8s
from typing_extensions import NotRequired

from gpuplatform.catalogs.versions import ACK_ADDON_CONFIG, ACK_ADDONS
from gpuplatform.components.config import AckExistingCluster, AckManagedCluster, KubeconfigCluster, Model
from gpuplatform.components.config import Cluster as ClusterSpec

CREATE_TIME_ADDONS = ("arms-prometheus", "ack-node-problem-detector", "node-lifecycle-controller")
CREDENTIAL_MINUTES = 4320  # the longest-lived ACK credential (3 days); rotated on every `pulumi up`


class GpuClusterArgs(TypedDict):
    cluster: dict
    """Cluster target in the stack-file format (``gpu-platform:cluster``): ``kind`` ack-managed | ack-existing |
    kubeconfig and its fields. Required."""
    addons: NotRequired[list[str]]
    """ACK add-ons to install (e.g. ``arms-prometheus``, ``ack-ai-installer``). Default none."""
    protect: NotRequired[bool]
    """Pulumi ``protect`` (and ACK deletion protection) on the cluster. Default false."""
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


class GpuCluster(pulumi.ComponentResource):
    """The cluster target and its Kubernetes provider."""

    cluster_id: pulumi.Output[str]
    vswitch_ids: pulumi.Output[list]
    kubeconfig: pulumi.Output[str]

    def __init__(self, name: str, args: GpuClusterArgs, opts: Optional[pulumi.ResourceOptions] = None):
        spec = _Args.model_validate({k: v for k, v in args.items() if k != "kubeconfig"})
        cluster = spec.cluster
        super().__init__("gpuplatform:index:GpuCluster", name, {"kind": cluster.kind}, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.is_ack = cluster.kind != "kubeconfig"
        self.addons: dict[str, pulumi.Resource] = {}
        """Add-on name -> the resource whose creation means it is installed: its ``KubernetesAddon``, or the cluster
        itself for add-ons installed with it."""
        self.adopted = isinstance(cluster, AckExistingCluster)
        if isinstance(cluster, AckManagedCluster):
            self._create_ack(name, cluster, spec, child)
        elif isinstance(cluster, AckExistingCluster):
            self.cluster_id = pulumi.Output.from_input(cluster.cluster_id)
            self.vswitch_ids = pulumi.Output.from_input(list(cluster.vswitch_ids))
            self._install_addons(name, spec.addons, child)
        if self.is_ack:
            import pulumi_alicloud as alicloud

            cred = alicloud.cs.get_cluster_credential_output(
                cluster_id=self.cluster_id, temporary_duration_minutes=CREDENTIAL_MINUTES, opts=pulumi.InvokeOutputOptions(parent=self))
            self.kubeconfig = pulumi.Output.secret(cred.kube_config)
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
        # add-ons are waited for by the objects that need them (see ``addon_dependencies``).
        self.provider = k8s.Provider(f"{name}-k8s", **provider_args, opts=child)
        self.register_outputs({"cluster_id": self.cluster_id, "kubeconfig": self.kubeconfig})

    def _create_ack(self, name: str, cluster: AckManagedCluster, spec: _Args, child: pulumi.ResourceOptions) -> None:
        import pulumi_alicloud as alicloud

        protect = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(protect=spec.protect))
        vpc = alicloud.vpc.Network(f"{name}-vpc", vpc_name=f"{name}-vpc", cidr_block=cluster.vpc_cidr, opts=child)
        switches = [alicloud.vpc.Switch(f"{name}-vsw-{i}", vpc_id=vpc.id, cidr_block=v.cidr, zone_id=v.zone_id,
                                        vswitch_name=f"{name}-vsw-{i}", opts=child)
                    for i, v in enumerate(cluster.vswitches)]
        addons = [{"name": a, **({"version": ACK_ADDONS[a]} if ACK_ADDONS.get(a) else {})}
                  for a in spec.addons if a in CREATE_TIME_ADDONS]
        if "arms-prometheus" in spec.addons:
            # ACK documents prometheusMode "default" for the managed Prometheus add-on at creation time
            addons = [dict(a, config=json.dumps({"prometheusMode": "default"})) if a["name"] == "arms-prometheus"
                      else a for a in addons]
        ack = alicloud.cs.ManagedKubernetes(
            f"{name}-ack",
            name=cluster.name or f"gpu-platform-{spec.stack_name or pulumi.get_stack()}",
            cluster_spec=cluster.cluster_spec,
            version=cluster.kubernetes_version,
            vswitch_ids=[s.id for s in switches],
            pod_cidr=cluster.pod_cidr,
            service_cidr=cluster.service_cidr,
            new_nat_gateway=True,
            slb_internet_enabled=cluster.public_api_endpoint,
            proxy_mode="ipvs",
            deletion_protection=spec.protect,
            addons=addons,
            opts=protect)
        self.cluster_id = ack.id
        self.addons.update({a["name"]: ack for a in addons})
        self.vswitch_ids = pulumi.Output.all(*[s.id for s in switches])
        # ManagedKubernetes.addons only applies at creation; anything a later change may add is a KubernetesAddon
        self._install_addons(name, [a for a in spec.addons if a not in CREATE_TIME_ADDONS], child)

    def addon_dependencies(self, *names: str) -> list[pulumi.Resource]:
        """What a resource that needs the named add-ons waits for (none for add-ons the stack does not install)."""
        return _unique([self.addons[n] for n in names if n in self.addons])

    def _install_addons(self, name: str, addons: list[str], child: pulumi.ResourceOptions) -> None:
        """``KubernetesAddon`` merges its config server-side and upgrades in place. On an adopted cluster the
        add-ons may have been there before the stack (ACK skips installing one that exists): ``retain_on_delete``
        keeps ``pulumi destroy`` from uninstalling what other tenants of the cluster rely on."""
        import pulumi_alicloud as alicloud

        opts = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(retain_on_delete=self.adopted))
        for addon in addons:
            kwargs = {"version": ACK_ADDONS[addon]} if ACK_ADDONS.get(addon) else {}
            if addon in ACK_ADDON_CONFIG:
                kwargs["config"] = json.dumps(ACK_ADDON_CONFIG[addon], sort_keys=True)
            self.addons[addon] = alicloud.cs.KubernetesAddon(
                f"{name}-{addon}", cluster_id=self.cluster_id, name=addon, opts=opts, **kwargs)


def _unique(resources: list) -> list:
    out = []
    for r in resources:
        if not any(r is o for o in out):
            out.append(r)
    return out
