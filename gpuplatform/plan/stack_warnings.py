"""Warnings every plan prints on stderr about what it cannot check or what the stack chose knowingly: files
``pulumi up`` will read elsewhere, a GPU the catalog does not know, a chart at an end-of-life pin."""
from gpuplatform.components.config import PlatformConfig


def file_warnings(cfg: PlatformConfig) -> list[str]:
    """Files the stack names that ``pulumi up`` will read: each one that is not on this machine, said loudly,
    since the plan cannot check it. The kubernetes provider takes ``kubeconfig`` as "the contents of a kubeconfig
    file or the path to a kubeconfig file" (pulumi-kubernetes ``Provider`` args), and the program hands it the
    path, which is read where ``pulumi`` runs."""
    import os

    path = getattr(cfg.cluster, "kubeconfig_path", None)
    if not path or os.path.isfile(os.path.expanduser(path)):
        return []
    return [f"WARNING: cluster.kubeconfigPath {path!r} does not exist here, so this plan could not check it; "
            "`pulumi up` fails unless it runs where that file exists (or set the secret gpu-platform:kubeconfig)"]


def custom_gpu_warnings(cfg: PlatformConfig) -> list[str]:
    """A pool's ``customGpu`` is the stack's own statement, said on every plan: its capacity, cGPU and sharing
    checks are only as right as those facts."""
    out = []
    for i, pool in enumerate(cfg.node_pools):
        c = pool.custom_gpu
        if c is not None:
            out.append(f"WARNING: nodePools[{i}].customGpu {c.name!r} is not in the GPU catalog: its {c.memory_gib} "
                       f"GiB per card and sharing modes ({', '.join(c.sharing)}) are this stack's statement, unchecked; "
                       "capacity and GPU-request checks of pool " f"{pool.name!r} rely on them")
    return out


def end_of_life_warnings(cfg: PlatformConfig) -> list[str]:
    """A chart installed at an end-of-life pin (``settings.allowEndOfLifeCharts``) is said on every plan, so the
    opt-in is not forgotten once the cluster could take a supported one."""
    from gpuplatform.catalogs.versions import chart
    from gpuplatform.components.releases import chart_releases
    from gpuplatform.components.validation import kubernetes_version

    version = kubernetes_version(cfg)
    out = []
    for key in chart_releases(cfg) if version else []:
        c = chart(key)
        chosen = c.for_kubernetes(version, c.name in cfg.settings.allow_end_of_life_charts)
        if chosen is not None and chosen.end_of_life:
            out.append(f"WARNING: {c.name} {chosen.version} is end of life upstream since {chosen.end_of_life} "
                       f"(chosen through settings.allowEndOfLifeCharts); upgrade the cluster to a Kubernetes version "
                       f"a supported pin covers: {c.supported_text()}")
    return out
