"""Images the package itself runs (not a chart's, not a workload's), pinned by tag and digest.

* ``PAUSE_IMAGE``: registry.k8s.io/pause 3.10 (warm-capacity placeholders, the pre-puller's holder), the image
  kubelets use for a pod's sandbox; it only sleeps until it is stopped (kubernetes/kubernetes
  ``build/pause/linux/pause.c``). Its multi-arch index digest.
* ``BUSYBOX_IMAGE``: Docker Official Image busybox 1.36.1, multi-arch index digest; the official builds link busybox
  statically (docker-library/busybox ``Dockerfile.builder``: ``CONFIG_STATIC=y``), so the binary runs in any Linux
  image of the same architecture, with or without a shell or a C library.
* ``PYTHON_IMAGE``: Docker Official Image python 3.13 (3.13.14) on Debian trixie, slim variant, multi-arch index
  digest as docker-library/repo-info lists it (``repos/python/remote/3.13-slim-trixie.md``, commit 2986dca3a80c);
  the warm set's waker program (components/warm_set_waker.py, standard library only) runs on it. It runs as root
  by default: the waker's pod sets its own non-root user.
"""
from __future__ import annotations

PAUSE_IMAGE = ("registry.k8s.io/pause:3.10"
               "@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a")
PAUSE_IMAGE_USER = 65535
"""``USER 65535:65535`` of the pause image (kubernetes/kubernetes build/pause/Dockerfile): placeholders run as it."""
BUSYBOX_IMAGE = ("docker.io/library/busybox:1.36.1"
                 "@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662")
PYTHON_IMAGE = ("docker.io/library/python:3.13-slim-trixie"
                "@sha256:9662417aace5ae7b8e2609cce472b72a8958e134ba372808abe9cc1a0c0125e6")

MUTABLE_TAGS = frozenset({"latest", "main", "master", "nightly", "dev", "develop", "devel", "edge", "head",
                          "canary", "unstable", "rolling", "trunk"})
"""Tags that projects move with every build of a branch, so that the same reference pulls a different image each
time: ``latest`` (the default tag), branch names (``main``, ``master``, ``trunk``, ``dev``/``develop``/``devel``,
``head``) and channels (``nightly``, ``edge``, ``canary``, ``unstable``, ``rolling``). vLLM publishes
``vllm/vllm-openai:nightly`` built from main, SGLang ``lmsysorg/sglang:dev``, Text Generation Inference
``ghcr.io/huggingface/text-generation-inference:main`` is not pinned either: a node pulling later runs other code.
Kyverno's ``disallow-latest-tag`` and Checkov ``CKV_K8S_14`` stop at ``latest``; a dated or versioned tag
(``nightly-2024-05-01``, ``v0.6.3``) is not in this set."""


def mutable_tag(tag: str) -> bool:
    """Whether an image tag is one that moves (:data:`MUTABLE_TAGS`, case-insensitive)."""
    return tag.lower() in MUTABLE_TAGS
