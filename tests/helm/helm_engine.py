"""The render tests' name for the product's Helm engine wrapper (gpuplatform/chart_render.py)."""
from gpuplatform.chart_render import (CHARTS_ENV, HELM_PYTHON_SDK, ChartsDir, EngineVersionError,  # noqa: F401
                                      builtin_api_versions, chart_crds, charts_dir, crd_api_versions, load_chart,
                                      objects, pull_hint, render, split_manifest, to_json)
