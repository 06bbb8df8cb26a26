"""What the API server would refuse among the Kubernetes objects a program registers, as configuration errors that
name the config which produced each object.

``gpuplatform plan`` and ``check --stack``/``--project`` run the program offline (gpuplatform/synth.py) and, before
anything is shown or written, judge every object it registered as ``check --manifests`` judges a file
(gpuplatform/apiserver.py): the strict OpenAPI schema of the cluster's Kubernetes version and the API server's
semantic rules, plus one rule across objects: two objects of one kind, namespace and name, where the second create
is answered ``409 AlreadyExists``. The program itself already refuses what a workload's config can write
(components/validation/authored.py, before anything is registered); this pass is the net under it for every object
of every component and of a consumer's own program.

Each object is traced to the config that produced it through its parents (URNs, so two components of one name
cannot be confused): a stack file's ``workloads[i]`` (the field the refusal is about narrows it to
``workloads[i].ports``, ``.volumes``, ``.resources.cpu``, ``.gpu`` ...), ``nodePools[i]``, ``monitoring``,
``settings``, ``cluster``; in a composed program, the component's own args (``InferenceService 'llm'
args.workload.ports``). The cluster's version is the one the object's provider belongs to.
"""
from __future__ import annotations

from typing import Optional, Sequence

from gpuplatform.records import RegisteredResource

_TYPE = "gpuplatform:index:"
STACK_PATHS = {"GpuCluster": "cluster", "GpuMonitoring": "monitoring", "GpuAlerts": "monitoring",
               "GpuSoftware": "nodePools", "GpuPlatform": "settings"}
"""Component type -> the stack-file key its objects come from (workloads, pools and namespaces: per object)."""
ARGS_KEYS = {"InferenceService": "args.workload", "GpuNodePool": "args.pool", "GpuMonitoring": "args.monitoring",
             "GpuCluster": "args.cluster", "WorkloadNamespace": "args.name", "GpuSoftware": "args",
             "GpuAlerts": "args", "GpuPlatform": "args.config"}
"""Component type -> the args a composed program gave it that its objects come from."""


class Origins:
    """Each registered resource's component and cluster, found through parent and provider URNs."""

    def __init__(self, records: Sequence[RegisteredResource]):
        self.by_urn = {r.urn: r for r in records if r.urn}

    def component(self, r: RegisteredResource) -> Optional[RegisteredResource]:
        """The nearest of ``r``'s ancestors that is one of the package's components."""
        seen = set()
        parent = self.by_urn.get(r.parent_urn)
        while parent is not None and parent.urn not in seen:
            seen.add(parent.urn)
            if parent.type.startswith(_TYPE) and parent.type.removeprefix(_TYPE) in ARGS_KEYS:
                return parent
            parent = self.by_urn.get(parent.parent_urn)
        return None

    def kubernetes_version(self, r: RegisteredResource) -> Optional[str]:
        """The Kubernetes version of the GpuCluster whose provider ``r`` is registered with (None: a provider of
        the program's own, or the default one)."""
        provider = self.by_urn.get(r.provider.rsplit("::", 1)[0]) if r.provider else None
        cluster = self.component(provider) if provider is not None else None
        version = cluster.inputs.get("kubernetesVersion") if cluster is not None else None
        return str(version) if version else None


def config_path(origins: Origins, r: RegisteredResource, field_path: Sequence = (), *,
                workloads: Sequence[str] = (), pools: Sequence[str] = (), stack: bool = True) -> str:
    """The config path that produced ``r`` (the field at ``field_path`` of it, when the config has one for it):
    stack-file paths when ``stack`` (``workloads`` and ``pools``: the names in the stack file's order), else the
    args of the component a composed program built."""
    from gpuplatform.components.validation.authored import workload_key

    owner = origins.component(r)
    if owner is None:
        return f"{r.type} {r.name!r} (a resource of the program's own)"
    kind = owner.type.removeprefix(_TYPE)
    key = workload_key(str(r.inputs.get("kind")), field_path) if kind == "InferenceService" else None
    if not stack:
        base = f"{kind} {owner.name!r} {ARGS_KEYS[kind]}"
    elif kind == "InferenceService" and owner.inputs.get("workload") in workloads:
        base = f"workloads[{list(workloads).index(owner.inputs['workload'])}]"
    elif kind == "GpuNodePool" and owner.inputs.get("poolName") in pools:
        base = f"nodePools[{list(pools).index(owner.inputs['poolName'])}]"
    elif kind == "WorkloadNamespace":
        base = "settings"
    else:
        base = STACK_PATHS.get(kind, kind)
    return f"{base}.{key}" if key else base


def refusals(records: Sequence[RegisteredResource], *, workloads: Sequence[str] = (), pools: Sequence[str] = (),
             stack: bool = True) -> list:
    """Every refusal of the API server among ``records``' Kubernetes objects, one issue each, at the config path
    that produced the object (:func:`config_path`)."""
    from gpuplatform import apiserver
    from gpuplatform.components.args import ArgsIssue
    from gpuplatform.components.errors import ConfigIssue
    from gpuplatform.components.validation.authored import identity, made_twice, refusal

    issue = ConfigIssue if stack else ArgsIssue
    origins = Origins(records)
    out: list = []
    created: dict[tuple, RegisteredResource] = {}
    for r in records:
        if not r.is_kubernetes_object:
            continue
        patch = r.type.endswith("Patch")
        version = apiserver.schema_version(origins.kubernetes_version(r))
        shown = version.rsplit(".", 1)[0] if version else None
        for rejection in apiserver.rejections(r.inputs, version, patch=patch):
            out.append(issue(config_path(origins, r, rejection.path, workloads=workloads, pools=pools, stack=stack),
                             refusal(r.inputs, rejection, shown)))
        if patch:
            continue  # a server-side-apply patch changes an object that exists: it creates nothing
        first = created.setdefault(identity(r.inputs), r)
        if first is not r:
            out.append(issue(config_path(origins, r, workloads=workloads, pools=pools, stack=stack),
                             made_twice(r.inputs, config_path(origins, first, workloads=workloads, pools=pools,
                                                              stack=stack))))
    return out


def raise_for_refusals(records: Sequence[RegisteredResource], cfg=None) -> None:
    """:func:`refusals` as a configuration error (exit code 2): a stack's (``cfg``: its validated config) with
    stack-file paths, a composed program's (``cfg`` None) with its components' args."""
    from gpuplatform.components.args import ArgsError
    from gpuplatform.components.errors import ConfigError

    if cfg is not None:
        found = refusals(records, workloads=[w.name for w in cfg.workloads], pools=[p.name for p in cfg.node_pools])
        if found:
            raise ConfigError(found)
    else:
        found = refusals(records, stack=False)
        if found:
            raise ArgsError(found)
