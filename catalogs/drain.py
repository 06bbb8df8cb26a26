"""How a serving pod stops without losing a request: what each inference server does on SIGTERM, how long the
cluster keeps routing to a pod it is terminating, and the Kubernetes fields that order the two.

Read by the workload manifests (the ``preStop`` wait, the server's drain flag and ``terminationGracePeriodSeconds``
of every serving pod: components/drain.py), by validation, by the policy pack (``serving-pod-drain``, which judges
plain manifests too), by the simulator (requests in flight on a replica a scale-in removes) and by the docs
(docs/drain.md).

The termination of a pod, in order (Kubernetes "Pod Lifecycle", "Termination of Pods"): the pod is marked
terminating, which removes it from its EndpointSlices; at the same moment the kubelet runs the container's
``preStop`` hook, then sends SIGTERM; ``terminationGracePeriodSeconds`` (default 30) counts from the start, over
the hook and the server's exit alike, and ends in SIGKILL. The endpoint removal and the hook run concurrently, so
without a hook the server receives SIGTERM while kube-proxy and the Ingress controller still send it new requests.
Hence the chain every serving pod must satisfy::

    terminationGracePeriodSeconds >= preStop wait + the server's drain

(vllm-project/vllm PR #43208, the drain section of its Kubernetes guide; KServe v0.19, kserve PRs #5485/#5496:
``preStop`` sleep 15 s, then ``--shutdown-timeout`` = grace - 15, the grace raised from 30 s to 60 s; llm-d PR
#1653: 30 s/60 s for short chat, up to 300 s/330 s for 2k-token DeepSeek-R1 answers, sized from measured
latencies).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from gpuplatform.catalogs.metrics import image_version, version_text  # noqa: F401  (policies read it here)
from gpuplatform.catalogs.server_base import ServerDrain  # noqa: F401  (read by components and policies)
from gpuplatform.catalogs.server_cli import SERVER_CLIS
from gpuplatform.catalogs.server_profiles import PROFILES
from gpuplatform.catalogs.system_components import image_repository

KUBERNETES_DEFAULT_GRACE_SECONDS = 30
"""``terminationGracePeriodSeconds`` when a pod spec sets none (Kubernetes API, PodSpec)."""

EXIT_MARGIN_SECONDS = 5
"""Seconds the grace period keeps over the preStop wait and the server's drain, for the server's own exit once its
last request is done (freeing the engine, closing sockets): KServe's and llm-d's figures keep 0 to 30 s; vLLM's
guide asks for at least the sum (PR #43208, whose review asks for a strict margin). A choice, not a measurement."""


# ---------------------------------------------------------------------------------------------- the routing side
@dataclass(frozen=True)
class Propagation:
    """How long after a pod is marked terminating its callers may still send it a new request."""
    who: str
    seconds: int
    basis: str


KUBE_PROXY = Propagation(
    "kube-proxy (Service)", 5,
    "the EndpointSlice controller drops the terminating pod's endpoint from ready, kube-proxy rewrites its rules "
    "at most once per --iptables-min-sync-period (default 1 s, kube-proxy reference) on every node: a few "
    "seconds on a loaded control plane; an ESTIMATE with margin")
INGRESS_NGINX = Propagation(
    "ingress-nginx (Ingress)", 15,
    "ingress-nginx reads the EndpointSlices and updates its upstreams at most --sync-rate-limit times a second "
    "(default 0.3: one sync per 3.3 s, kubernetes/ingress-nginx cmd/nginx/flags.go), after kube-proxy's path; "
    "15 s is the wait KServe v0.19 gives its endpoint picker (kserve PR #5485: an exec of /bin/sleep 15, grace "
    "raised from 30 s to 60 s) and covers several syncs")
ALB = Propagation(
    "ALB Ingress controller (Ingress)", 15,
    "the ALB controller removes the backend from its server group through the ALB API; no published figure was "
    "found: KServe's 15 s is taken (UNVERIFIED for ALB), state drain.preStopSeconds from a measurement")

PROPAGATION = {"service": KUBE_PROXY, "nginx": INGRESS_NGINX, "alb": ALB}


def propagation(ingress_class: Optional[str]) -> Propagation:
    """What a pod's callers are: its Ingress controller when it has an Ingress, else kube-proxy."""
    return PROPAGATION.get(ingress_class or "service", KUBE_PROXY)


# ---------------------------------------------------------------------------------------------- preStop
PRESTOP_SLEEP_ACTION_SINCE = (1, 30)
"""``lifecycle.preStop.sleep`` (KEP-3960 "Pod lifecycle sleep action", feature gate PodLifecycleSleepAction): alpha
in 1.29 (off by default), beta and on by default from 1.30, GA in 1.34 (kubernetes/enhancements issue #3960,
kubernetes.io blog "Kubernetes v1.33: Updates to Container Lifecycle"). The kubelet sleeps itself: no binary in
the image, no shell, no privilege. Before 1.30 the wait is an ``exec`` of ``sleep``, which needs the binary in the
image (the official vLLM, SGLang, TGI and Triton images are Ubuntu based and have ``/bin/sleep``); an exec hook
runs as the container's own user with its own security context, so restricted Pod Security holds either way."""
PRESTOP_SLEEP_ZERO_SINCE = (1, 33)
"""A sleep of 0 s is accepted from 1.33 on (KEP-4818, PodLifecycleSleepActionAllowZero beta); the package renders
no hook for a zero wait rather than rely on it."""


def native_sleep(kubernetes_version: Optional[tuple[int, int]]) -> bool:
    """Whether the cluster's API server accepts (and its kubelets run) ``preStop.sleep`` with default gates."""
    return kubernetes_version is None or tuple(kubernetes_version[:2]) >= PRESTOP_SLEEP_ACTION_SINCE


def pre_stop_hook(seconds: int, kubernetes_version: Optional[tuple[int, int]]) -> Optional[dict]:
    """The ``lifecycle`` of a container that waits ``seconds`` before SIGTERM (None for no wait)."""
    if seconds <= 0:
        return None
    if native_sleep(kubernetes_version):
        return {"preStop": {"sleep": {"seconds": seconds}}}
    return {"preStop": {"exec": {"command": ["sleep", str(seconds)]}}}


def pre_stop_seconds(container: Mapping) -> Optional[float]:
    """The wait a container's ``preStop`` hook makes before SIGTERM: a ``sleep`` action's seconds, an exec of
    ``sleep N`` (also under ``sh -c``); 0 for a hook whose length is not known (an HTTP call, another command);
    None without a hook."""
    lifecycle = container.get("lifecycle") if isinstance(container, Mapping) else None
    hook = lifecycle.get("preStop") if isinstance(lifecycle, Mapping) else None
    if not isinstance(hook, Mapping):
        return None
    sleep = hook.get("sleep")
    if isinstance(sleep, Mapping):
        value = sleep.get("seconds")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
    exec_ = hook.get("exec")
    command = exec_.get("command") if isinstance(exec_, Mapping) else None
    words = [str(w) for w in command] if isinstance(command, Sequence) and not isinstance(command, str) else []
    if len(words) >= 3 and words[-2] in ("-c", "-ec") and words[0].rsplit("/", 1)[-1] in ("sh", "bash"):
        words = words[-1].split()
    for i, word in enumerate(words[:-1]):
        if word.rsplit("/", 1)[-1] == "sleep":
            try:
                return float(words[i + 1])
            except ValueError:
                return 0.0
    return 0.0


# ---------------------------------------------------------------------------------------------- the server side
SERVER_DRAINS: dict[str, ServerDrain] = {name: p.drain for name, p in PROFILES.items()}
"""What each server does on SIGTERM (its profile module, ``drain``)."""


def server_of_image(image: str) -> Optional[str]:
    """The server an official image runs (``vllm/vllm-openai:v0.18.0`` -> vllm), else None."""
    repository = image_repository(image)
    for name, cli in SERVER_CLIS.items():
        if any(repository == o or repository.endswith("/" + o) for o in cli.official_images):
            return name
    return None


def flag_value(words: Sequence[str], names: Sequence[str]) -> Optional[str]:
    """The value of the last ``--name value`` or ``--name=value`` among ``words`` (argparse and clap read the last
    one), None when none is given. Words of a ``sh -c`` script are split on blanks."""
    out = None
    flat: list[str] = []
    for w in words:
        flat += str(w).split() if " " in str(w) else [str(w)]
    for i, word in enumerate(flat):
        key, eq, value = word.partition("=")
        if key in names:
            out = value if eq else (flat[i + 1] if i + 1 < len(flat) else None)
    return out


def drain_seconds_given(server: str, words: Sequence[str]) -> Optional[int]:
    """The drain the command line sets for ``server`` (its drain flag), None when it sets none or the value is no
    whole number."""
    spec = SERVER_DRAINS.get(server)
    if spec is None or spec.flag is None:
        return None
    value = flag_value(words, (spec.flag,))
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def effective_drain_seconds(server: str, version: Optional[tuple[int, ...]], given: Optional[int]) -> Optional[float]:
    """Seconds the server drains on SIGTERM: 0 when it aborts, ``inf`` when it waits with no bound of its own."""
    spec = SERVER_DRAINS[server]
    if not spec.drains(version):
        return 0.0
    seconds = given if given is not None else spec.default_seconds
    if seconds is None:
        return float(spec.ceiling_seconds) if spec.ceiling_seconds is not None else math.inf
    if spec.ceiling_seconds is not None:
        seconds = min(seconds, spec.ceiling_seconds)
    return float(seconds)


# ---------------------------------------------------------------------------------------------- the longest request
DECODE_SECONDS_PER_TOKEN = 0.047
"""Mean inter-token latency of a vLLM replica under load: 47 ms/token, Qwen3-32B on H100s (llm-d PR #1653, the
benchmark its drain values are sized from). The longest request a token limit allows is taken as that many
tokens at this rate: an ESTIMATE on other GPUs and models; state ``drain.maxRequestSeconds`` from your own
latencies (e.g. the max of vllm:e2e_request_latency_seconds over a day)."""
DEFAULT_MAX_REQUEST_SECONDS = {name: p.default_max_request_seconds for name, p in PROFILES.items()}
"""The longest request assumed when the workload states none and its command line caps no tokens (each profile
module says why its figure)."""
GENERIC_MAX_REQUEST_SECONDS = 30
"""A workload that names no server: Kubernetes' own default grace period."""
TOKEN_LIMIT_FLAGS = {name: p.token_limit_flags for name, p in PROFILES.items() if p.token_limit_flags}
"""The flag that caps the tokens of one request (prompt and output), per server (its profile module)."""


def token_limit(server: Optional[str], words: Sequence[str], env: Optional[dict] = None) -> Optional[int]:
    """Tokens one request may hold as the command line caps them (``8192``; vLLM's human-readable ``8k`` = 8000 and
    ``8K`` = 8192, vllm==0.33.0 utils/argparse_utils.py human_readable_int), None when not capped there."""
    names = TOKEN_LIMIT_FLAGS.get(server or "")
    if not names:
        return None
    value = flag_value(words, names)
    if value is None and server == "tgi" and env:
        value = env.get("MAX_TOTAL_TOKENS")
    if value is None:
        return None
    text = str(value).strip()
    scale = {"k": 10 ** 3, "K": 2 ** 10}.get(text[-1:], 1)
    try:
        tokens = int(float(text[:-1] if scale > 1 else text) * scale)
    except ValueError:
        return None
    return tokens if tokens > 0 else None  # vLLM's -1/auto: the model's own limit, not known here


def seconds_for_tokens(tokens: int) -> int:
    return int(math.ceil(tokens * DECODE_SECONDS_PER_TOKEN))


def image_release(image: str) -> Optional[tuple[int, ...]]:
    return image_version(image)
