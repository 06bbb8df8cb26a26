"""JSON Schema of a stack file (``stacks/Pulumi.<stack>.yaml``), generated from the typed config."""
from gpuplatform.catalogs.gpus import GPU_MODELS
from gpuplatform.catalogs.metrics import METRICS
from gpuplatform.components.config import PROJECT, PlatformConfig


def stack_file_schema() -> dict:
    model = PlatformConfig.model_json_schema(by_alias=True)
    defs = model.pop("$defs", {})
    target = defs.get("MetricTarget", {}).get("properties", {}).get("metric")
    if target is not None:
        target["enum"] = sorted(METRICS)  # editors complete and check metric names from the catalog
        target["description"] = (target.get("description", "") + " Units of the targets: " + "; ".join(
            f"{name}: {m.unit_info.description}" for name, m in sorted(METRICS.items())) + ".").strip()
    gpu_model = defs.get("NodePool", {}).get("properties", {}).get("gpuModel")
    if gpu_model is not None:
        # not an enum: a customGpu pool may repeat its own name here
        gpu_model["examples"] = list(GPU_MODELS)
        gpu_model["description"] = (gpu_model.get("description", "") + " Catalog models: " + ", ".join(
            f"{n} ({m.memory_gb} GB{', MIG' if m.mig_capable else ''})" for n, m in GPU_MODELS.items()) + ".").strip()
    config_props = {f"{PROJECT}:{key}": prop for key, prop in model["properties"].items()}
    required = [f"{PROJECT}:{key}" for key in model.get("required", [])]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gpu-platform stack file",
        "type": "object",
        "properties": {
            "config": {"type": "object", "properties": config_props, "required": required,
                       "additionalProperties": True},
            "secretsprovider": {"type": "string"}, "encryptionsalt": {"type": "string"},
            "encryptedkey": {"type": "string"}, "environment": {},
        },
        "required": ["config"],
        "$defs": defs,
    }
