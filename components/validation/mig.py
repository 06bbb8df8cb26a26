"""Rules of MIG: a pool's profile or per-GPU layout and where each runs, and the cluster-wide GPU Operator settings
every MIG pool shares."""
from gpuplatform.catalogs.gpus import GPU_MODELS, instance_type, mig_instance_families
from gpuplatform.catalogs.mig import example_layouts, fits_one_gpu, max_instances, profiles_for
from gpuplatform.components.config import PlatformConfig
from gpuplatform.components.errors import fmt, one_of
from gpuplatform.components.k8s_validity import label_value
from gpuplatform.components.pools import PoolFacts, mig_layout_config_name
from gpuplatform.components.validation.common import _cluster_tier, _Issues


def check_pool_mig(cfg: PlatformConfig, p: str, pool, out: _Issues) -> None:
    """A MIG pool: GPUs that run MIG, a profile or layout they have, and what the cluster partitions with."""
    s = pool.sharing
    if s.mode != "mig":
        return
    first = instance_type(pool.instance_types[0]) if pool.instance_types else None
    model = first.gpu if first else GPU_MODELS.get(pool.gpu_model or "")
    if model is not None:
        if not model.mig_capable:
            capable = [m.name for m in GPU_MODELS.values() if m.mig_capable]
            out.add(f"{p}.sharing.mode", f"'mig' on {model.name}, which has no MIG; MIG GPUs: {one_of(capable)}")
        elif first is not None and not first.mig_supported:
            out.add(f"{p}.sharing.mode", f"'mig' on {fmt(first.name)}: family {first.family} ({model.name}, GPU "
                    "passthrough) cannot run MIG on ACK; MIG-capable families: "
                    f"{one_of(mig_instance_families())} (e.g. ecs.ebmgn7.26xlarge bare metal)")
        elif s.profile is not None and s.profile not in profiles_for(model.name):
            out.add(f"{p}.sharing.profile", f"{fmt(s.profile)} is not a MIG profile of {model.name}; allowed: "
                    f"{one_of(profiles_for(model.name))}")
        elif s.layout:
            _check_mig_layout(p, s, model.name, (first.gpus if first else pool.gpus_per_node) or 0, out)
    _check_mig_choice(cfg, p, pool, out)
    if cfg.cloud.partitions_mig:
        _check_ack_mig(cfg, p, s, out)


def _check_mig_choice(cfg: PlatformConfig, p: str, pool, out: _Issues) -> None:
    """A MIG pool takes one profile for every GPU, or a per-GPU layout; a layout runs where mig-manager does."""
    s = pool.sharing
    if s.profile is None and not s.layout:
        out.add(f"{p}.sharing.profile", "required: the MIG profile of every GPU (e.g. 1g.5gb), or a per-GPU "
                "'layout' instead")
    if s.profile is not None and s.layout:
        out.add(f"{p}.sharing.layout", f"set with 'profile' ({fmt(s.profile)}); allowed: one of them (profile: "
                "every GPU alike; layout: per GPU)")
    if s.config_name is not None and not s.layout:
        out.add(f"{p}.sharing.configName", f"{fmt(s.config_name)}: names the mig-parted config of a per-GPU "
                "'layout', which this pool does not have; allowed: remove it, or add a layout")
    if not s.layout:
        return
    if s.strategy != "mixed":
        # k8s-device-plugin internal/rm/device_map.go: with the single strategy "all devices on the node must be
        # configured with the same migEnabled value" and carry one MIG device type, or the plugin serves nothing
        out.add(f"{p}.sharing.strategy", f"{fmt(s.strategy)} with a per-GPU layout: NVIDIA's device plugin serves "
                "nothing under the single strategy unless every GPU of the node has MIG on with one profile; "
                "allowed with a layout: mixed")
    if cfg.cloud.partitions_mig:
        out.add(f"{p}.sharing.layout", "ACK partitions MIG GPUs itself (ack.node.gpu.schedule=mig) and takes one "
                "profile per node pool; a per-GPU layout needs the GPU Operator's mig-manager, which runs on "
                "clusters of kind 'kubeconfig'; allowed on ACK: profile")
    elif getattr(cfg.cluster, "simulate_gpus", False):
        # run-ai/fake-gpu-operator internal/migfaker/app.go partitions from its own run.ai/mig.config annotation
        out.add(f"{p}.sharing.layout", "simulated GPUs (simulateGpus) do not run mig-manager: fake-gpu-operator "
                "partitions from its own annotation, not a mig-parted config; allowed with simulateGpus: profile")
    name = mig_layout_config_name(pool)
    problem = label_value(name)
    if problem or name.startswith("all-"):
        where = f"{p}.sharing.configName" if s.config_name else f"{p}.name"
        out.add(where, f"{fmt(name)} cannot name the pool's mig-parted config: "
                f"{problem or 'names starting with all- are the GPU Operator own configs'}; allowed: a label value "
                "of at most 63 letters, digits, '-', '_' or '.', not starting with 'all-'")


def _check_mig_layout(p: str, s, model: str, gpus: int, out: _Issues) -> None:
    """Each GPU of a node in exactly one entry, and each GPU's instances placeable at once (NVML placements)."""
    seen: dict[int, int] = {}
    for j, entry in enumerate(s.layout):
        pe = f"{p}.sharing.layout[{j}]"
        if not entry.devices:
            out.add(f"{pe}.devices", "empty; allowed: GPU indices of the node, e.g. [0]")
        for index in entry.devices:
            if gpus and not 0 <= index < gpus:
                out.add(f"{pe}.devices", f"{index} is not a GPU of a node of this pool ({gpus} GPUs per node); "
                        f"allowed: 0..{gpus - 1}")
            elif index in seen:
                out.add(f"{pe}.devices", f"GPU {index} is already laid out by layout[{seen[index]}]; each GPU "
                        "belongs to one entry")
            seen.setdefault(index, j)
        known = profiles_for(model)
        for name, count in entry.profiles.items():
            if name not in known:
                out.add(f"{pe}.profiles.{name}", f"{fmt(name)} is not a MIG profile of {model}; allowed: "
                        f"{one_of(known)}")
            elif count < 1:
                out.add(f"{pe}.profiles.{name}", f"{count}: allowed: 1..{max_instances(model, name)} (leave the "
                        "profile out for none)")
        if all(n in known and c >= 1 for n, c in entry.profiles.items()) and not fits_one_gpu(model, entry.profiles):
            asked = " + ".join(f"{c} x {n}" for n, c in entry.profiles.items())
            alone = ", ".join(f"{n} up to {max_instances(model, n)}" for n in entry.profiles)
            out.add(f"{pe}.profiles", f"{asked} do not fit on one {model}: MIG instances take fixed slots of the "
                    f"GPU's memory slices and may not overlap ({alone} alone); allowed: a combination NVIDIA lists "
                    f"for the GPU, e.g. {' or '.join(example_layouts(model))} on an {model}")
    missing = [i for i in range(gpus) if i not in seen]  # gpus 0: unknown, reported with gpusPerNode
    if gpus and missing:
        out.add(f"{p}.sharing.layout", f"leaves GPU {', '.join(map(str, missing))} of each node out; every GPU "
                f"0..{gpus - 1} needs an entry (one without profiles keeps it whole)")


def _check_ack_mig(cfg: PlatformConfig, p: str, s, out: _Issues) -> None:
    """ACK partitions GPUs itself (``ack.node.gpu.schedule=mig`` through ack-ai-installer, a Pro-cluster add-on);
    the GPU Operator's mig-manager and its single-strategy device plugin do not run there."""
    if s.strategy == "single":
        out.add(f"{p}.sharing.strategy", "'single' is a strategy of NVIDIA's device plugin, which ACK does not run: "
                "ACK exposes each MIG instance as nvidia.com/mig-<profile>; allowed on ACK: mixed")
    if cfg.cloud.tier_lacks("mig"):
        out.add(f"{p}.sharing.mode", f"'mig' needs ACK's MIG partitioning, which comes with the ack-ai-installer "
                f"add-on of ACK Pro clusters, and {_cluster_tier(cfg)}; allowed: exclusive, or an ACK Pro cluster")


def check_mig_strategy(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """The GPU Operator sets one MIG strategy for the whole cluster (ClusterPolicy ``spec.mig.strategy``, from the
    chart's ``mig.strategy``), so the device plugin of every MIG pool runs it: a pool asking for another strategy
    would get resources its workloads do not request (mixed serves nvidia.com/mig-<profile>, single
    nvidia.com/gpu)."""
    if cfg.cloud.partitions_mig or getattr(cfg.cluster, "simulate_gpus", False):
        return
    index = {pool.name: i for i, pool in enumerate(cfg.node_pools)}
    mig = [f for f in facts.values() if f.mode == "mig"]
    if len({f.mig_strategy for f in mig}) < 2:
        return
    first = mig[0]
    for f in mig[1:]:
        if f.mig_strategy != first.mig_strategy:
            out.add(f"nodePools[{index[f.name]}].sharing.strategy", f"{fmt(f.mig_strategy)} differs from pool "
                    f"{fmt(first.name)} ({first.mig_strategy}); the GPU Operator runs one MIG strategy for the "
                    f"whole cluster; allowed: {first.mig_strategy}")


def check_mig_configs(cfg: PlatformConfig, facts: dict[str, PoolFacts], out: _Issues) -> None:
    """With a per-GPU layout the GPU Operator reads our mig-parted config instead of its own (gpu-operator
    values.yaml, ``migManager.config.name``), so that one file carries every pool's config: an ``all-<profile>``
    must mean one thing for every model that uses it, and a config name one layout."""
    layouts = {n: f for n, f in facts.items() if f.mig_layout}
    if not layouts:
        return
    index = {pool.name: i for i, pool in enumerate(cfg.node_pools)}
    uniform: dict[str, dict[int, str]] = {}
    for f in facts.values():
        if f.mode == "mig" and not f.mig_layout and f.mig_profile:
            uniform.setdefault(f.mig_profile, {})[max_instances(f.model.name, f.mig_profile)] = f.name
    for profile, counts in sorted(uniform.items()):
        if len(counts) > 1:
            pools = ", ".join(f"{name} ({n} per GPU)" for n, name in sorted(counts.items()))
            out.add(f"nodePools[{index[max(counts.items())[1]]}].sharing.profile",
                    f"{fmt(profile)} holds a different number of instances on the GPUs of pools {pools}, so one "
                    f"all-{profile} config cannot serve both next to a per-GPU layout; allowed: a layout for one "
                    "of these pools")
    owner: dict[str, PoolFacts] = {}
    for name, f in layouts.items():
        first = owner.setdefault(f.mig_config_name, f)
        if first is not f and (first.mig_layout, first.model) != (f.mig_layout, f.model):
            out.add(f"nodePools[{index[name]}].sharing.configName", f"{fmt(f.mig_config_name)} is already the "
                    f"layout of pool {fmt(first.name)}, which differs; allowed: another name")
