"""Checks of the GPU nodes of each pool: present, labelled and tainted as declared, advertising the GPU capacity
the pool's sharing mode gives, and for MIG pools partitioned as declared."""
from __future__ import annotations

from kubernetes import client as k8s
from kubernetes.utils import parse_quantity

from gpuplatform.catalogs import sharing
from gpuplatform.catalogs.gpus import CUSTOM_ARCHITECTURE, label_memory_mib, product_match
from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.pools import PoolFacts
from gpuplatform.verify.kube import REQUEST_TIMEOUT, _api_error, _selector_string
from gpuplatform.verify.results import CheckResult, _fail, _pass, _warn


def _capacity_cause(pool: PoolFacts, node: k8s.V1Node) -> str:
    labels = node.metadata.labels or {}
    if pool.simulated:
        return (f"fake-gpu-operator is not running or its topology has no pool '{pool.name}' (node label "
                f"{sharing.SIMULATED_POOL_LABEL}={pool.name} missing or the status-updater has not run)")
    if pool.mode == "cgpu":
        addon = pool.cloud.sharing_component()
        return (f"GPU sharing component not installed or not running on the node ({addon}; dedicated clusters "
                f"use {sharing.ACK_LEGACY_SHARING_ADDON}); it only serves nodes labelled "
                f"{sharing.ACK_SCHEDULE_LABEL}={pool.cgpu_policy}")
    if pool.mode == "mig":
        state = labels.get(sharing.NVIDIA_MIG_STATE_LABEL, "(unset)")
        return (f"MIG partitions not applied: {sharing.NVIDIA_MIG_STATE_LABEL}={state} (MIG manager not running, "
                f"still reconfiguring, or failed), or the device plugin does not run the '{pool.mig_strategy}' "
                f"MIG strategy that exposes {pool.resource_name}")
    where = pool.cloud.device_plugin_hint()
    return f"NVIDIA device plugin not running or the driver is not ready on the node ({where})"


def check_pool(pool: PoolFacts, cfg: PlatformConfig, core: k8s.CoreV1Api) -> tuple[list[CheckResult], int]:
    """Results for one pool, and how many of its nodes exist."""
    subject = f"pool/{pool.name}"
    sel = _selector_string(pool.node_selector)
    try:
        nodes = core.list_node(label_selector=sel, _request_timeout=REQUEST_TIMEOUT).items
    except Exception as exc:  # noqa: BLE001 - every API failure becomes a failed check, never a traceback
        return [_fail("nodes.present", subject, f"cannot list nodes ({_api_error(exc)})",
                      "the credentials lack 'list nodes' or the API server is unhealthy")], 0
    declared = cfg.pool(pool.name)
    if not nodes:
        if declared is not None and declared.autoscaling and declared.min_nodes == 0:
            return [_pass("nodes.present", subject,
                          f"no node with {sel} yet: the pool autoscales from 0 and adds nodes for pending pods")], 0
        return [_fail("nodes.present", subject, f"no node carries {sel}",
                      "the node pool has not created nodes (ECS quota, instance type out of stock in the zones, "
                      "or the pool failed); on a kubeconfig cluster the nodes were not labelled")], 0
    names = sorted(n.metadata.name for n in nodes)
    out = [_pass("nodes.present", subject, f"{len(nodes)} node(s): {', '.join(names)}")]

    wrong_labels = []
    for n in nodes:
        have = n.metadata.labels or {}
        bad = [f"{k}={v} (has {have[k]!r})" if k in have else f"{k}={v} (missing)"
               for k, v in sorted(pool.node_labels.items()) if have.get(k) != v]
        if bad:
            wrong_labels.append(f"{n.metadata.name}: {', '.join(bad)}")
    if wrong_labels:
        out.append(_fail("nodes.labels", subject, "labels differ from the declared ones: " + "; ".join(wrong_labels),
                         "nodes were created outside this node pool or relabelled by hand; GPU components "
                         f"select nodes by {sharing.ACK_SCHEDULE_LABEL} and workloads by {sharing.POOL_LABEL}"))
    else:
        out.append(_pass("nodes.labels", subject, f"all nodes carry the {len(pool.node_labels)} declared labels"))

    wrong_taints = []
    for n in nodes:
        have = {(t.key, t.value or None, t.effect) for t in (n.spec.taints or [])}
        missing = [f"{k}={v or ''}:{e}" for k, v, e in pool.taints if (k, v or None, e) not in have]
        if missing:
            wrong_taints.append(f"{n.metadata.name}: missing {', '.join(missing)}")
    if wrong_taints:
        out.append(_fail("nodes.taints", subject, "; ".join(wrong_taints),
                         "taints removed by hand or the node pool's taints were changed outside the stack; "
                         "without them non-GPU pods can occupy the GPU nodes"))
    else:
        out.append(_pass("nodes.taints", subject, f"all nodes carry the {len(pool.taints)} declared taint(s)"))

    out.append(check_gpu_model(pool, nodes))

    if pool.mode == "mig":
        out.append(check_mig_resources(pool, nodes))
        if _mig_manager_runs(pool):
            out.append(check_mig_config(pool, nodes))
        if pool.mig_strategy == "mixed":
            out.append(check_mig_partitioned(pool, nodes))
        return out, len(nodes)

    resource, expected = pool.resource_name, pool.units_per_node
    short, causes = [], []
    for n in nodes:
        have = _allocatable(n).get(resource)
        if have is None:
            short.append(f"{n.metadata.name}: no {resource} (expected {expected})")
            causes.append(_capacity_cause(pool, n))
            continue
        if have < expected:
            short.append(f"{n.metadata.name}: {resource}={have} (expected {expected})")
            causes.append(_capacity_cause(pool, n) if have == 0 else
                          f"fewer {pool.unit}s than {pool.gpus_per_node} x {pool.model.name} provide: a GPU failed its "
                          "health check or fell off the bus, or the partitioning differs from the declared one")
    if short:
        out.append(_fail("nodes.gpu-capacity", subject, "; ".join(short), causes[0]))
    else:
        out.append(_pass("nodes.gpu-capacity", subject,
                         f"every node exposes {resource} >= {expected} ({pool.unit} per node)"))
    return out, len(nodes)


def _allocatable(node: k8s.V1Node, field: str = "allocatable") -> dict[str, int]:
    """GPU extended resources the scheduler can hand out on the node (``status.allocatable``, quantity strings).
    The kubelet's device manager counts every device a plugin advertises in ``capacity`` and only the healthy ones
    in ``allocatable`` (kubernetes ``pkg/kubelet/cm/devicemanager/manager.go``, ``GetCapacity``)."""
    amounts = (getattr(node.status, field) or {}) if node.status else {}
    served = sharing.served_gpu_resources()
    return {k: int(parse_quantity(v)) for k, v in amounts.items()
            if k in served or k.startswith(sharing.MIG_RESOURCE_PREFIX)}


def _mig_manager_runs(pool: PoolFacts) -> bool:
    """The GPU Operator's mig-manager partitions the pool's GPUs (kubeconfig clusters with real GPUs); ACK
    partitions them itself and fake-gpu-operator only simulates them."""
    return pool.mode == "mig" and not pool.cloud.partitions_mig and not pool.simulated


def _mig_cause(pool: PoolFacts, node: k8s.V1Node) -> str:
    """Why a node of a MIG pool does not advertise the declared devices, read from mig-manager's node labels: it
    sets ``nvidia.com/mig.config.state`` to ``pending`` (or ``rebooting``) while it applies the config the node's
    ``nvidia.com/mig.config`` label names, then ``success``, or ``failed`` when it cannot, first of all when that
    config is not in its config file (NVIDIA/mig-parted ``pkg/mig/reconfigure/reconfigure.go``: ``Run``;
    ``validateMigConfig`` runs ``mig-parted assert --valid-config``)."""
    if not _mig_manager_runs(pool):
        return _capacity_cause(pool, node)
    labels = node.metadata.labels or {}
    label, state = labels.get(sharing.NVIDIA_MIG_CONFIG_LABEL), labels.get(sharing.NVIDIA_MIG_STATE_LABEL)
    if label != pool.mig_config:
        return (f"the node is labelled {sharing.NVIDIA_MIG_CONFIG_LABEL}={label or '(unset)'}, not {pool.mig_config}: "
                "mig-manager applies the config the label names (label the node as `gpuplatform plan` lists)")
    if state in ("pending", "rebooting"):
        return (f"mig-manager is still applying {pool.mig_config} ({sharing.NVIDIA_MIG_STATE_LABEL}={state}): it "
                "stops the GPU clients, repartitions the GPUs and restarts the device plugin; run verify with --wait")
    if state == "failed":
        if pool.mig_layout:
            # imported here: it loads the Pulumi SDK, which the other checks never need
            from gpuplatform.components.gpu_software import MIG_PARTED_CONFIG_MAP

            return (f"mig-manager could not apply {pool.mig_config} ({sharing.NVIDIA_MIG_STATE_LABEL}=failed): the "
                    f"custom config was not picked up, so '{pool.mig_config}' is not in the file mig-manager reads "
                    f"(ClusterPolicy spec.migManager.config.name must be {MIG_PARTED_CONFIG_MAP}, the ConfigMap the "
                    "gpu-operator release creates; a ClusterPolicy edited by hand or an operator installed outside "
                    "this stack keeps the built-in configs), or a process outside Kubernetes holds the GPUs")
        return (f"mig-manager could not apply {pool.mig_config} ({sharing.NVIDIA_MIG_STATE_LABEL}=failed): the "
                "ClusterPolicy names a config file without it, or a process outside Kubernetes holds the GPUs")
    if state != "success":
        return (f"mig-manager has not run on the node ({sharing.NVIDIA_MIG_STATE_LABEL} unset): the GPU Operator or "
                "its mig-manager is not running there")
    return (f"mig-manager applied {pool.mig_config}, but the device plugin advertises other devices: it does not "
            f"run the 'mixed' MIG strategy (ClusterPolicy spec.mig.strategy) or has not restarted since, or a GPU "
            "failed its health check")


def check_mig_resources(pool: PoolFacts, nodes: list) -> CheckResult:
    """Every GPU resource the pool's MIG partitioning advertises, exactly, on every node: one
    ``nvidia.com/mig-<profile>`` per profile (mixed strategy) and ``nvidia.com/gpu`` for a layout's MIG-disabled
    GPUs (NVIDIA/k8s-device-plugin ``internal/rm/device_map.go``); MIG resources the pool does not declare count as
    0 (the kubelet keeps a resource at 0 once its device plugin stops advertising it)."""
    subject = f"pool/{pool.name}"
    expected = pool.node_resources
    wrong, causes = [], []
    for n in nodes:
        have = _allocatable(n)
        undeclared = {r: v for r, v in have.items()
                      if r.startswith(sharing.MIG_RESOURCE_PREFIX) and r not in expected and v}
        diffs = [f"{r} expected {want}, found {have[r] if r in have else 'none'}"
                 for r, want in sorted(expected.items()) if have.get(r) != want]
        diffs += [f"{r} expected 0, found {v}" for r, v in sorted(undeclared.items())]
        if diffs:
            wrong.append(f"node {n.metadata.name}: " + ", ".join(diffs))
            capacity = _allocatable(n, "capacity")
            unhealthy = [f"{r} (capacity {capacity[r]}, allocatable {have.get(r, 0)})"
                         for r in sorted(expected) if capacity.get(r, 0) > have.get(r, 0)]
            causes.append(f"the device plugin reports unhealthy devices on node {n.metadata.name}: "
                          f"{', '.join(unhealthy)}; a GPU failed its health check (XID errors; see the device "
                          "plugin's log), and the scheduler places nothing on it" if unhealthy else _mig_cause(pool, n))
    shown = ", ".join(f"{r}={v}" for r, v in sorted(expected.items()))
    if wrong:
        return _fail("nodes.gpu-capacity", subject, f"pool {pool.name}: " + "; ".join(wrong), causes[0])
    what = f"the {pool.mig_config} layout" if pool.mig_layout else f"{pool.unit} per node"
    return _pass("nodes.gpu-capacity", subject, f"every node exposes exactly {shown} ({what})")


def check_mig_config(pool: PoolFacts, nodes: list) -> CheckResult:
    """mig-manager (GPU Operator) applies the config a node's ``nvidia.com/mig.config`` label names and reports
    ``nvidia.com/mig.config.state=success`` once it is in place."""
    subject = f"pool/{pool.name}"
    wrong, causes = [], []
    for n in nodes:
        labels = n.metadata.labels or {}
        label, state = labels.get(sharing.NVIDIA_MIG_CONFIG_LABEL), labels.get(sharing.NVIDIA_MIG_STATE_LABEL)
        bad = []
        if label != pool.mig_config:
            bad.append(f"{sharing.NVIDIA_MIG_CONFIG_LABEL}={label or '(unset)'} (expected {pool.mig_config})")
        if state != "success":
            bad.append(f"{sharing.NVIDIA_MIG_STATE_LABEL}={state or '(unset)'} (expected success)")
        if bad:
            wrong.append(f"node {n.metadata.name}: " + ", ".join(bad))
            causes.append(_mig_cause(pool, n))
    if wrong:
        return _fail("nodes.mig-config", subject, f"pool {pool.name}: " + "; ".join(wrong), causes[0])
    return _pass("nodes.mig-config", subject,
                 f"every node has {sharing.NVIDIA_MIG_CONFIG_LABEL}={pool.mig_config}, applied (state success)")


def check_mig_partitioned(pool: PoolFacts, nodes: list) -> CheckResult:
    """With MIG on, a whole GPU is no longer an ``nvidia.com/gpu``: any beyond the MIG-disabled GPUs of a per-GPU
    layout means GPUs outside MIG mode, which a pod asking for a whole GPU would take from the pool meant to be
    partitioned."""
    subject = f"pool/{pool.name}"
    allowed = pool.node_resources.get(sharing.RESOURCE_GPU, 0) if pool.mig_layout else 0
    whole, first = [], None
    for n in nodes:
        count = _allocatable(n).get(sharing.RESOURCE_GPU, 0)
        if count > allowed:
            first = first or n
            whole.append(f"{n.metadata.name}: {sharing.RESOURCE_GPU}={count}"
                         + (f" (the layout leaves {allowed} whole)" if pool.mig_layout else ""))
    if not whole:
        if allowed:
            return _pass("nodes.mig-partitioned", subject,
                         f"no whole GPUs beyond the layout's {allowed} MIG-disabled GPU(s) per node")
        return _pass("nodes.mig-partitioned", subject, "no whole GPUs left: every GPU is in MIG mode")
    cause = pool.cloud.mig_partition_cause(pool) or _mig_cause(pool, first)
    return _fail("nodes.mig-partitioned", subject, "whole GPUs outside MIG mode: " + "; ".join(whole), cause)


def _first_label(labels: dict, keys: tuple[str, ...]) -> tuple[str, str] | None:
    return next(((k, labels[k]) for k in keys if labels.get(k)), None)


def check_gpu_model(pool: PoolFacts, nodes: list) -> CheckResult:
    """The card the nodes carry is the one the stack's capacity, MIG and memory checks were computed for, and it
    reports the memory the catalog holds (``catalogs/gpus.py``): the proof, on the first deploy, of what the catalog
    could not source (an ECS family whose card no Alibaba page names, a model's nvidia-smi total). Read from the
    node labels GPU Feature Discovery and ACK set (:data:`sharing.GPU_PRODUCT_LABELS`, ``GPU_MEMORY_LABELS``)."""
    subject = f"pool/{pool.name}"
    model = pool.model
    custom = model.architecture == CUSTOM_ARCHITECTURE
    wrong, variants, memory, unlabelled, seen = [], [], [], [], set()
    for n in nodes:
        labels = n.metadata.labels or {}
        product = _first_label(labels, sharing.GPU_PRODUCT_LABELS)
        if product is None:
            unlabelled.append(n.metadata.name)
            continue
        seen.add(product[1])
        verdict = "match" if custom else product_match(model, product[1])
        if verdict == "mismatch":
            wrong.append(f"{n.metadata.name}: {product[0]}={product[1]}")
        elif verdict == "variant":
            variants.append(f"{n.metadata.name}: {product[0]}={product[1]}")
        mem = _first_label(labels, sharing.GPU_MEMORY_LABELS)
        mib = label_memory_mib(mem[1]) if mem else None
        if mib is not None and mib != model.reported_mib:
            memory.append((n.metadata.name, mem[0], mib))
    name = f"customGpu {model.name!r}" if custom else model.name
    if wrong:
        return _fail("nodes.gpu-model", subject,
                     f"the pool declares {name}, but " + "; ".join(wrong),
                     "the instance type carries another card than the catalog says (catalogs/gpus.py; docs/ack.md "
                     "lists the families whose card is unverified), or the nodes of another pool carry this pool's "
                     "label: capacity, MIG profiles and memory checks were computed for the wrong GPU; use the "
                     "right gpuModel or instance type, or describe the card with customGpu")
    short = [(node, key, mib) for node, key, mib in memory
             if model.reported_mib is not None and mib // 1024 < model.reported_mib // 1024]
    if short and pool.mode == "cgpu":
        node, key, mib = short[0]
        return _fail("nodes.gpu-model", subject,
                     f"{node}: {key} reports {mib} MiB per card, less than the {model.reported_mib} MiB the catalog "
                     f"holds for {name}: cGPU counts {mib // 1024} GiB per card, not {model.reported_gib}",
                     "the driver reports less memory than the catalog's figure (it varies with the driver version): "
                     "replicas sized to the catalog's GiB may not fit; lower gpu.memoryGib or report the figure")
    notes = []
    if variants:
        notes.append(f"the label does not show {name}'s memory size ({'; '.join(variants)})")
    if memory:
        node, key, mib = memory[0]
        held = f"{model.reported_mib} MiB" if model.reported_mib is not None else "no sourced figure"
        notes.append(f"{node}: {key} reports {mib} MiB per card; the catalog holds {held} for {name}")
    if unlabelled:
        notes.append(f"no GPU product label ({' or '.join(sharing.GPU_PRODUCT_LABELS)}) on "
                     f"{', '.join(unlabelled)}: GPU Feature Discovery is not running there, so the card is unproven")
    if notes:
        return _warn("nodes.gpu-model", subject, "; ".join(notes),
                     "nothing the stack computed is known to be wrong, but the catalog's facts are not confirmed: "
                     "report the node's figures (catalogs/gpus.py takes a cited nvidia-smi total), or describe the "
                     "card with customGpu")
    return _pass("nodes.gpu-model", subject, f"every node carries {name} ({', '.join(sorted(seen))})")
