"""What an image reference tells the checks about the server release it runs.

The server checks read the release from the image tag (catalogs/metrics.py ``image_version``): a metric series that
appeared or was renamed in some release, a cache directory a release started to write, a default that changed
between releases. ``name:tag@sha256:...`` keeps its tag, and so every one of those checks. ``name@sha256:...`` names
no release at all: those checks then take the newest release, which is right only for a recent image. ``plan``
says so, naming the checks that run on that assumption, so the pin does not silently cost them.
"""
from __future__ import annotations

from gpuplatform.catalogs.metrics import METRICS, pins_digest_only
from gpuplatform.catalogs.server_cli import SERVER_CLIS
from gpuplatform.catalogs.server_profiles import PROFILES
from gpuplatform.components.config import PlatformConfig, Workload


def version_dependent_checks(w: Workload) -> list[tuple[str, str]]:
    """(config path under the workload, what is judged) of each check of ``w`` whose verdict depends on its
    server's release."""
    server = w.server
    if server is None:
        return []
    out = []
    for k, target in enumerate(w.autoscaling.metrics):
        metric = METRICS.get(target.metric)
        src = metric.source(server) if metric is not None and metric.category == "app" else None
        if src is not None and src.since:
            out.append((f"autoscaling.metrics[{k}]", f"{target.metric}, exported from {server} {src.since} on"))
    spec = SERVER_CLIS.get(server)
    out += [("env", f"a writable path for its {cache.what}, written from {server} {cache.since} on")
            for cache in (spec.caches if spec else ()) if cache.since]
    profile = PROFILES.get(server)
    out += list(profile.release_dependent if profile else ())
    return out


def digest_notes(cfg: PlatformConfig) -> list[str]:
    """One note per workload whose image is pinned by a digest without a tag and whose server has checks that
    depend on its release."""
    notes = []
    for i, w in enumerate(cfg.workloads):
        if not pins_digest_only(w.image):
            continue
        checks = "; ".join(f"workloads[{i}].{path} ({what})" for path, what in version_dependent_checks(w))
        if checks:
            notes.append(f"NOTE: workloads[{i}].image {w.image!r} pins a digest without a tag, so nothing tells which "
                         f"{w.server} release it runs; these checks take the newest release instead: "
                         f"{checks}. To keep them, write the tag the digest was built from: "
                         "name:tag@sha256:...")
    return notes
