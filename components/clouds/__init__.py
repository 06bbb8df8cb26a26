"""Cloud profiles: what the package asks of the cloud a cluster runs in, one profile per cloud
(:class:`~gpuplatform.components.clouds.base.CloudProfile`), picked from the stack's ``cluster.kind`` by
:func:`cloud_for`.

* ``ack`` (:mod:`.ack`): Alibaba Cloud ACK, ``ack-managed`` and ``ack-existing``; its facts in ``catalogs/ack.py``.
* ``existing`` (:mod:`.existing`): any cluster reached through a kubeconfig (``kubeconfig``).
"""
from __future__ import annotations

from gpuplatform.components.clouds.ack import AckProfile
from gpuplatform.components.clouds.base import CloudProfile
from gpuplatform.components.clouds.existing import ExistingClusterProfile

PROFILES: dict[str, type[CloudProfile]] = {}
"""``cluster.kind`` -> the profile class that serves it."""


def register(profile: type[CloudProfile]) -> type[CloudProfile]:
    """Make ``profile`` serve its ``cluster_kinds`` (a kind already served by another profile is an error)."""
    for kind in profile.cluster_kinds:
        served = PROFILES.get(kind)
        if served is not None and served is not profile:
            raise ValueError(f"cluster kind {kind!r} is served by the {served.name} profile already")
        PROFILES[kind] = profile
    return profile


for _profile in (AckProfile, ExistingClusterProfile):
    register(_profile)


def cloud_for(cluster) -> CloudProfile:
    """The profile of a cluster spec (the stack's ``cluster`` section: anything with ``kind``, and where its cloud
    has them ``professional`` and ``networkPlugin``)."""
    profile = PROFILES.get(cluster.kind)
    if profile is None:
        raise ValueError(f"cluster.kind: {cluster.kind!r} has no cloud profile; allowed: "
                         f"{', '.join(sorted(PROFILES))}")
    return profile(kind=cluster.kind, professional=bool(getattr(cluster, "professional", False)),
                   network_plugin=getattr(cluster, "network_plugin", "flannel"))


__all__ = ["AckProfile", "CloudProfile", "ExistingClusterProfile", "PROFILES", "cloud_for", "register"]
