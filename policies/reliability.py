"""Reliability: probes, resources, pinned images and charts, disruption budgets, spread, an available metrics
adapter, protected production infrastructure, and API versions the cluster still serves."""
from __future__ import annotations

import math
import re
from typing import Mapping, Optional

from gpuplatform.catalogs import drain
from gpuplatform.catalogs.images import mutable_tag
from gpuplatform.catalogs.kubernetes import (HOST_NETWORK_DNS_POLICY, INTRODUCED_APIS, PEER_ADDRESS_ENV,
                                             PEER_ADDRESS_FLAGS, REMOVED_APIS, served_by)
from gpuplatform.catalogs.system_components import PAUSE_IMAGES, matches
from gpuplatform.policies import k8s
from gpuplatform.policies.registry import ADVISORY, HIGH, MEDIUM, prop, resource_policy, stack_policy
from gpuplatform.policies.stack import ACK_CLUSTER_TYPES, ACK_NODE_POOL_TYPE, PROMETHEUS_ADAPTER_CHART, RELEASE_TYPE

CATEGORY = "reliability"
PROD = prop("array", "Environments this policy applies to.", ["prod"], items={"type": "string"})
ENVIRONMENT = prop("string", "Environment when no GpuPlatform is checked.", "")


@resource_policy(
    "container-probes",
    "Long-running containers need readiness and liveness probes: readiness keeps a replica that is still loading "
    "its model out of the Service (and out of the HPA's average), liveness restarts a hung server. A pause "
    "container, which only holds its pod open (an image pre-puller's), has nothing to probe.",
    category=CATEGORY, severity=MEDIUM, level=ADVISORY, hardening=True, kinds=k8s.LONG_RUNNING_KINDS,
    refs=("Kyverno require-probes", "Checkov CKV_K8S_8", "Checkov CKV_K8S_9", "Polaris readinessProbeMissing",
          "Polaris livenessProbeMissing", "kube-score pod-probes"),
    remediation="Set the workload's probes (Triton: /v2/health/ready and /v2/health/live).")
def container_probes(r, config, report):
    for c in k8s.containers(k8s.pod_spec(r.kind, r.props), init=False):
        if matches(str(k8s.get(c, "image") or ""), PAUSE_IMAGES):
            continue
        missing = [p for p in ("readinessProbe", "livenessProbe") if k8s.get(c, p) is None]
        if missing:
            report(f"{r.label} container {k8s.container_name(c)} has no {' / '.join(missing)}")


@resource_policy(
    "container-resources",
    "Containers must request CPU and memory and limit memory, so GPU nodes are not overcommitted by their "
    "neighbours and the scheduler places replicas where they fit (a CPU limit only when requireCpuLimit is set).",
    category=CATEGORY, severity=MEDIUM, level=ADVISORY, hardening=True, kinds=k8s.POD_KINDS,
    refs=("Kyverno require-pod-requests-limits", "Checkov CKV_K8S_10", "Checkov CKV_K8S_11", "Checkov CKV_K8S_12",
          "Checkov CKV_K8S_13", "kube-score container-resources", "Polaris cpuRequestsMissing"),
    config={"requireCpuLimit": prop("boolean", "Also require a CPU limit (off by default: a CPU limit throttles "
                                               "a busy server, so current practice sets CPU requests and memory "
                                               "limits only).", False)},
    remediation="Set the workload's resources (cpu, memory); the component uses them as requests and limits.")
def container_resources(r, config, report):
    for c in k8s.containers(k8s.pod_spec(r.kind, r.props)):
        missing = []
        for kind in ("requests", "limits"):
            for res in ("cpu", "memory"):
                if kind == "limits" and res == "cpu" and not config["requireCpuLimit"]:
                    continue
                # an unset request defaults to the limit (Kubernetes "Resource Management for Pods and Containers")
                if k8s.get(c, "resources", kind, res) is None and (
                        kind == "limits" or k8s.get(c, "resources", "limits", res) is None):
                    missing.append(f"{kind}.{res}")
        if missing:
            report(f"{r.label} container {k8s.container_name(c)} has no {', '.join(missing)}"
                   f"{k8s.at(r.props, c, 'resources')}")


def image_tag(image: str) -> str | None:
    """The tag of an image reference (None if untagged; digests count as pinned)."""
    if "@" in image:
        return image.rsplit("@", 1)[1]
    last = image.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else None


@resource_policy(
    "image-pinned",
    "Images must carry an explicit tag other than 'latest' and other tags that move with a branch (main, master, "
    "nightly, dev, edge...; catalogs/images.py MUTABLE_TAGS), or a digest: a moving tag changes the model server "
    "under a running HPA without a deployment.",
    category=CATEGORY, severity=HIGH, level=ADVISORY, hardening=True, kinds=k8s.POD_KINDS,
    refs=("Kyverno disallow-latest-tag", "Checkov CKV_K8S_14", "Polaris tagNotSpecified",
          "kube-score container-image-tag", "kube-linter latest-tag"),
    remediation="Use an explicit version tag, e.g. tritonserver:24.08-py3.")
def image_pinned(r, config, report):
    for c in k8s.containers(k8s.pod_spec(r.kind, r.props), own_only=True):
        image = k8s.get(c, "image")
        if not isinstance(image, str):
            report(f"{r.label} container {k8s.container_name(c)} has no image")
            continue
        tag = image_tag(image)
        if tag is None:
            report(f"{r.label} container {k8s.container_name(c)} uses {image} (no tag)")
        elif "@" not in image and mutable_tag(tag):
            moving = "latest" if tag == "latest" else f"'{tag}' is a branch tag that moves with every build"
            report(f"{r.label} container {k8s.container_name(c)} uses {image} ({moving})")


_IP = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$|^\[?[0-9a-fA-F:]+\]?$")


def _cluster_name(value: str) -> Optional[str]:
    """The host part of ``host[:port]`` when it is a name the cluster's DNS serves (a Service or pod name, a
    ``$(VAR)`` LeaderWorkerSet fills with one), not an IP address, localhost or a shell variable of the node."""
    text = str(value).strip().strip("'\"")
    if not text:
        return None
    host = text.rsplit(":", 1)[0] if text.count(":") == 1 else text
    if _IP.match(host) or host in ("localhost", "0.0.0.0") or host.startswith("${") or (
            host.startswith("$") and not host.startswith("$(")):
        return None
    return host


def cluster_names_used(spec: Mapping) -> list[tuple[str, Mapping, tuple]]:
    """(name, container, field path under the container) of the cluster DNS names a pod's containers dial: the
    first node's address given to a multi-node launcher (:data:`PEER_ADDRESS_FLAGS`, :data:`PEER_ADDRESS_ENV`), a
    ``$(LWS_LEADER_ADDRESS)`` reference, or any ``*.svc`` name."""
    out = []
    for c in k8s.containers(spec):
        for key in ("command", "args"):
            words = [str(w) for w in k8s.as_list(k8s.get(c, key))]
            consumed: set[tuple[int, int]] = set()  # (word, token) read as a flag's value
            for j, word in enumerate(words):
                tokens = word.split()
                for t, tok in enumerate(tokens):
                    if (j, t) in consumed:
                        continue
                    flag, eq, val = tok.partition("=")
                    if flag in PEER_ADDRESS_FLAGS:
                        if not eq and t + 1 < len(tokens):
                            val = tokens[t + 1]
                            consumed.add((j, t + 1))
                        elif not eq and len(tokens) == 1 and j + 1 < len(words):
                            val = words[j + 1]
                            consumed.update((j + 1, k) for k in range(len(words[j + 1].split())))
                        name = _cluster_name(val)
                        if name:
                            out.append((name, c, (key, j)))
                    elif "LWS_LEADER_ADDRESS)" in tok or ".svc" in tok:
                        out.append((tok, c, (key, j)))
        for i, e in enumerate(k8s.as_list(k8s.get(c, "env"))):
            value = k8s.get(e, "value")
            if k8s.get(e, "name") in PEER_ADDRESS_ENV and isinstance(value, str) and _cluster_name(value):
                out.append((value, c, ("env", i, "value")))
    return out


@resource_policy(
    "pod-host-network-dns",
    "A pod on the host network that dials a cluster name (the first node of a multi-node server: SGLang "
    "--dist-init-addr, torchrun --master-addr, LeaderWorkerSet's $(LWS_LEADER_ADDRESS), a *.svc name) must set "
    "dnsPolicy: ClusterFirstWithHostNet: with the default ClusterFirst it falls back to the node's resolver, which "
    "knows no Service or pod of the cluster, and the other nodes of the model never join.",
    category=CATEGORY, severity=HIGH, kinds=k8s.POD_KINDS,
    refs=("kubernetes.io/docs/concepts/services-networking/dns-pod-service (Pod's DNS policy)",
          "catalogs/kubernetes.py HOST_NETWORK_DNS_POLICY"),
    remediation="Set dnsPolicy: ClusterFirstWithHostNet next to hostNetwork: true.")
def host_network_dns(r, config, report):
    for pod in k8s.pods_of(r.kind, r.props):
        spec = pod.spec
        if spec.get("hostNetwork") is not True:
            continue
        policy = spec.get("dnsPolicy") or "ClusterFirst"
        if policy != "ClusterFirst":  # ClusterFirstWithHostNet, or Default/None chosen on purpose
            continue
        used = cluster_names_used(spec)
        if used:
            name, c, where = used[0]
            report(f"{r.label} runs on the host network with dnsPolicy {policy}, which there falls back to the node's "
                   f"resolver: container {k8s.container_name(c)} cannot resolve {name}; set dnsPolicy: "
                   f"{HOST_NETWORK_DNS_POLICY}{k8s.at(r.props, spec, 'hostNetwork')}")


@resource_policy(
    "helm-chart-pinned",
    "Helm releases must pin an exact chart version; without one every preview may install a newer chart (the "
    "prometheus-adapter chart changed its TLS and RBAC defaults between majors).",
    category=CATEGORY, severity=HIGH, level=ADVISORY, hardening=True, types=(RELEASE_TYPE,),
    refs=("pulumi.md 5.3: Release must pin version",),
    remediation="Set version from catalogs/versions.py.")
def helm_chart_pinned(r, config, report):
    version = k8s.get(r.props, "version")
    if not version:
        report(f"Release {r.name} (chart {k8s.get(r.props, 'chart')}) has no version")
    elif not re.fullmatch(r"v?\d+\.\d+\.\d+([-+][0-9A-Za-z.\-+]*)?", str(version)):
        report(f"Release {r.name} (chart {k8s.get(r.props, 'chart')}) version '{version}' is not an exact version")


@resource_policy(
    "pdb-allows-disruption",
    "A PodDisruptionBudget must allow at least one voluntary disruption: maxUnavailable 0 or minAvailable 100% "
    "blocks every node drain, including GPU driver upgrades and MIG reconfiguration.",
    category=CATEGORY, severity=HIGH, level=ADVISORY, hardening=True, kinds=("PodDisruptionBudget",),
    refs=("Polaris pdbDisruptionsIsZero", "kube-linter pdb-max-unavailable", "Gatekeeper K8sPodDisruptionBudget",
          "Kyverno pdb-maxunavailable", "pulumi disallow-zero-voluntary-disruption"),
    remediation="Use maxUnavailable: 1.")
def pdb_allows_disruption(r, config, report):
    spec = k8s.as_map(k8s.get(r.props, "spec"))
    max_u, min_a = spec.get("maxUnavailable"), spec.get("minAvailable")
    if max_u is None and min_a is None:
        report(f"{r.label} sets neither minAvailable nor maxUnavailable")
    # numbers arrive as floats (the engine's wire format), so 0 is compared as a quantity, not as text
    if max_u is not None and (k8s.quantity(max_u) == 0 or str(max_u).strip() == "0%"):
        report(f"{r.label} sets maxUnavailable {k8s.fmt_number(0) if k8s.quantity(max_u) == 0 else max_u}: no "
               f"voluntary disruption is ever allowed")
    if min_a is not None and str(min_a).strip() == "100%":
        report(f"{r.label} sets minAvailable 100%: no voluntary disruption is ever allowed")


@stack_policy(
    "pdb-below-autoscaler-min",
    "A PDB's integer minAvailable must stay below the minReplicas of the autoscaler (or the replicas) of the "
    "workload it covers; otherwise at minimum scale no pod may be evicted and drains hang.",
    category=CATEGORY, severity=MEDIUM, level=ADVISORY, hardening=True,
    refs=("Polaris pdbMinAvailableGreaterThanHPAMinReplicas", "Kyverno deployment-replicas-higher-than-pdb",
          "kube-linter pdb-min-available"),
    remediation="Use maxUnavailable: 1 instead of minAvailable.")
def pdb_below_min(view, config, report):
    for pdb in view.objects("PodDisruptionBudget"):
        min_a = k8s.get(pdb.props, "spec", "minAvailable")
        if not isinstance(min_a, (int, float)) or isinstance(min_a, bool):
            continue
        selector = k8s.get(pdb.props, "spec", "selector")
        for w in view.objects(*k8s.LONG_RUNNING_KINDS):
            if w.namespace != pdb.namespace or not k8s.selects(selector, k8s.pod_labels(w.kind, w.props)):
                continue
            scalers = view.scalers_of(w)
            floor = min((s.min_replicas for s in scalers), default=None)
            if floor is None:
                replicas = k8s.quantity(k8s.get(w.props, "spec", "replicas"))
                floor = int(replicas) if replicas is not None else 1
            if min_a >= floor:
                report(f"{pdb.label} requires {k8s.fmt_number(min_a)} available pods of {w.label}, which runs as "
                       f"few as {floor}", pdb)


@stack_policy(
    "gpu-deployment-topology-spread",
    "GPU workloads that can run more than one replica must spread them (topologySpreadConstraints or pod "
    "anti-affinity), so one node or zone failure does not take all replicas.",
    category=CATEGORY, severity=MEDIUM, level=ADVISORY, hardening=True,
    refs=("Polaris topologySpreadConstraint", "kube-score pod-topology-spread-constraints",
          "kube-linter no-anti-affinity", "Kyverno topologyspreadconstraints-policy"),
    remediation="Add topologySpreadConstraints on kubernetes.io/hostname and topology.kubernetes.io/zone.")
def gpu_topology_spread(view, config, report):
    for w in view.objects("Deployment", "StatefulSet"):
        spec = k8s.workload_pod_spec(w.kind, w.props)
        if not k8s.uses_gpu(spec):
            continue
        most = max((s.max_replicas or 1 for s in view.scalers_of(w)), default=None)
        if most is None:
            most = int(k8s.quantity(k8s.get(w.props, "spec", "replicas")) or 1)
        spread = k8s.as_list(k8s.get(spec, "topologySpreadConstraints"))
        anti = k8s.get(spec, "affinity", "podAntiAffinity")
        if most > 1 and not spread and not anti:
            report(f"{w.label} runs up to {most} GPU replicas without topology spread or anti-affinity", w)


@stack_policy(
    "adapter-high-availability",
    "In production the custom metrics adapter must run at least two replicas with a PodDisruptionBudget: when "
    "its APIService is unavailable every HPA on custom metrics stops and namespace deletion hangs.",
    category=CATEGORY, severity=HIGH, level=ADVISORY, hardening=True,
    refs=("kube-prometheus PR #1095", "kubernetes#75788"),
    config={"environments": PROD, "environment": ENVIRONMENT,
            "minReplicas": prop("integer", "Fewest adapter replicas.", 2, minimum=1)},
    remediation="monitoring.adapterReplicas >= 2 (the prod default) enables the chart's PDB too.")
def adapter_ha(view, config, report):
    if view.environment(config) not in config["environments"]:
        return
    for rel in view.releases(PROMETHEUS_ADAPTER_CHART):
        replicas = k8s.quantity(k8s.get(rel.props, "values", "replicas"))
        if (replicas or 1) < config["minReplicas"]:
            report(f"{rel.label}: {int(replicas or 1)} adapter replica(s); at least {config['minReplicas']} needed",
                   rel)
        if k8s.get(rel.props, "values", "podDisruptionBudget", "enabled") is not True:
            report(f"{rel.label}: podDisruptionBudget.enabled is not true", rel)


@stack_policy(
    "protect-prod-infrastructure",
    "In production the ACK cluster and its node pools must carry the protect option: a replacement (many node "
    "pool fields force one) would drop or double GPU capacity.",
    category=CATEGORY, severity=HIGH, level=ADVISORY, hardening=True,
    refs=("Pulumi protect option", "terraform-provider-alicloud node pool ForceNew fields"),
    config={"environments": PROD, "environment": ENVIRONMENT},
    remediation="settings.protect (default true in prod).")
def protect_prod(view, config, report):
    if view.environment(config) not in config["environments"]:
        return
    for r in view.of_type(*ACK_CLUSTER_TYPES, ACK_NODE_POOL_TYPE):
        if not r.protect:
            report(f"{r.label} is not protected", r)


@stack_policy(
    "no-removed-api-versions",
    "Objects must use API versions the target cluster serves (extensions/v1beta1, apps/v1beta1, "
    "apiregistration.k8s.io/v1beta1, … are gone from current clusters; an HPA's autoscaling/v2beta1 from 1.25 and "
    "v2beta2 from 1.26, while autoscaling/v2 needs 1.23): the copy-pasted guides use removed ones. The target "
    "version comes from the GpuPlatform component's outputs, this policy's kubernetesVersion or `check "
    "--kube-version`; without one, any removed version is reported.",
    category=CATEGORY, severity=HIGH,
    refs=("kube-score stable-version", "Kyverno check-deprecated-apis", "Gatekeeper verifydeprecatedapi",
          "pulumi disallowBetaResource"),
    config={"kubernetesVersion": prop("string", "Target cluster version (major.minor) when no GpuPlatform is "
                                      "checked.", "")},
    remediation="Use the replacement apiVersion named in the message.")
def no_removed_apis(view, config, report):
    # a stack policy because the target version is a fact of the stack; apiVersion reads the same in outputs
    version = view.kubernetes_version(config)
    for r in view.resources:
        if not r.type.startswith("kubernetes:") or "helm.sh" in r.type or not r.api_version:
            continue
        removed = REMOVED_APIS.get(r.api_version)
        if version is None:
            if removed:
                (major, minor), replacement = removed
                report(f"{r.label} uses {r.api_version}, removed in Kubernetes {major}.{minor}; use {replacement}", r)
        elif not served_by(r.api_version, version):
            why = (f"removed in {removed[0][0]}.{removed[0][1]}; use {removed[1]}" if removed else
                   f"served from {'.'.join(map(str, INTRODUCED_APIS[r.api_version]))}")
            report(f"{r.label} uses {r.api_version}, which Kubernetes {version[0]}.{version[1]} does not serve "
                   f"({why})", r)


# ---------------------------------------------------------------------------------------------- drain on termination
SERVING_POD_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController", "Pod")


def _server_of(c) -> str | None:
    """The inference server a container runs: by its official image, or a ``vllm serve`` / vLLM OpenAI entrypoint
    command line in any image."""
    server = drain.server_of_image(str(k8s.get(c, "image") or ""))
    if server is not None:
        return server
    words = [str(w) for w in list(k8s.as_list(k8s.get(c, "command"))) + list(k8s.as_list(k8s.get(c, "args")))]
    text = " ".join(words)
    if "vllm.entrypoints.openai.api_server" in text or re.search(r"(^|[\s/])vllm\s+serve\b", text):
        return "vllm"
    return None


def _words(c) -> list[str]:
    return [str(w) for w in list(k8s.as_list(k8s.get(c, "command"))) + list(k8s.as_list(k8s.get(c, "args")))]


def _grace(spec) -> float:
    value = k8s.quantity(k8s.get(spec, "terminationGracePeriodSeconds"))
    return drain.KUBERNETES_DEFAULT_GRACE_SECONDS if value is None else value


def _server_drain(c) -> tuple[str | None, float, str]:
    """(server, seconds it drains on SIGTERM (0: aborts, inf: no bound of its own), what says so)."""
    server = _server_of(c)
    if server is None or server not in drain.SERVER_DRAINS:
        return None, 0.0, ""
    spec = drain.SERVER_DRAINS[server]
    version = drain.image_release(str(k8s.get(c, "image") or ""))
    given = drain.drain_seconds_given(server, _words(c))
    seconds = drain.effective_drain_seconds(server, version, given)
    if not spec.drains(version):
        what = (f"{server} {drain.version_text(version)} aborts every request in flight on SIGTERM; {server} drains "
                f"from {spec.since_text} ({spec.flag}: {spec.source.split(';')[0]})")
    elif spec.flag and given is None:
        what = (f"{spec.flag} is not set, and its default ({spec.default_seconds})"
                + (" aborts every request in flight on SIGTERM" if not spec.default_seconds else " applies"))
    elif spec.flag:
        what = (f"{spec.flag}={given}" + (" aborts every request in flight on SIGTERM" if given <= 0 else ""))
    else:
        what = spec.behaviour.split(":")[0]
    return server, seconds, what


@resource_policy(
    "serving-pod-drain-grace",
    "A pod's terminationGracePeriodSeconds must cover its preStop wait plus the drain its server is told to make "
    "(vLLM --shutdown-timeout, Triton --exit-timeout-secs): the grace period counts from the preStop hook, so a "
    "shorter one kills the server while it still finishes requests (vLLM's Kubernetes guide: grace >= preStop sleep "
    "+ --shutdown-timeout).",
    category=CATEGORY, severity=HIGH, kinds=SERVING_POD_KINDS,
    refs=("vllm-project/vllm PR #43208", "kserve/kserve PR #5485", "kserve/kserve PR #5496", "llm-d/llm-d PR #1653"),
    remediation="Raise terminationGracePeriodSeconds to at least the preStop wait + the server's drain (the "
                "component sets it: workloads[].drain, docs/drain.md).")
def serving_pod_drain_grace(r, config, report):
    spec = k8s.workload_pod_spec(r.kind, r.props)
    if spec is None:
        return
    grace = _grace(spec)
    for c in k8s.containers(spec, init=False):
        server, seconds, what = _server_drain(c)
        wait = drain.pre_stop_seconds(c) or 0.0
        bounded = seconds if server is not None and not math.isinf(seconds) else 0.0
        if grace < wait + bounded:
            report(f"{r.label} container {k8s.container_name(c)}: terminationGracePeriodSeconds "
                   f"{k8s.fmt_number(grace)} is shorter than its preStop wait ({k8s.fmt_number(wait)} s) + {server}'s "
                   f"drain ({what}) = {k8s.fmt_number(wait + bounded)} s: the kubelet kills the server mid-drain "
                   "(vllm-project/vllm PR #43208)")


@stack_policy(
    "serving-pod-drain",
    "An inference pod (an inference server's image or command line, or GPUs) must lose no request when it is "
    "terminated (scale-in, rollout, node scale-down): behind a Service it needs a preStop wait while kube-proxy and the Ingress controller stop routing to it (they keep "
    "sending it new requests after SIGTERM otherwise), and its server must drain on SIGTERM (vLLM before 0.18.0, "
    "or without --shutdown-timeout, aborts every request in flight).",
    category=CATEGORY, severity=MEDIUM, level=ADVISORY, hardening=True,
    refs=("vllm-project/vllm PR #34730", "vllm-project/vllm PR #36666", "vllm-project/vllm PR #43208",
          "kserve/kserve PR #5485", "KEP-3960 pod lifecycle sleep action"),
    remediation="Add lifecycle.preStop.sleep (Kubernetes 1.30+, else an exec of sleep) of at least 5 s behind a "
                "Service, 15 s behind an Ingress, and run a server release that drains with its drain flag set "
                "(the component renders all of it: workloads[].drain, docs/drain.md).")
def serving_pod_drain(view, config, report):
    services = view.objects("Service")
    for w in view.objects(*SERVING_POD_KINDS):
        spec = k8s.workload_pod_spec(w.kind, w.props)
        if spec is None or w.kind == "Pod" and k8s.get(w.props, "metadata", "ownerReferences"):
            continue
        labels = k8s.pod_labels(w.kind, w.props)
        behind = [s for s in services if s.namespace == w.namespace
                  and k8s.selects(k8s.get(s.props, "spec", "selector"), labels)]
        gpu = k8s.uses_gpu(spec)
        for c in k8s.containers(spec, init=False):
            server, seconds, what = _server_drain(c)
            # inference pods only (a server's image or command line, or GPUs): a chart's controllers and
            # dashboards are not what a scale-in of GPU replicas terminates all day
            if ((server is not None or gpu) and behind and k8s.as_list(k8s.get(c, "ports"))
                    and drain.pre_stop_seconds(c) is None):
                report(f"{w.label} container {k8s.container_name(c)} is behind {behind[0].label} and has no preStop "
                       "wait: kube-proxy and the Ingress controller keep routing new requests to it for seconds "
                       "after SIGTERM (kube-proxy --iptables-min-sync-period, ingress-nginx --sync-rate-limit: "
                       "catalogs/drain.py)", w)
            if server is not None and seconds <= 0:
                report(f"{w.label} container {k8s.container_name(c)}: {what}", w)
