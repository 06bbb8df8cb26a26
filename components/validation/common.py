"""What the rules of every area share: the issue list they append to, the Kubernetes version of the stack and the
HPA API it implies, and the "did you mean" hint."""
import re
from typing import Callable, Optional

from gpuplatform.catalogs.gpus import close_matches
from gpuplatform.catalogs.kubernetes import INTRODUCED_APIS
from gpuplatform.catalogs.versions import KUBERNETES_SUPPORTED
from gpuplatform.components.config import PlatformConfig, Workload
from gpuplatform.components.errors import ConfigIssue, fmt, one_of
from gpuplatform.components.pools import PoolFacts

MIN_KUBERNETES = KUBERNETES_SUPPORTED[0]
K8S_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:-aliyun\.\d+)?$")
HPA_V2_MIN = INTRODUCED_APIS["autoscaling/v2"]
HPA_API_VERSIONS = ("autoscaling/v2", "autoscaling/v2beta2", "autoscaling/v2beta1")


def kubernetes_version(cfg: PlatformConfig) -> tuple[int, int] | None:
    m = K8S_VERSION.match(cfg.cluster.kubernetes_version)
    return (int(m.group(1)), int(m.group(2))) if m else None


def hpa_api_version(cfg: PlatformConfig, workload: Workload | None = None) -> str:
    """The workload's ``autoscaling.hpaApiVersion`` if set; else ``autoscaling/v2`` from 1.23 on and
    ``autoscaling/v2beta2`` before: v2beta2 is served from 1.12 to 1.25 and has ``behavior``, which v2beta1 lacks
    (kubernetes.io deprecation guide, "HorizontalPodAutoscaler" v1.25/v1.26 removals)."""
    if workload is not None and workload.autoscaling.hpa_api_version:
        return workload.autoscaling.hpa_api_version
    version = kubernetes_version(cfg)
    return "autoscaling/v2" if version is None or version >= HPA_V2_MIN else "autoscaling/v2beta2"


def _suggest(value: str, choices) -> str:
    near = close_matches(value, choices)
    return f" Did you mean {one_of(near)}?" if near else ""


class _Issues(list):
    def add(self, path: str, message: str) -> None:
        self.append(ConfigIssue(path, message))


Rule = Callable[[PlatformConfig, dict[str, PoolFacts], _Issues], None]
WorkloadRule = Callable[[PlatformConfig, str, Workload, Optional[PoolFacts], _Issues], None]
"""A rule of one workload: the config, the workload's path (``workloads[i]``), the workload, the facts of its pool
(None when the pool is unknown) and the issues so far."""


def _cluster_tier(cfg: PlatformConfig) -> str:
    c = cfg.cluster
    if c.kind == "ack-managed":
        return f"cluster.clusterSpec is {fmt(c.cluster_spec)}"
    return "cluster.professional is false (a dedicated cluster)"
