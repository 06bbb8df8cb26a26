"""NVIDIA MIG profiles per GPU model: how many instances of one profile a GPU holds, and where each profile can
be placed, so that a per-GPU layout (several profiles on one GPU) can be checked before mig-manager applies it.

Sources:
* single-profile counts: NVIDIA GPU Operator ``default-mig-parted-config`` (v25.10.1), its ``all-<profile>``
  configs;
* placements: the GPU instance placements NVML reports (``nvidia-smi mig -lgipp``; NVML
  ``nvmlDeviceGetGpuInstancePossiblePlacements``), as listed in the NVIDIA MIG User Guide ("Supported MIG
  Profiles", docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html) and reproduced for the
  A100 and A30 in NVIDIA/go-nvml ``pkg/nvml/mock/gpus/a100.go`` and ``a30.go``. A placement is a start slot and a
  size in memory slices; GPU instances may not overlap (NVML refuses to create one that does).
* the H20, H800 and A800: the same ``default-mig-parted-config`` groups the H800-80GB and A800-80GB with the
  H100-80GB and A100-80GB ("H100-80GB, H800-80GB, A100-80GB, A800-80GB", one device-filter list) and the A800-40GB
  with the A100-40GB, so they take those profiles and placements; the H20 (device 0x2329, listed with the
  H100-96GB under ``all-balanced``) takes the 96 GB Hopper profiles 1g.12gb x7, 1g.12gb+me x1, 1g.24gb x4,
  2g.24gb x3, 3g.48gb x2, 4g.48gb x1, 7g.96gb x1, which the GPU Operator's vGPU device manager config (v26.7.0
  ``assets/state-vgpu-device-manager/0500_configmap.yaml``, the MIG-backed H20-1-12C ... H20-7-96C types) lists
  for the H20 with the same counts; the MIG User Guide "Supported GPUs" table gives the H20 96GB and 7
  instances;
* the config file format: NVIDIA/mig-parted ``api/spec/v1/spec.go`` (``version: v1``, ``mig-configs`` of
  ``devices`` / ``mig-enabled`` / ``mig-devices`` entries).
"""
from __future__ import annotations

from dataclasses import dataclass

MIG_PROFILES: dict[str, dict[str, int]] = {
    "A100-40GB": {"1g.5gb": 7, "1g.5gb+me": 1, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2, "4g.20gb": 1,
                  "7g.40gb": 1},
    "A100-80GB": {"1g.10gb": 7, "1g.10gb+me": 1, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2, "4g.40gb": 1,
                  "7g.80gb": 1},
    "A30": {"1g.6gb": 4, "1g.6gb+me": 1, "2g.12gb": 2, "2g.12gb+me": 1, "4g.24gb": 1},
    "H200": {"1g.18gb": 7, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2, "4g.71gb": 1, "7g.141gb": 1},
    "H20": {"1g.12gb": 7, "1g.12gb+me": 1, "1g.24gb": 4, "2g.24gb": 3, "3g.48gb": 2, "4g.48gb": 1, "7g.96gb": 1},
}
for _base, _model in (("A100-80GB", "H100-80GB"), ("A100-80GB", "H800-80GB"),
                                 ("A100-80GB", "A800-80GB"), ("A100-40GB", "A800-40GB")):
    MIG_PROFILES[_model] = MIG_PROFILES[_base]

MIG_STRATEGIES = ("single", "mixed")

WHOLE_GPU = "whole"
"""What a workload names (``gpu.migProfile``) to get a MIG-disabled GPU of a per-GPU layout (``nvidia.com/gpu``)."""


@dataclass(frozen=True)
class Placement:
    size: int
    """Memory slices the GPU instance occupies."""
    starts: tuple[int, ...]
    """Memory slices it may start at."""


# The eight-memory-slice GPUs (A100, A800, H100, H800, H20, H200) share one placement table by profile shape: the
# smallest 1g profile (and its +me variant) fits any of slots 0-6, the 1g profile with twice the memory takes two
# slices at an even slot, 2g two slices at 0, 2 or 4, 3g four slices at 0 or 4, 4g four slices at 0, and 7g all
# eight.
def _eight_slices(one: str, one_double: str, two: str, three: str, four: str, seven: str) -> dict[str, Placement]:
    return {one: Placement(1, tuple(range(7))), f"{one}+me": Placement(1, tuple(range(7))),
            one_double: Placement(2, (0, 2, 4, 6)), two: Placement(2, (0, 2, 4)), three: Placement(4, (0, 4)),
            four: Placement(4, (0,)), seven: Placement(8, (0,))}


PLACEMENTS: dict[str, dict[str, Placement]] = {
    "A100-40GB": _eight_slices("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    "A100-80GB": _eight_slices("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "H200": {p: v for p, v in _eight_slices("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb",
                                            "7g.141gb").items() if p in MIG_PROFILES["H200"]},
    "H20": _eight_slices("1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),
    # the A30 has four memory slices
    "A30": {"1g.6gb": Placement(1, (0, 1, 2, 3)), "1g.6gb+me": Placement(1, (0, 1, 2, 3)),
            "2g.12gb": Placement(2, (0, 2)), "2g.12gb+me": Placement(2, (0, 2)), "4g.24gb": Placement(4, (0,))},
}
for _base, _model in (("A100-80GB", "H100-80GB"), ("A100-80GB", "H800-80GB"), ("A100-80GB", "A800-80GB"),
                      ("A100-40GB", "A800-40GB")):
    PLACEMENTS[_model] = PLACEMENTS[_base]


def profiles_for(model: str) -> dict[str, int]:
    return MIG_PROFILES.get(model, {})


def max_instances(model: str, profile: str) -> int:
    """Instances of ``profile`` one GPU of ``model`` holds; 0 when the profile does not exist for the model."""
    return MIG_PROFILES.get(model, {}).get(profile, 0)


def mig_config_label_value(profile: str) -> str:
    """Value of the ``nvidia.com/mig.config`` node label that partitions every GPU into ``profile``."""
    return f"all-{profile}"


def fits_one_gpu(model: str, devices: dict[str, int]) -> bool:
    """Whether one GPU of ``model`` can hold all of ``devices`` (profile -> count) at once: every instance needs a
    free placement, the ``+me`` profiles at most one each (the media engines exist once), as NVML decides."""
    table = PLACEMENTS.get(model, {})
    if any(p not in table or n < 0 for p, n in devices.items()):
        return False
    if any(n > max_instances(model, p) for p, n in devices.items()):
        return False
    # largest first, then a depth-first search over placements: at most seven instances, so this is tiny
    todo = sorted((p for p, n in devices.items() for _ in range(n)), key=lambda p: -table[p].size)
    slices = max(start + v.size for v in table.values() for start in v.starts)

    def place(i: int, used: int) -> bool:
        if i == len(todo):
            return True
        spec = table[todo[i]]
        for start in spec.starts:
            mask = ((1 << spec.size) - 1) << start
            if start + spec.size <= slices and not used & mask and place(i + 1, used | mask):
                return True
        return False

    return place(0, 0)


def example_layouts(model: str) -> list[str]:
    """Per-GPU combinations of ``model`` that fit (for error messages): its smallest profile filling the GPU, and
    its 4g and 3g profiles side by side."""
    profiles = [p for p in profiles_for(model) if "+" not in p]
    out = [f"{profiles[0]} x {max_instances(model, profiles[0])}"] if profiles else []
    three = next((p for p in profiles if p.startswith("3g.")), None)
    four = next((p for p in profiles if p.startswith("4g.")), None)
    if three and four and fits_one_gpu(model, {four: 1, three: 1}):
        out.append(f"{four} x 1 + {three} x 1")
    return out


def mig_parted_entry(devices: list[int] | str, mig_devices: dict[str, int] | None) -> dict:
    """One entry of a mig-parted config: MIG disabled (the GPU stays whole) when ``mig_devices`` is empty."""
    if not mig_devices:
        return {"devices": devices, "mig-enabled": False}
    return {"devices": devices, "mig-enabled": True, "mig-devices": dict(mig_devices)}


def profile_memory_gib(profile: str) -> float | None:
    """GPU memory of one instance of ``profile`` as its name states it (``3g.20gb`` -> 20), None for a name without
    one. NVIDIA names profiles by the memory of their slices in GB, rounded up (an A100-40GB ``1g.5gb`` instance
    shows 4864 MiB in ``nvidia-smi``), so the figure read as GiB is an upper bound of what the instance holds: a
    model larger than it cannot load there."""
    import re

    m = re.search(r"\.(\d+)gb", profile)
    return float(m.group(1)) if m else None
