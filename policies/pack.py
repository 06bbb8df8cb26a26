"""The pack: every registered policy, and the ``PolicyPack`` the Pulumi CLI talks to."""
from __future__ import annotations

from pulumi_policy import EnforcementLevel, PolicyPack

# importing the modules registers their policies, in this order (also the order of the docs table)
from gpuplatform.policies import gpu, autoscaling, security, reliability, network  # noqa: F401
from gpuplatform.policies.registry import REGISTRY, PolicyDef

PACK_NAME = "gpu-platform"

POLICY_DEFS: list[PolicyDef] = list(REGISTRY)
ALL_POLICIES = [p.policy for p in POLICY_DEFS]


def build_pack() -> PolicyPack:
    """Serve the pack over gRPC. Blocks for the lifetime of the CLI's analyzer, so only ``__main__`` calls it."""
    return PolicyPack(name=PACK_NAME, policies=ALL_POLICIES, enforcement_level=EnforcementLevel.ADVISORY,
                      description="GPU inference on Kubernetes/ACK: GPU sharing semantics, the custom-metrics "
                                  "autoscaling chain, security and reliability.")
