"""The pack: every registered policy, and the ``PolicyPack`` the Pulumi CLI talks to."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

# importing the modules registers their policies, in this order (also the order of the docs table)
from gpuplatform.policies import gpu, autoscaling, security, reliability, servers, network  # noqa: F401
from gpuplatform.policies.registry import REGISTRY, PolicyDef

if TYPE_CHECKING:
    from pulumi_policy import PolicyPack

PACK_NAME = "gpu-platform"
DESCRIPTION = ("GPU inference on Kubernetes/ACK: GPU sharing semantics, the custom-metrics autoscaling chain, "
               "security and reliability.")

POLICY_DEFS: list[PolicyDef] = list(REGISTRY)


def __getattr__(name: str) -> Any:
    # ``ALL_POLICIES``, the pack's ``pulumi_policy`` objects, is built on first use: importing the SDK is most of
    # the start-up of an offline check, which runs the same policies without it (PEP 562 module attribute)
    if name == "ALL_POLICIES":
        globals()[name] = [p.policy for p in POLICY_DEFS]
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_pack() -> PolicyPack:
    """Serve the pack over gRPC. Blocks for the lifetime of the CLI's analyzer, so only ``__main__`` calls it."""
    from pulumi_policy import EnforcementLevel, PolicyPack

    return PolicyPack(name=PACK_NAME, policies=[p.policy for p in POLICY_DEFS],
                      enforcement_level=EnforcementLevel.ADVISORY, description=DESCRIPTION)
