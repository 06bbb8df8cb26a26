"""What ``AnalyzeStack`` receives in the preview after a deployment: each resource's stored outputs.

An unchanged resource keeps the outputs of the last ``pulumi up`` (a "same" step), and the engine hands stack
policies those outputs, not the program's inputs (pulumi ``pkg/resource/deploy/step_generator.go``,
``AnalyzeResources``). For a Kubernetes object pulumi-kubernetes stores the live object it read back from the
API server, with the inputs under the internal ``__inputs`` key (``provider/pkg/provider/provider.go``,
``checkpointObject``), which the engine drops before calling the pack (``MarshalOptions.SkipInternalKeys`` in
``sdk/go/common/resource/plugin/analyzer_plugin.go``). A component's outputs are what it registered again.

The live object is the authored one plus what the API server and the controllers add. This module adds them for
the kinds the stacks create, from the Kubernetes sources:

* defaulting, ``pkg/apis/apps/v1/defaults.go`` (``SetDefaults_Deployment``: ``replicas`` 1, RollingUpdate 25%/25%,
  ``revisionHistoryLimit`` 10, ``progressDeadlineSeconds`` 600), ``pkg/apis/core/v1/defaults.go`` (containers:
  ``imagePullPolicy``, ``terminationMessagePath``/``Policy``, port ``protocol``; pod spec: ``restartPolicy``,
  ``dnsPolicy``, ``terminationGracePeriodSeconds``, ``schedulerName``, ``securityContext``; Service:
  ``sessionAffinity``, ``type``, ``targetPort``, ``internalTrafficPolicy``), ``pkg/apis/autoscaling/v2/defaults.go``
  (HPA ``behavior`` rules);
* the HPA controller, which writes its chosen replica count to the target's ``spec.replicas`` through the scale
  subresource (``pkg/controller/podautoscaler/horizontal.go``), and every controller's ``status``;
* allocation: cluster IPs, node ports, the load balancer's address;
* the Helm release's ``status`` (pulumi-kubernetes ``helm_release.go``) and the cloud provider's computed ids.
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Mapping, Sequence

from gpuplatform.catalogs.kubernetes import HPA_DEFAULT_DOWNSCALE_STABILIZATION_SECONDS, HPA_DEFAULT_SCALE_UP
from gpuplatform.records import RegisteredResource

META = {"uid": "0c8d3a52-6f8e-4a55-9b7e-5d1f0e2c4b11", "resourceVersion": "48213", "generation": 2,
        "creationTimestamp": "2026-01-12T09:30:00Z"}


def _pod_template(template: dict) -> None:
    spec = template.setdefault("spec", {})
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        image = str(c.get("image", ""))
        c.setdefault("imagePullPolicy", "Always" if image.endswith(":latest") or ":" not in image.rsplit("/", 1)[-1]
                     else "IfNotPresent")
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        for p in c.get("ports", []):
            p.setdefault("protocol", "TCP")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})


def _scaled_to(obj: dict, scalers: Sequence[dict]) -> int:
    """The replica count an autoscaler chose: above its floor, so it differs from any authored default."""
    for s in scalers:
        spec = s.get("spec", {})
        lo = spec.get("minReplicas", spec.get("minReplicaCount", 1)) or 1
        hi = spec.get("maxReplicas", spec.get("maxReplicaCount", lo)) or lo
        return min(hi, lo + 1)
    return obj.get("spec", {}).get("replicas", 1)


def _workload(obj: dict, scalers: Sequence[dict]) -> None:
    spec = obj.setdefault("spec", {})
    spec["replicas"] = _scaled_to(obj, scalers)
    if obj["kind"] == "Deployment":
        spec.setdefault("strategy", {"type": "RollingUpdate",
                                     "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        spec.setdefault("progressDeadlineSeconds", 600)
    spec.setdefault("revisionHistoryLimit", 10)
    _pod_template(spec.setdefault("template", {}))
    n = spec["replicas"]
    obj["status"] = {"observedGeneration": 2, "replicas": n, "readyReplicas": n, "availableReplicas": n,
                     "updatedReplicas": n, "conditions": [{"type": "Available", "status": "True"}]}


def _service(obj: dict) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    spec.update(clusterIP="10.96.17.3", clusterIPs=["10.96.17.3"], ipFamilies=["IPv4"], ipFamilyPolicy="SingleStack")
    for i, p in enumerate(spec.get("ports", [])):
        p.setdefault("protocol", "TCP")
        p.setdefault("targetPort", p.get("port"))
        if spec["type"] in ("NodePort", "LoadBalancer"):
            p.setdefault("nodePort", 30080 + i)
    if spec["type"] == "LoadBalancer":
        spec.setdefault("externalTrafficPolicy", "Cluster")
        spec.setdefault("allocateLoadBalancerNodePorts", True)
        obj["status"] = {"loadBalancer": {"ingress": [{"ip": "10.0.3.21"}]}}
    else:
        obj["status"] = {"loadBalancer": {}}


def _hpa(obj: dict) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("minReplicas", 1)
    if obj.get("apiVersion") == "autoscaling/v2":
        behavior = spec.setdefault("behavior", {})
        up = behavior.setdefault("scaleUp", {})
        for key, value in HPA_DEFAULT_SCALE_UP.items():
            up.setdefault(key, copy.deepcopy(value))
        down = behavior.setdefault("scaleDown", {})
        down.setdefault("stabilizationWindowSeconds", HPA_DEFAULT_DOWNSCALE_STABILIZATION_SECONDS)
        down.setdefault("selectPolicy", "Max")
        down.setdefault("policies", [{"type": "Percent", "value": 100, "periodSeconds": 15}])
    n = min(spec.get("maxReplicas", 1), spec["minReplicas"] + 1)
    obj["status"] = {"currentReplicas": n, "desiredReplicas": n, "currentMetrics": [],
                     "conditions": [{"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound"}]}


def _targets(scaler: Mapping, obj: Mapping) -> bool:
    ref = scaler.get("spec", {}).get("scaleTargetRef", {})
    same_ns = scaler.get("metadata", {}).get("namespace") == obj.get("metadata", {}).get("namespace")
    return same_ns and ref.get("name") == obj.get("metadata", {}).get("name") and \
        ref.get("kind", "Deployment") == obj.get("kind")


def live_outputs(resources: Sequence[RegisteredResource]) -> Callable[[RegisteredResource], Mapping[str, Any]]:
    """A ``check.run_policies`` ``stack_state``: each resource's outputs as the next preview's AnalyzeStack
    receives them, after one ``pulumi up`` and the controllers' first reconcile."""
    scalers = [r.inputs for r in resources if r.is_kubernetes_object
               and r.inputs.get("kind") in ("HorizontalPodAutoscaler", "ScaledObject")]
    cache: dict[str, Mapping[str, Any]] = {}

    def state(r: RegisteredResource) -> Mapping[str, Any]:
        key = r.urn or f"{r.type}::{r.name}"
        if key in cache:
            return cache[key]
        if not r.custom:
            out = r.engine_outputs()  # the program registers them again, now with every value known
        elif r.is_kubernetes_object:
            obj = copy.deepcopy(r.inputs)
            obj.setdefault("metadata", {}).update(META)
            if obj.get("metadata", {}).get("namespace") is None and obj["kind"] not in CLUSTER_SCOPED:
                obj["metadata"]["namespace"] = "default"
            kind = obj["kind"]
            if kind in ("Deployment", "StatefulSet"):
                _workload(obj, [s for s in scalers if _targets(s, obj)])
            elif kind == "Service":
                _service(obj)
            elif kind == "HorizontalPodAutoscaler":
                _hpa(obj)
            elif kind == "PodDisruptionBudget":
                obj["status"] = {"currentHealthy": 2, "desiredHealthy": 1, "disruptionsAllowed": 1,
                                 "expectedPods": 2, "observedGeneration": 2}
            out = obj
        elif r.type == "kubernetes:helm.sh/v3:Release":
            out = {**copy.deepcopy(r.inputs), "status": {
                "name": r.inputs.get("name"), "namespace": r.inputs.get("namespace"), "revision": 1,
                "status": "deployed", "chart": r.inputs.get("chart"), "version": r.inputs.get("version")},
                "resourceNames": {}}
        else:  # cloud resources: inputs plus what the provider computed
            out = {**copy.deepcopy(r.inputs), "id": f"{r.name}-id"}
        cache[key] = out
        return out

    return state


CLUSTER_SCOPED = ("Namespace", "ClusterRole", "ClusterRoleBinding", "APIService", "CustomResourceDefinition",
                  "PriorityClass", "StorageClass", "PersistentVolume", "ValidatingWebhookConfiguration",
                  "MutatingWebhookConfiguration", "RuntimeClass")
