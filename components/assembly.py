"""The stack-file view of what components were given.

Every rule, builder and tool of the package reads a :class:`PlatformConfig`. A stack file gives the whole of it
at once; a consumer's components each get a part (the cluster, one pool, the monitoring, one workload) and the
objects they are composed with. This module parses each part with the stack file's own models and puts the
parts a component knows into one config, so a reused component is checked and built by exactly the rules and
builders a stack is.
"""
from typing import Any, Iterable, Optional

from pydantic import PrivateAttr, TypeAdapter, ValidationError

from gpuplatform.components.config import Monitoring, NodePool, PlatformConfig, Settings, Workload
from gpuplatform.components.errors import ConfigError, ConfigIssue


def parse_section(model: Any, raw: Any, path: str):
    """``raw`` (stack-file format) as ``model``, or ConfigError with stack-file paths under ``path``."""
    from gpuplatform.components.validation.parsing import _path, _pydantic_message

    try:
        return TypeAdapter(model).validate_python(raw)
    except ValidationError as exc:
        # the message reads the error's location as a stack-file path (a secret key is named by its first part)
        issues = [ConfigIssue(_path((path, *e["loc"])), _pydantic_message({**e, "loc": (path, *e["loc"])}))
                  for e in exc.errors()]
        raise ConfigError(issues) from None


def settings(environment: str = "dev", protect: Optional[bool] = None, allow_public_endpoints: bool = False,
             namespace: str = "inference", root_namespace: Optional[str] = None,
             allow_end_of_life_charts: Optional[list[str]] = None) -> Settings:
    return Settings(environment=environment, protect=protect, allow_public_endpoints=allow_public_endpoints,
                    namespace=namespace, root_namespace=root_namespace, create_namespace=False,
                    allow_end_of_life_charts=allow_end_of_life_charts or [])


class ComposedConfig(PlatformConfig):
    """The config of composed components: each service keeps the namespace its args gave it."""

    _namespaces: dict = PrivateAttr(default_factory=dict)

    def workload_namespace(self, workload: Workload) -> str:
        return self._namespaces.get(workload.name) or super().workload_namespace(workload)


BUILT: list = []
"""Every public component built in this process, in order: what ``gpuplatform plan|check|simulate|verify --project``
read a consumer's program by (its clusters, their pools, monitoring and services)."""


def composed_views() -> list[ComposedConfig]:
    """One config per GpuCluster a program built: its pools, the first GpuMonitoring of it, and the services on its
    pools, each in its own namespace."""
    from gpuplatform.components.cluster import GpuCluster
    from gpuplatform.components.monitoring import GpuMonitoring

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


def view(cluster_settings: Settings, cluster, node_pools: Iterable[NodePool] = (),
         monitoring: Optional[Monitoring] = None, workloads: Iterable[Workload] = (), namespace: Optional[str] = None,
         **extra) -> PlatformConfig:
    """A config of already-validated parts (pydantic's ``model_construct`` validates nothing again)."""
    if namespace is not None:
        cluster_settings = cluster_settings.model_copy(update={"namespace": namespace, "root_namespace": namespace})
    return PlatformConfig.model_construct(settings=cluster_settings, cluster=cluster, node_pools=list(node_pools),
                                          monitoring=monitoring or Monitoring(), workloads=list(workloads),
                                          kubeconfig=extra.get("kubeconfig"),
                                          grafana_admin_password=extra.get("grafana_admin_password"))
