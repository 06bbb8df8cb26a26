"""``gpuplatform simulate``: replay a load trace through a stack's metric pipeline, its HPA and its GPU capacity."""
