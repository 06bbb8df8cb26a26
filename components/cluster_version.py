"""The stack's Kubernetes version (``cluster.kubernetesVersion``) and the HPA API it implies: pure functions over
the config and the catalogs that the builders (workload_manifests.py, placement.py) and the validation rules both
read, below both so that building an object never imports the rules that judge it."""
import re

from gpuplatform.catalogs.kubernetes import INTRODUCED_APIS
from gpuplatform.catalogs.versions import KUBERNETES_SUPPORTED
from gpuplatform.components.config import PlatformConfig, Workload

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
