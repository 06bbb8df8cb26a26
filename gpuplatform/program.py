"""The Pulumi program: stack config -> GpuPlatform -> stack outputs. ``__main__.py`` runs it under the CLI;
``gpuplatform plan`` runs the same function in-process under the SDK's mock runtime."""
import pulumi

from gpuplatform.components.errors import ConfigError
from gpuplatform.components.platform import GpuPlatform
from gpuplatform.components.stack_config import namespace_from_pulumi, provider_settings_from_pulumi
from gpuplatform.components.validation import load

PLATFORM_NAME = "gpu"


def main() -> GpuPlatform:
    try:
        cfg = load(namespace_from_pulumi(), provider_settings_from_pulumi())
    except ConfigError as exc:
        # a clean failure before any resource is registered, without a Python traceback
        raise pulumi.RunError(exc.render()) from None
    platform = GpuPlatform(PLATFORM_NAME, {"config": cfg})
    pulumi.export("clusterId", platform.cluster.cluster_id)
    pulumi.export("kubeconfig", platform.cluster.kubeconfig)
    pulumi.export("prometheusUrl", platform.prometheus_url)
    pulumi.export("nodePools", {name: {"nodeSelector": pool.node_selector, "tolerations": pool.tolerations,
                                       "gpuUnitsPerNode": pool.units_per_node,
                                       "gpuResourcesPerNode": pool.node_resources, "nodeLabels": pool.node_labels}
                                for name, pool in platform.pools.items()})
    pulumi.export("services", {name: {"namespace": cfg.settings.namespace, "service": svc.service_name}
                               for name, svc in platform.services.items()})
    return platform
