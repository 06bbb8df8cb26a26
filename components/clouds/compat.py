"""The ACK flags that objects exposed before the cloud profile, kept for code built on them: ``is_ack`` and
``is_ack_pro`` of a ``PlatformConfig`` and a ``GpuCluster`` now read the object's ``cloud`` profile. Deprecated
after 0.5.0: ask the profile (``cloud.uses_cloud_provider``, ``cloud.tier_lacks(...)``, ``cloud.name``) instead."""
from __future__ import annotations

import warnings


class AckFlags:
    """Mixin for a class with a ``cloud`` attribute or property."""

    @property
    def is_ack(self) -> bool:
        warnings.warn("is_ack is deprecated: ask the cloud profile (.cloud) instead", DeprecationWarning,
                      stacklevel=2)
        return self.cloud.name == "ack"

    @property
    def is_ack_pro(self) -> bool:
        """An ACK Pro cluster (managed node pools, cGPU through ack-ai-installer)."""
        warnings.warn("is_ack_pro is deprecated: ask the cloud profile (.cloud) instead", DeprecationWarning,
                      stacklevel=2)
        return self.cloud.name == "ack" and self.cloud.professional
