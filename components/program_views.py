"""The configs of a program's composed components, read back from what it built: what ``gpuplatform
plan|check|simulate|verify --project`` read a consumer's program by. It reads GpuCluster and GpuMonitoring, so it
sits above them, apart from assembly.py, which every component imports."""
from gpuplatform.components.assembly import BUILT, ComposedConfig
from gpuplatform.components.cluster import GpuCluster
from gpuplatform.components.config import Monitoring
from gpuplatform.components.monitoring import GpuMonitoring


def composed_views() -> list[ComposedConfig]:
    """One config per GpuCluster a program built: its pools, the first GpuMonitoring of it, and the services on its
    pools, each in its own namespace."""
    views = []
    for cluster in [c for c in BUILT if isinstance(c, GpuCluster)]:
        monitoring = next((m for m in BUILT if isinstance(m, GpuMonitoring) and m.cluster is cluster), None)
        services = [s for p in cluster.node_pools for s in p.services]
        namespace = services[0].context.namespace if services else cluster.settings.namespace
        cfg = ComposedConfig.model_construct(
            settings=cluster.settings.model_copy(update={"namespace": namespace}), cluster=cluster.spec,
            node_pools=[p.spec for p in cluster.node_pools],
            monitoring=monitoring.spec if monitoring else Monitoring(), workloads=[s.workload for s in services],
            kubeconfig=None, grafana_admin_password=None)
        cfg._namespaces = {s.workload.name: s.context.namespace for s in services}
        views.append(cfg)
    return views
