"""Images the package itself runs (not a chart's, not a workload's), pinned by tag and digest.

* ``PAUSE_IMAGE``: registry.k8s.io/pause 3.10 (warm-capacity placeholders, the pre-puller's holder), the image
  kubelets use for a pod's sandbox; it only sleeps until it is stopped (kubernetes/kubernetes
  ``build/pause/linux/pause.c``). Its multi-arch index digest.
* ``BUSYBOX_IMAGE``: Docker Official Image busybox 1.36.1, multi-arch index digest; the official builds link busybox
  statically (docker-library/busybox ``Dockerfile.builder``: ``CONFIG_STATIC=y``), so the binary runs in any Linux
  image of the same architecture, with or without a shell or a C library.
"""
from __future__ import annotations

PAUSE_IMAGE = ("registry.k8s.io/pause:3.10"
               "@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a")
PAUSE_IMAGE_USER = 65535
"""``USER 65535:65535`` of the pause image (kubernetes/kubernetes build/pause/Dockerfile): placeholders run as it."""
BUSYBOX_IMAGE = ("docker.io/library/busybox:1.36.1"
                 "@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662")
