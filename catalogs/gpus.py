"""GPU models and the Alibaba Cloud ECS GPU instance types ACK can run.

Sources: Alibaba ECS GPU instance family docs and naming rules; the ACK MIG guide ("only ecs.ebmgn7.* bare
metal supports MIG; ecs.gn7.* passthrough does not"); the ECS doc stating gn7s (A30) supports MIG.
``reported_mib`` is the memory the driver reports for one card (nvidia-smi total). The gpushare device plugin
advertises ``floor(reported_mib / 1024)`` GiB of ``aliyun.com/gpu-mem`` per card, which is why a 16 GB T4
reports 14 GiB (the cGPU article shows 15079MiB and "14 GiB" on the node).

A model whose ``reported_mib`` no citable nvidia-smi output gives is catalogued with ``None``: nothing guesses it.
Whatever needs the figure refuses such a model with an error naming it (cGPU sizing, simulated GPUs:
:meth:`GpuModel.require_reported_mib`); only the offline simulator lets the datasheet size stand in
(:meth:`GpuModel.simulated_mib`), and says so.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass


class ReportedMemoryUnknown(ValueError):
    """A model whose per-card memory as the driver reports it is not in the catalog (``reported_mib`` is None)."""


@dataclass(frozen=True)
class GpuModel:
    name: str
    memory_gb: int
    """Memory per card as NVIDIA's datasheets and the MIG User Guide state it (GB)."""
    reported_mib: int | None
    """Total memory of one card as ``nvidia-smi`` prints it (MiB); None when no real output was found to cite."""
    mig_capable: bool
    architecture: str
    product: str | None = None
    """The NVML product name (``nvidia-smi``'s "Name"), from which GPU Feature Discovery derives the
    ``nvidia.com/gpu.product`` label (:func:`gpu_product_label`); None when no real output was found."""

    def require_reported_mib(self, purpose: str) -> int:
        """``reported_mib``, or a clear refusal naming the model and what needed the figure."""
        if self.reported_mib is None:
            raise ReportedMemoryUnknown(reported_memory_unknown(self.name, purpose))
        return self.reported_mib

    @property
    def reported_gib(self) -> int:
        """Whole GiB per card as the gpushare device plugin reports them (refused when unknown)."""
        return self.require_reported_mib("cGPU memory (aliyun.com/gpu-mem)") // 1024

    def simulated_mib(self) -> int:
        """Memory of one card in the offline simulator: ``reported_mib``, or, when unknown, the datasheet size in
        MiB (``memory_gb`` x 1024), which only scales the simulated memory series of a replica."""
        return self.reported_mib if self.reported_mib is not None else self.memory_gb * 1024


def reported_memory_unknown(model: str, purpose: str) -> str:
    return (f"{model!r} has no sourced per-card memory as nvidia-smi reports it (catalogs/gpus.py reported_mib), "
            f"which {purpose} needs; the catalog does not guess it")


def gpu_product_label(model: GpuModel) -> str:
    """Value of the ``nvidia.com/gpu.product`` node label for ``model``: the NVML product name with every character
    outside ``[A-Za-z0-9-_. ]`` dropped and runs of blanks joined by ``-``, as GPU Feature Discovery writes it
    (NVIDIA/k8s-device-plugin ``internal/lm/resource.go``, ``getProductName`` and ``sanitise``). Models without a
    sourced product name (and ``customGpu`` cards) fall back to the catalog name."""
    if model.product is None:
        return model.name
    return "-".join(re.sub(r"[^A-Za-z0-9\-_. ]", "", model.product).split())


# Memory, MIG and architecture of the models added last (L4, H20, H800, A800): NVIDIA MIG User Guide, "Supported
# GPUs" (docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-gpus.html: the H20 is Hopper, 96GB, 7
# instances; the L4 is not listed, so it has no MIG); NVIDIA GPU Operator v25.10.1
# assets/state-mig-manager/0400_configmap.yaml (its MIG configs group "H100-80GB, H800-80GB, A100-80GB,
# A800-80GB" and "A100-40GB, A800-40GB", so the H800 and A800 run MIG like the H100 and A100 they derive from).
# reported_mib and product, from real nvidia-smi output:
#   L4         23034 MiB, "NVIDIA L4": modal-labs/modal-client pull request #2797 (the nvidia-smi totals of the
#              provider's fleet) and the nvidia-smi table in docker/docs' Docker Cloud quickstart
#   H20        97871 MiB, "NVIDIA H20": guevara/read-it-later issue #11550 (a copy of the article "GPU
#              进阶笔记（一）", section 5.1, nvidia-smi of an 8 x H20 server)
#   A800-80GB  81251 MiB, "NVIDIA A800-SXM4-80GB": vllm-project/vllm issue #636 (8 x A800-SXM, driver 470.161.03),
#              the A100-SXM4-80GB's figure on that driver; dexmal/dexbotic issue #41 shows 81920 MiB on a newer
#              driver. The total follows the driver, so the catalog keeps the smaller: cGPU never counts a GiB
#              (79, not 80) a card may not report
#   H800-80GB, A800-40GB: no citable output found, so reported_mib and product stay None (see the module doc)
# Architecture: the family GPU Feature Discovery derives from the compute capability (NVIDIA/k8s-device-plugin
# internal/lm/resource.go getArchFamily: 8.0 ampere, 8.9 ada, 9.0 hopper); the MIG User Guide table gives 9.0 for
# the H20, and an L4's CUDA device query reports 8.9. The products of the models before the L4 are the NVML names
# behind the gpuProduct labels the simulated pools already used.
GPU_MODELS: dict[str, GpuModel] = {
    m.name: m
    for m in (
        GpuModel("T4", 16, 15079, False, "turing", "Tesla T4"),
        GpuModel("V100-16GB", 16, 16160, False, "volta", "Tesla V100-SXM2-16GB"),
        GpuModel("V100-32GB", 32, 32510, False, "volta", "Tesla V100-SXM2-32GB"),
        GpuModel("A10", 24, 22731, False, "ampere", "NVIDIA A10"),
        GpuModel("A30", 24, 24258, True, "ampere", "NVIDIA A30"),
        GpuModel("A100-40GB", 40, 40536, True, "ampere", "NVIDIA A100-SXM4-40GB"),
        GpuModel("A100-80GB", 80, 81251, True, "ampere", "NVIDIA A100-SXM4-80GB"),
        GpuModel("H100-80GB", 80, 81559, True, "hopper", "NVIDIA H100 80GB HBM3"),
        GpuModel("H200", 141, 143771, True, "hopper", "NVIDIA H200"),
        GpuModel("L20", 48, 46068, False, "ada", "NVIDIA L20"),
        GpuModel("L4", 24, 23034, False, "ada", "NVIDIA L4"),
        GpuModel("H20", 96, 97871, True, "hopper", "NVIDIA H20"),
        GpuModel("H800-80GB", 80, None, True, "hopper"),
        GpuModel("A800-80GB", 80, 81251, True, "ampere", "NVIDIA A800-SXM4-80GB"),
        GpuModel("A800-40GB", 40, None, True, "ampere"),
    )
}


def sourced_reported_memory() -> list[str]:
    """Models whose ``reported_mib`` is known: what cGPU pools and simulated GPUs may run."""
    return [n for n, m in GPU_MODELS.items() if m.reported_mib is not None]


_PRODUCT_PREFIXES = ("NVIDIA-", "TESLA-")
_PRODUCT_SUFFIX = re.compile(r"-(MIG-.*|SHARED)$")


def product_match(model: GpuModel, label: str) -> str:
    """How a node's product label (``nvidia.com/gpu.product`` or ``aliyun.accelerator/nvidia_name``) compares with a
    catalog model: ``match``, ``variant`` (the same GPU, but the label does not show the catalog's memory size) or
    ``mismatch`` (another GPU, or the same GPU with another memory size). The label is the NVML name with blanks as ``-``, maybe behind ``NVIDIA-``/``Tesla-`` and with
    GPU Feature Discovery's ``-MIG-<profile>`` (single strategy) or ``-SHARED`` (time-slicing) suffix; the form
    factor is not the catalog's concern (``NVIDIA-A100-PCIE-40GB`` and ``NVIDIA-A100-SXM4-40GB`` are both an
    A100-40GB)."""
    text = _PRODUCT_SUFFIX.sub("", label.strip().upper())
    for prefix in _PRODUCT_PREFIXES:
        text = text.removeprefix(prefix)
    parts = text.split("-")
    base, _, size = model.name.upper().partition("-")
    if parts[0] != base:
        return "mismatch"
    if not size or size in parts:
        return "match"
    # a label naming another memory size is another card (an A100-80GB is not the catalog's A100-40GB)
    return "mismatch" if any(re.fullmatch(r"\d+GB", part) for part in parts) else "variant"


def label_memory_mib(value: str) -> int | None:
    """One card's memory from a memory label: a bare MiB count (GPU Feature Discovery) or ``<n>MiB`` (ACK)."""
    m = re.fullmatch(r"\s*(\d+)\s*(MiB)?\s*", value or "")
    return int(m.group(1)) if m else None


CUSTOM_ARCHITECTURE = "described by the stack"
"""Architecture of a ``customGpu``: the stack states its memory and sharing modes, nothing more is known."""


@dataclass(frozen=True)
class InstanceType:
    name: str
    family: str
    gpu_model: str
    gpus: int
    vcpus: int
    memory_gib: int
    """Instance memory (GiB) as the ECS instance family tables list it; the kubelet's reservations come off it."""
    bare_metal: bool = False
    mig_supported: bool = False
    """Whether the *instance family* can run MIG on ACK (passthrough families cannot, even with an A100)."""

    @property
    def gpu(self) -> GpuModel:
        return GPU_MODELS[self.gpu_model]


def _family(family: str, model: str, sizes: list[tuple[str, int, int, int]], *, bare_metal: bool = False,
            mig: bool = False) -> list[InstanceType]:
    return [InstanceType(f"ecs.{family}{suffix}", f"ecs.{family}", model, gpus, vcpus, memory_gib, bare_metal, mig)
            for suffix, gpus, vcpus, memory_gib in sizes]


INSTANCE_TYPES: dict[str, InstanceType] = {
    t.name: t
    for t in (
        *_family("gn6i", "T4", [("-c4g1.xlarge", 1, 4, 15), ("-c8g1.2xlarge", 1, 8, 31),
                                ("-c16g1.4xlarge", 1, 16, 62), ("-c24g1.6xlarge", 1, 24, 93),
                                ("-c24g1.12xlarge", 2, 48, 186), ("-c24g1.24xlarge", 4, 96, 372)]),
        *_family("gn6v", "V100-16GB", [("-c8g1.2xlarge", 1, 8, 32), ("-c8g1.8xlarge", 4, 32, 128),
                                       ("-c8g1.16xlarge", 8, 64, 256), ("-c10g1.20xlarge", 8, 82, 336)]),
        *_family("gn6e", "V100-32GB", [("-c12g1.3xlarge", 1, 12, 92), ("-c12g1.12xlarge", 4, 48, 368),
                                       ("-c12g1.24xlarge", 8, 96, 736)]),
        *_family("gn7i", "A10", [("-c8g1.2xlarge", 1, 8, 30), ("-c16g1.4xlarge", 1, 16, 60),
                                 ("-c32g1.8xlarge", 1, 32, 188), ("-c32g1.16xlarge", 2, 64, 376),
                                 ("-2x.8xlarge", 2, 32, 128), ("-c32g1.32xlarge", 4, 128, 752),
                                 ("-4x.8xlarge", 4, 32, 128), ("-4x.16xlarge", 4, 64, 256),
                                 ("-8x.16xlarge", 8, 64, 256), ("-8x.32xlarge", 8, 128, 512)]),
        *_family("gn7s", "A30", [("-c8g1.2xlarge", 1, 8, 60), ("-c16g1.4xlarge", 1, 16, 120),
                                 ("-c32g1.8xlarge", 1, 32, 250), ("-c32g1.16xlarge", 2, 64, 500),
                                 ("-c32g1.32xlarge", 4, 128, 1000)], mig=True),
        *_family("gn7", "A100-40GB", [("-c12g1.3xlarge", 1, 12, 94), ("-c13g1.13xlarge", 4, 52, 378),
                                      ("-c13g1.26xlarge", 8, 104, 756)]),
        *_family("gn7e", "A100-80GB", [("-c16g1.4xlarge", 1, 16, 125), ("-c16g1.8xlarge", 2, 32, 250),
                                       ("-c16g1.16xlarge", 4, 64, 500), ("-c16g1.32xlarge", 8, 128, 1000)]),
        *_family("gn8is", "L20", [(".2xlarge", 1, 8, 64), (".4xlarge", 1, 16, 128), ("-2x.8xlarge", 2, 32, 256),
                                  ("-4x.16xlarge", 4, 64, 512), ("-8x.32xlarge", 8, 128, 1024)]),
        *_family("ebmgn7", "A100-40GB", [(".26xlarge", 8, 104, 768)], bare_metal=True, mig=True),
        *_family("ebmgn7e", "A100-80GB", [(".32xlarge", 8, 128, 1024)], bare_metal=True),
    )
}


@dataclass(frozen=True)
class Provisioning:
    """Seconds from a cluster-autoscaler scale-up request until a new node of the family advertises its GPUs."""
    seconds: int
    basis: str
    estimate: bool = True


# No Alibaba document states GPU node start-up times, so these are ESTIMATES, to be replaced by measurements:
# ECS instance creation and boot, ACK node initialisation (join, labels) and the GPU device plugin advertising
# the GPUs. Bare metal (ebm*) boots firmware and all GPUs first; MIG pools also wait for mig-manager to apply
# nvidia.com/mig.config (the GPU Operator's "pending -> success" transition) before instances are advertised.
_VM = Provisioning(180, "estimate: ECS GPU VM create + boot + ACK node init + device plugin")
_BARE_METAL = Provisioning(600, "estimate: ECS bare metal create + boot + ACK node init + device plugin")
NODE_PROVISIONING: dict[str, Provisioning] = {
    **{f: _VM for f in ("ecs.gn6i", "ecs.gn6v", "ecs.gn6e", "ecs.gn7i", "ecs.gn7s", "ecs.gn7", "ecs.gn7e",
                        "ecs.gn8is")},
    "ecs.ebmgn7": _BARE_METAL,
    "ecs.ebmgn7e": _BARE_METAL,
}
MIG_RECONFIGURE = Provisioning(120, "estimate: mig-manager applies the MIG profile and restarts the GPU operands")
GENERIC_NODE = Provisioning(180, "estimate: a GPU node of a cluster not created by this package")


def provisioning(family: str | None) -> Provisioning:
    return NODE_PROVISIONING.get(family or "", GENERIC_NODE)


def instance_type(name: str) -> InstanceType | None:
    return INSTANCE_TYPES.get(name)


def gpu_model(name: str) -> GpuModel | None:
    return GPU_MODELS.get(name)


def close_matches(value: str, choices, n: int = 3) -> list[str]:
    """Close spellings of ``value`` among ``choices`` (used in every 'unknown X' error)."""
    return difflib.get_close_matches(value, list(choices), n=n, cutoff=0.6)


def mig_instance_families() -> list[str]:
    return sorted({t.family for t in INSTANCE_TYPES.values() if t.mig_supported})
