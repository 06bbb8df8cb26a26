"""GPU semantics no generic checker knows: sharing modes, MIG profiles, cGPU memory, pool capacity.

Hardware facts come from :mod:`catalogs`; pool facts from the ``GpuNodePool`` component's props, or from the
pod's own resources and node selector when checking plain YAML.
"""
from __future__ import annotations

from gpuplatform.catalogs import capacity, sharing
from gpuplatform.catalogs.gpus import GPU_MODELS, close_matches, gpu_model, instance_type, reported_memory_unknown
from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.catalogs.mig import fits_one_gpu, mig_config_label_value, profiles_for
from gpuplatform.policies import k8s, system
from gpuplatform.policies.registry import ADVISORY, CRITICAL, HIGH, MEDIUM, prop, resource_policy, stack_policy
from gpuplatform.policies.stack import ACK_NODE_POOL_TYPE, POOL_TYPE, lookup_metric

CATEGORY = "gpu"


def _gpu_workloads(view):
    for w in view.objects(*k8s.WORKLOAD_KINDS):
        spec = k8s.pod_spec(w.kind, w.props)
        if k8s.uses_gpu(spec):
            yield w, spec


def _mode_from_selector(spec) -> str | None:
    """Sharing mode a pod's node selector commits it to, for YAML without our pool components."""
    selector = k8s.as_map(k8s.get(spec, "nodeSelector"))
    value = selector.get(sharing.ACK_SCHEDULE_LABEL)
    if value in sharing.CGPU_POLICIES or selector.get(sharing.LEGACY_CGPU_LABEL[0]) == sharing.LEGACY_CGPU_LABEL[1]:
        return "cgpu"
    if value == sharing.ACK_MIG or sharing.NVIDIA_MIG_CONFIG_LABEL in selector:
        return "mig"
    if value == sharing.ACK_EXCLUSIVE:
        return "exclusive"
    return None


# ------------------------------------------------------------------------------------------------ metrics
@stack_policy(
    "gpu-metric-matches-sharing-mode",
    "HPA metrics must be meaningful for the sharing mode of the pool the target runs on: device-level "
    "utilization and frame-buffer metrics describe a whole card, so on cGPU and MIG pools they do not measure the "
    "pod (MIG instances do not report GPU utilization at all).",
    category=CATEGORY, severity=HIGH,
    refs=("dcgm-exporter#216", "ACK GPU-metric HPA guide"),
    remediation="Scale on a per-process or per-instance metric of the catalog (e.g. gpu_sm_util on cGPU, "
                "gpu_engine_active on MIG) or on an inference-server metric such as queue time.")
def metric_matches_sharing_mode(view, config, report):
    for s, target in view.scaled_targets():
        mode = view.pool_mode(target) or _mode_from_selector(k8s.workload_pod_spec(target.kind, target.props))
        if mode is None:
            continue
        for m in s.metrics:
            found = lookup_metric(m.name)
            if found is None:
                continue
            metric, src = found
            if mode not in metric.sharing_modes:
                valid = sorted(d.name for d in METRICS.values() if mode in d.sharing_modes)
                report(f"{s.resource.label} scales {target.label} on '{m.name}' (catalog metric '{metric.name}' "
                       f"from the {src.exporter} exporter), which does not measure one pod on a {mode} pool; "
                       f"metrics valid there: {', '.join(valid)}", s.resource)


# ------------------------------------------------------------------------------------------------ pools
def _ack_labels(props) -> dict[str, str]:
    out = {}
    for item in k8s.as_list(k8s.get(props, "labels")):
        key, value = k8s.get(item, "key"), k8s.get(item, "value")
        if key is not None:
            out[str(key)] = "" if value is None else str(value)
    return out


@resource_policy(
    "gpu-mig-profile-valid",
    "A MIG pool's profile must exist for its GPU model, a per-GPU layout must fit each GPU (MIG instances take "
    "fixed, non-overlapping slots of its memory slices), and the instance family must support MIG on ACK "
    "(passthrough families such as ecs.gn7 cannot run MIG even with A100s).",
    category=CATEGORY, severity=CRITICAL, types=(POOL_TYPE, ACK_NODE_POOL_TYPE),
    refs=("mig-parted assert --valid-config", "gpu-operator default-mig-parted-config"),
    remediation="Pick a profile listed for the model in catalogs/mig.py, or a MIG-capable instance family.")
def mig_profile_valid(r, config, report):
    if r.type == POOL_TYPE:
        if k8s.get(r.props, "sharingMode") != "mig":
            return
        model, profile = k8s.get(r.props, "gpuModel"), k8s.get(r.props, "migProfile")
        profiles = profiles_for(str(model))
        layout = k8s.as_list(k8s.get(r.props, "migLayout"))
        if not profiles:
            report(f"pool {r.name}: GPU model '{model}' has no MIG support; MIG-capable models: "
                   f"{', '.join(sorted(n for n, g in GPU_MODELS.items() if g.mig_capable))}")
        elif layout:
            for entry in layout:
                devices = {str(k): int(k8s.quantity(v) or 0) for k, v in k8s.as_map(k8s.get(entry, "profiles")).items()}
                if devices and not fits_one_gpu(str(model), devices):
                    shown = " + ".join(f"{n} x {p}" for p, n in devices.items())
                    report(f"pool {r.name}: GPUs {k8s.as_list(k8s.get(entry, 'devices'))} cannot hold {shown} "
                           f"on one {model}; allowed profiles: {', '.join(profiles)}, in combinations whose "
                           "instances fit the GPU's memory slices")
        elif profile not in profiles:
            report(f"pool {r.name}: MIG profile '{profile}' does not exist on {model}; allowed: "
                   f"{', '.join(profiles)}")
        return
    labels = _ack_labels(r.props)
    value = labels.get(sharing.NVIDIA_MIG_CONFIG_LABEL)
    if value is None:
        return
    for name in k8s.as_list(k8s.get(r.props, "instanceTypes")):
        it = instance_type(str(name))
        if it is None:
            continue
        if not it.mig_supported:
            report(f"node pool {r.name}: instance type {it.name} cannot run MIG on ACK (only the "
                   f"bare-metal/MIG-enabled families do)")
            continue
        allowed = {mig_config_label_value(p): p for p in profiles_for(it.gpu_model)}
        if value not in allowed:
            report(f"node pool {r.name}: {sharing.NVIDIA_MIG_CONFIG_LABEL}={value} is not a MIG layout of "
                   f"{it.gpu_model} ({it.name}); allowed: {', '.join(allowed)}")


@resource_policy(
    "gpu-node-pool-sharing-label",
    "An ACK GPU node pool's scheduling label must be a known value and agree with its MIG layout label: the "
    "label decides which device plugin advertises the GPUs, so a mismatch leaves the nodes without schedulable "
    "GPU resources.",
    category=CATEGORY, severity=HIGH, types=(ACK_NODE_POOL_TYPE,),
    refs=("ACK GPU node labels (doc-detail/191140)",),
    config={"allowedScheduleValues": prop("array", "Extra values of the ACK scheduling label to accept.", [],
                                          items={"type": "string"})},
    remediation="Let the GpuNodePool component derive the labels from the pool's sharing mode.")
def node_pool_sharing_label(r, config, report):
    labels = _ack_labels(r.props)
    schedule = labels.get(sharing.ACK_SCHEDULE_LABEL)
    mig = sharing.NVIDIA_MIG_CONFIG_LABEL in labels
    allowed = [sharing.ACK_EXCLUSIVE, sharing.ACK_MIG, *sharing.CGPU_POLICIES, *config["allowedScheduleValues"]]
    if schedule is not None and schedule not in allowed:
        report(f"node pool {r.name}: {sharing.ACK_SCHEDULE_LABEL}={schedule} is not a known value; allowed: "
               f"{', '.join(allowed)}")
    if mig and schedule != sharing.ACK_MIG:
        report(f"node pool {r.name}: has {sharing.NVIDIA_MIG_CONFIG_LABEL} but {sharing.ACK_SCHEDULE_LABEL} is "
               f"'{schedule}', not '{sharing.ACK_MIG}'")
    if schedule == sharing.ACK_MIG and not mig:
        report(f"node pool {r.name}: {sharing.ACK_SCHEDULE_LABEL}={sharing.ACK_MIG} without a "
               f"{sharing.NVIDIA_MIG_CONFIG_LABEL} layout label")
    placement = labels.get(sharing.ACK_PLACEMENT_LABEL)
    if placement is not None and placement not in sharing.CGPU_PLACEMENTS:
        report(f"node pool {r.name}: {sharing.ACK_PLACEMENT_LABEL}={placement}; allowed: "
               f"{', '.join(sharing.CGPU_PLACEMENTS)}")


# ------------------------------------------------------------------------------------------------ pods
@stack_policy(
    "gpu-cgpu-memory-fits-card",
    "A cGPU pod's GPU memory request must fit on one card of its pool, as the device plugin reports it "
    "(a 16 GB T4 reports 14 GiB); otherwise the scheduler reports 'Insufficient GPU Memory in one device'.",
    category=CATEGORY, severity=HIGH,
    refs=("gpushare-scheduler-extender predicate.go",),
    config={"gpuModel": prop("string", "GPU model to assume when the pool is not part of the checked resources.",
                             "")},
    remediation="Lower the memory per replica or move the workload to a pool with larger cards.")
def cgpu_memory_fits(view, config, report):
    for w, spec in _gpu_workloads(view):
        pool = view.pool_of(w)
        model_name = k8s.get(pool, "gpuModel") if pool is not None else config.get("gpuModel")
        model = gpu_model(str(model_name or ""))
        if model is None:
            continue
        for c in k8s.containers(spec, init=False):
            req, lim = k8s.gpu_resources(c).get(sharing.RESOURCE_GPU_MEM, (None, None))
            amount = k8s.quantity(lim if lim is not None else req)
            if amount is not None and model.reported_mib is None:
                # nothing to compare with: the catalog does not guess a card's reported memory (catalogs/gpus.py)
                report(f"{w.label} container {k8s.container_name(c)} asks {k8s.fmt_number(amount)} GiB of "
                       f"{sharing.RESOURCE_GPU_MEM}, but "
                       f"{reported_memory_unknown(model.name, 'sizing cGPU memory')}", w)
            elif amount is not None and amount > model.reported_gib:
                report(f"{w.label} container {k8s.container_name(c)} asks {k8s.fmt_number(amount)} GiB of "
                       f"{sharing.RESOURCE_GPU_MEM}, but one {model.name} card offers {model.reported_gib} GiB",
                       w)


@stack_policy(
    "gpu-resource-matches-pool",
    "The GPU resource a pod asks for must be one its pool advertises: whole GPUs on exclusive pools, "
    "cGPU memory on cGPU pools, the profile's MIG resource on MIG pools (a per-GPU layout advertises each of its "
    "profiles, and nvidia.com/gpu for its MIG-disabled GPUs).",
    category=CATEGORY, severity=CRITICAL,
    refs=("k8s-device-plugin MIG strategies", "ACK cGPU"),
    remediation="Request a resource the pool advertises (GpuNodePool.nodeResources) or select the right pool.")
def resource_matches_pool(view, config, report):
    for w, spec in _gpu_workloads(view):
        asked = k8s.pod_gpu_resources(spec)
        pool = view.pool_of(w)
        advertised = set(_node_units(pool)) if pool is not None else set()
        if advertised:
            allowed = set(advertised)
            if k8s.get(pool, "sharingMode") == "cgpu":
                allowed.add(sharing.RESOURCE_GPU_CORE)
            wrong = sorted(set(asked) - allowed)
            if wrong:
                report(f"{w.label} asks {', '.join(wrong)} but pool {k8s.get(pool, 'poolName')} "
                       f"({k8s.get(pool, 'sharingMode')}) advertises {', '.join(sorted(advertised))}", w)
            continue
        mode = _mode_from_selector(spec)
        implied = k8s.mode_of_resources(asked)
        if mode == "cgpu" and implied != "cgpu":
            report(f"{w.label} selects cGPU nodes but asks {', '.join(sorted(asked))} instead of "
                   f"{sharing.RESOURCE_GPU_MEM}", w)
        elif mode == "exclusive" and implied is not None:
            report(f"{w.label} selects exclusive GPU nodes but asks {', '.join(sorted(asked))} instead of "
                   f"{sharing.RESOURCE_GPU}", w)


def _node_units(pool) -> dict:
    """GPU resource -> amount one node of the pool advertises: ``nodeResources`` (every resource of a per-GPU MIG
    layout), or the one ``resourceName`` and ``unitsPerNode`` of pools registered by versions before it existed."""
    units = {str(k): k8s.quantity(v) for k, v in k8s.as_map(k8s.get(pool, "nodeResources")).items()}
    if not units and k8s.get(pool, "resourceName"):
        units = {str(k8s.get(pool, "resourceName")): k8s.quantity(k8s.get(pool, "unitsPerNode"))}
    return units


def _fix_gpu_limits(r, config):
    spec = k8s.pod_spec(r.kind, r.props)
    if spec is None or not k8s.uses_gpu(spec):
        return None
    props = k8s.plain(r.props)
    new_spec = k8s.pod_spec(r.kind, props)
    changed = False
    for c in k8s.containers(new_spec):
        for key, (req, lim) in k8s.gpu_resources(c).items():
            res = c.setdefault("resources", {})
            if lim is None:
                res.setdefault("limits", {})[key] = req
                changed = True
            elif req != lim:
                res.setdefault("requests", {})[key] = lim
                changed = True
    return props if changed else None


@resource_policy(
    "gpu-limit-equals-request",
    "GPU extended resources must be set in limits, and a request, if given, must equal the limit: extended "
    "resources cannot be overcommitted, and dcgm-exporter attributes GPUs to pods by their limits.",
    category=CATEGORY, severity=HIGH, kinds=k8s.POD_KINDS,
    refs=("dcgm-exporter#138", "Kyverno check-nvidia-gpu"),
    remediation="Set the GPU resource in limits (requests default to limits). Remediation copies the value.",
    remediate=_fix_gpu_limits)
def gpu_limit_equals_request(r, config, report):
    spec = k8s.pod_spec(r.kind, r.props)
    for c in k8s.containers(spec):
        for key, (req, lim) in k8s.gpu_resources(c).items():
            if lim is None:
                report(f"{r.label} container {k8s.container_name(c)}: {key} is requested ({req}) but has no limit")
            elif req is not None and k8s.quantity(req) != k8s.quantity(lim):
                report(f"{r.label} container {k8s.container_name(c)}: {key} request {req} != limit {lim}")


@stack_policy(
    "gpu-pod-placement",
    "GPU pods must select their pool by its label and tolerate the pool's taints; without a node selector a GPU "
    "pod can land on any GPU pool, without the toleration it stays Pending.",
    category=CATEGORY, severity=HIGH,
    refs=("checks.md 4.1: Insufficient nvidia.com/gpu",),
    remediation=f"Set nodeSelector {sharing.POOL_LABEL}: <pool> and the pool's tolerations (GpuNodePool "
                "nodeSelector/tolerations).")
def gpu_pod_placement(view, config, report):
    for w, spec in _gpu_workloads(view):
        if not view.pools:
            # without the pools there is nothing to place against: GPU nodes carry the device plugin's resource
            # (and usually a taint the ExtendedResourceToleration admission plugin tolerates), so a pod that only
            # requests GPUs is scheduled onto GPU nodes
            continue
        pool = view.pool_of(w)
        if pool is None:
            report(f"{w.label} asks for GPUs but its nodeSelector names none of the pools "
                   f"({', '.join(sorted(view.pools))}) by {sharing.POOL_LABEL}", w)
            continue
        tolerations = k8s.as_list(k8s.get(spec, "tolerations"))
        for t in k8s.as_list(k8s.get(pool, "tolerations")):
            taint = {"key": k8s.get(t, "key"), "value": k8s.get(t, "value"), "effect": k8s.get(t, "effect")}
            if taint["effect"] in ("NoSchedule", "NoExecute") and not k8s.tolerates(tolerations, taint):
                report(f"{w.label} runs on pool {k8s.get(pool, 'poolName')} but does not tolerate its taint "
                       f"{taint['key']}{'=' + str(taint['value']) if taint['value'] else ''}:{taint['effect']}", w)


@stack_policy(
    "gpu-hpa-within-pool-capacity",
    "An autoscaler's maxReplicas times the GPU units per replica must fit the pool at its maximum size; replicas "
    "beyond it stay Pending ('Insufficient nvidia.com/gpu', cluster autoscaler NotTriggerScaleUp).",
    category=CATEGORY, severity=MEDIUM,
    refs=("k8s-device-plugin#430", "autoscaler#3869"),
    remediation="Lower maxReplicas or raise the pool's maxNodes.")
def hpa_within_capacity(view, config, report):
    for s, target in view.scaled_targets():
        if s.max_replicas is None:
            continue
        pool = view.pool_of(target)
        if pool is None:
            continue
        model = gpu_model(str(k8s.get(pool, "gpuModel") or ""))
        mode = k8s.get(pool, "sharingMode")
        gpus, nodes = k8s.quantity(k8s.get(pool, "gpusPerNode")), k8s.quantity(k8s.get(pool, "maxNodes"))
        if model is None or mode not in sharing.SHARING_MODES or gpus is None or nodes is None:
            continue
        asked = k8s.pod_gpu_resources(k8s.workload_pod_spec(target.kind, target.props))
        if mode == "cgpu":
            request = capacity.GpuRequest(memory_gib=asked.get(sharing.RESOURCE_GPU_MEM, 0),
                                          core_percent=int(asked.get(sharing.RESOURCE_GPU_CORE, 0)))
            if not request.memory_gib:
                continue
            cap = capacity.pool_replicas(mode, model, int(gpus), int(nodes), request)
            per_node = f"{int(gpus)} {model.name}"
        else:
            # whole GPUs and MIG instances: a node holds as many replicas as its scarcest requested resource allows
            units = _node_units(pool)
            counts = {res: n for res, n in asked.items() if units.get(res) is not None and n}
            if not counts:
                continue
            cap = int(nodes) * min(int(units[res] // n) for res, n in counts.items())
            per_node = f"{int(gpus)} {model.name}: " + ", ".join(f"{int(units[r])} {r}" for r in counts)
        if s.max_replicas > cap:
            report(f"{s.resource.label} allows {s.max_replicas} replicas of {target.label}, but pool "
                   f"{k8s.get(pool, 'poolName')} holds at most {cap} ({int(nodes)} nodes x {per_node})", s.resource)


@resource_policy(
    "gpu-resource-known",
    "A GPU-like resource name must be one a device plugin serves (nvidia.com/gpu, the MIG profiles, cGPU memory "
    "and cores, other vendors' GPUs): the scheduler waits forever for a resource no node advertises "
    "('Insufficient nvidia.com/gpu-all').",
    category=CATEGORY, severity=CRITICAL, kinds=k8s.POD_KINDS,
    refs=("k8s-device-plugin README (resource names)", "k8s-device-plugin#430"),
    config={"extraResources": prop("array", "Further GPU resource names your device plugins serve.", [],
                                   items={"type": "string"})},
    remediation="Use the resource name the pool's device plugin advertises (catalogs/sharing.py).")
def gpu_resource_known(r, config, report):
    served = sharing.served_gpu_resources() | set(config["extraResources"])
    for c in k8s.containers(k8s.pod_spec(r.kind, r.props)):
        names = {str(k) for part in ("requests", "limits")
                 for k in k8s.as_map(k8s.get(c, "resources", part))}
        for name in sorted(n for n in names if sharing.looks_like_gpu_resource(n) and n not in served):
            near = close_matches(name, served)
            report(f"{r.label} container {k8s.container_name(c)} asks for '{name}', which no GPU device plugin "
                   f"serves" + (f" (did you mean {', '.join(near)}?)" if near else ""))


NVIDIA_VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"
_NO_DEVICES = ("", "none", "void")


@resource_policy(
    "gpu-visible-devices-isolated",
    "A container must not set NVIDIA_VISIBLE_DEVICES to 'all' or to more devices than it requests: the NVIDIA "
    "container runtime honours the variable in unprivileged containers (nvidia-container-toolkit "
    "accept-nvidia-visible-devices-envvar-when-unprivileged, on by default), so the pod uses GPUs the scheduler "
    "gave to other pods. GPU system components that monitor every GPU are exempt.",
    category=CATEGORY, severity=CRITICAL, kinds=k8s.POD_KINDS,
    refs=("nvidia-container-toolkit: NVIDIA_VISIBLE_DEVICES (all | none | void | index/UUID list)",
          "Kyverno check-nvidia-gpu"),
    remediation="Remove NVIDIA_VISIBLE_DEVICES and request the GPUs (limits nvidia.com/gpu); the device plugin "
                "sets the variable to the devices it allocated.")
def gpu_visible_devices(r, config, report):
    comp = system.component_of(r)
    if comp is not None and comp.sees_all_gpus:
        return
    for c in k8s.containers(k8s.pod_spec(r.kind, r.props)):
        value = next((k8s.get(e, "value") for e in k8s.as_list(k8s.get(c, "env"))
                      if k8s.get(e, "name") == NVIDIA_VISIBLE_DEVICES), None)
        if value is None or str(value).strip().lower() in _NO_DEVICES:
            continue
        asked = sum(k8s.quantity(lim if lim is not None else req) or 0
                    for key, (req, lim) in k8s.gpu_resources(c).items()
                    if key == sharing.RESOURCE_GPU or key.startswith(sharing.MIG_RESOURCE_PREFIX))
        text = str(value).strip()
        devices = None if text.lower() == "all" else len([d for d in text.split(",") if d.strip()])
        if devices is None or devices > asked:
            report(f"{r.label} container {k8s.container_name(c)} sets {NVIDIA_VISIBLE_DEVICES}={text} but "
                   f"requests {k8s.fmt_number(asked)} GPU(s): it sees GPUs allocated to other pods")


@resource_policy(
    "gpu-node-pod-requests-gpu",
    "A pod that tolerates the GPU taint or selects GPU nodes should request the GPUs it uses. With the NVIDIA "
    "container runtime a container that requests none gets no device from the device plugin, but an image that "
    "sets NVIDIA_VISIBLE_DEVICES=all (the CUDA and NGC base images do) still sees every GPU of the node, outside "
    "the scheduler's accounting. Whether it does depends on the image and the node's runtime configuration, which "
    "a manifest does not show, so this advises. GPU system components are exempt.",
    category=CATEGORY, severity=HIGH, level=ADVISORY, kinds=k8s.POD_KINDS,
    refs=("NVIDIA k8s-device-plugin README: Running GPU Jobs (unrequested GPUs exposed with NVIDIA images)",
          "k8s-device-plugin#61", "nvidia-container-toolkit: NVIDIA_VISIBLE_DEVICES"),
    remediation="Request the GPUs the container uses (limits nvidia.com/gpu), or set NVIDIA_VISIBLE_DEVICES=void "
                "if it needs none; a CPU-only helper does not need the GPU taint's toleration.")
def gpu_node_pod_requests_gpu(r, config, report):
    spec = k8s.pod_spec(r.kind, r.props)
    if spec is None or system.component_of(r) is not None:
        return
    toleration = next((str(k8s.get(t, "key")) for t in k8s.as_list(k8s.get(spec, "tolerations"))
                       if k8s.get(t, "key") in sharing.GPU_NODE_TAINT_KEYS), None)
    selector = k8s.as_map(k8s.get(spec, "nodeSelector"))
    label = next((key for key in selector if key in sharing.GPU_NODE_LABELS), None)
    if label is None:
        terms = k8s.as_list(k8s.get(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                                    "nodeSelectorTerms"))
        label = next((k8s.get(e, "key") for term in terms for e in k8s.as_list(k8s.get(term, "matchExpressions"))
                      if k8s.get(e, "key") in sharing.GPU_NODE_LABELS
                      and k8s.get(e, "operator") in ("In", "Exists", "Gt")), None)
    if toleration is None and label is None:
        return
    containers = list(k8s.containers(spec))
    if any(sharing.looks_like_gpu_resource(str(name)) for c in containers for part in ("requests", "limits")
           for name in k8s.as_map(k8s.get(c, "resources", part))):
        return  # any vendor's or sharing scheduler's GPU resource (catalogs.sharing), not only ours
    if any(str(k8s.get(e, "value") or "").strip().lower() in _NO_DEVICES
           for c in containers for e in k8s.as_list(k8s.get(c, "env")) if k8s.get(e, "name") == NVIDIA_VISIBLE_DEVICES):
        return
    why = f"tolerates the GPU taint {toleration}" if toleration else f"selects GPU nodes by {label}"
    report(f"{r.label} {why} but requests no GPU: an image that sets {NVIDIA_VISIBLE_DEVICES}=all sees every GPU "
           f"of the node, outside the device plugin's accounting")
