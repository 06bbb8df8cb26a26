"""Register a Kubernetes object dict (as built by the pure builders) with its typed pulumi_kubernetes class."""
import re

import pulumi
import pulumi_kubernetes as k8s

from gpuplatform.catalogs.kubernetes import POD_SECURITY_AUDIT, POD_SECURITY_ENFORCE, POD_SECURITY_WARN

TYPED = {
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "PersistentVolume"): k8s.core.v1.PersistentVolume,
    ("v1", "PersistentVolumeClaim"): k8s.core.v1.PersistentVolumeClaim,
    ("networking.k8s.io/v1", "Ingress"): k8s.networking.v1.Ingress,
    ("policy/v1", "PodDisruptionBudget"): k8s.policy.v1.PodDisruptionBudget,
    ("policy/v1beta1", "PodDisruptionBudget"): k8s.policy.v1beta1.PodDisruptionBudget,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): k8s.autoscaling.v2.HorizontalPodAutoscaler,
    ("autoscaling/v2beta2", "HorizontalPodAutoscaler"): k8s.autoscaling.v2beta2.HorizontalPodAutoscaler,
    ("autoscaling/v2beta1", "HorizontalPodAutoscaler"): k8s.autoscaling.v2beta1.HorizontalPodAutoscaler,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("scheduling.k8s.io/v1", "PriorityClass"): k8s.scheduling.v1.PriorityClass,
}


def namespace(name: str, pod_security: str, *, warn: bool = False, warn_audit: str = "") -> dict:
    """A Namespace with its Pod Security Standard level (``restricted`` for workloads, ``baseline`` for the
    workloads that opt out of non-root, ``privileged`` only for GPU and monitoring system components that need
    host access). ``warn_audit`` names a stricter level reported to clients (warn) and the audit log (audit)."""
    labels = {POD_SECURITY_ENFORCE: pod_security}
    if warn:
        labels[POD_SECURITY_WARN] = pod_security
    if warn_audit:
        labels[POD_SECURITY_WARN] = warn_audit
        labels[POD_SECURITY_AUDIT] = warn_audit
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def register(name: str, obj: dict, opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """Typed classes take top-level fields as snake_case keyword arguments (``roleRef`` -> ``role_ref``); nested
    dicts pass through in camelCase. Custom resources (monitors, rules, ScaledObjects) use CustomResource."""
    rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}
    typed = TYPED.get((obj["apiVersion"], obj["kind"]))
    if typed is not None:
        return typed(name, **{_snake(k): v for k, v in rest.items()}, opts=opts)
    return k8s.apiextensions.CustomResource(name, api_version=obj["apiVersion"], kind=obj["kind"], **rest, opts=opts)
