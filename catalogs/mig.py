"""NVIDIA MIG profiles per GPU model, with the most instances of one profile a single GPU holds.

Source: NVIDIA GPU Operator ``default-mig-parted-config`` (v25.10.1) single-profile ``all-<profile>`` configs.
"""
from __future__ import annotations

MIG_PROFILES: dict[str, dict[str, int]] = {
    "A100-40GB": {"1g.5gb": 7, "1g.5gb+me": 1, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1,
                  "7g.40gb": 1},
    "A100-80GB": {"1g.10gb": 7, "1g.10gb+me": 1, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1,
                  "7g.80gb": 1},
    "A30": {"1g.6gb": 4, "1g.6gb+me": 1, "2g.12gb": 2, "2g.12gb+me": 1, "4g.24gb": 1},
    "H200": {"1g.18gb": 7, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1},
}
MIG_PROFILES["H100-80GB"] = MIG_PROFILES["A100-80GB"]

MIG_STRATEGIES = ("single", "mixed")


def profiles_for(model: str) -> dict[str, int]:
    return MIG_PROFILES.get(model, {})


def max_instances(model: str, profile: str) -> int:
    """Instances of ``profile`` one GPU of ``model`` holds; 0 when the profile does not exist for the model."""
    return MIG_PROFILES.get(model, {}).get(profile, 0)


def mig_config_label_value(profile: str) -> str:
    """Value of the ``nvidia.com/mig.config`` node label that partitions every GPU into ``profile``."""
    return f"all-{profile}"
