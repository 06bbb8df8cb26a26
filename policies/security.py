"""Security: RBAC anti-patterns, secrets in plain env, unverified aggregated APIs, public endpoints, and the
restricted Pod Security Standard for inference pods.

GPU system components legitimately need some host access (device plugin: the kubelet socket directory;
dcgm-exporter: the pod-resources socket and SYS_ADMIN for profiling metrics; GPU Operator operands: the driver
root, host PID/IPC). Every pod policy asks :mod:`gpuplatform.policies.system` whether the workload is such a
component and whether the access it judges is one the component's upstream manifests document.

Levels: privileged containers, host namespaces, literal credentials, cluster-admin and wildcard-write RBAC,
unverified aggregated APIs and unintended public LoadBalancers are mandatory (real security holes); the restricted
Pod Security fields are hardening (advisory unless the strict pack config raises them).
"""
from __future__ import annotations

import re

from gpuplatform.catalogs.kubernetes import (ESCALATION_GRANTS, INGRESS_AUTH_ANNOTATIONS, INTERNAL_LB_ANNOTATIONS,
                                             INTERNAL_LB_CLASSES, POD_SECURITY_ENFORCE, RAY_AUTH_ENV,
                                             RAY_DASHBOARD_PORT, READ_ONLY_API_GROUPS, ROOT_OPT_OUT_ANNOTATION)
from gpuplatform.catalogs.secrets import (SECRET_ENV_PATTERN, credential_in, flag_credentials, is_reference,
                                         plaintext_secrets, unexpanded_variable)
from gpuplatform.policies import k8s, system
from gpuplatform.policies.registry import (ADVISORY, CRITICAL, HIGH, MANDATORY, MEDIUM, prop, resource_policy,
                                           stack_policy)
from gpuplatform.policies.stack import PROMETHEUS_ADAPTER_CHART, RELEASE_TYPE

CATEGORY = "security"
POD_SECURITY = "pod-security"

RUN_AS_NON_ROOT = "pod-run-as-non-root"
NO_PRIVILEGE_ESCALATION = "pod-no-privilege-escalation"
DROP_ALL = "pod-drop-all-capabilities"
SECCOMP = "pod-seccomp-profile"
NO_PRIVILEGED = "pod-no-privileged"
NO_HOST_NAMESPACES = "pod-no-host-namespaces"
RESTRICTED_VOLUMES = "pod-restricted-volumes"

EXEMPTIONS_CONFIG = {"exemptions": prop(
    "array", "Extra exemptions: objects by namespace and name, for this policy only.", [],
    items={"type": "object", "properties": {"namespace": {"type": "string"}, "name": {"type": "string"}},
           "required": ["namespace", "name"]})}

RESTRICTED_VOLUME_TYPES = ("configMap", "downwardAPI", "emptyDir", "projected", "secret", "csi",
                           "persistentVolumeClaim", "ephemeral", "image")
SECURE_SECCOMP = ("RuntimeDefault", "Localhost")
BROAD_GROUPS = ("system:serviceaccounts", "system:authenticated", "system:unauthenticated", "system:masters")
CERT_MANAGER_CA_ANNOTATION = "cert-manager.io/inject-ca-from"


def _csc(c, key, default=None):
    return k8s.get(c, "securityContext", key, default=default)


# ------------------------------------------------------------------------------------------------ RBAC
@resource_policy(
    "rbac-no-cluster-admin-binding",
    "No binding may grant cluster-admin: the Triton article's 'permissive-binding' makes every service account a "
    "cluster administrator.",
    category=CATEGORY, severity=CRITICAL, kinds=("ClusterRoleBinding", "RoleBinding"),
    refs=("Kyverno restrict-binding-clusteradmin", "Polaris clusterrolebindingClusterAdmin",
          "kube-linter cluster-admin-role-binding", "CIS 5.1.1"),
    remediation="Bind a role with exactly the verbs and resources needed.")
def no_cluster_admin(r, config, report):
    if k8s.get(r.props, "roleRef", "name") == "cluster-admin":
        report(f"{r.label} binds cluster-admin")


@resource_policy(
    "rbac-no-system-group-binding",
    "No binding may name the built-in groups that contain every service account or user (system:serviceaccounts, "
    "system:authenticated, system:unauthenticated, system:masters) or system:anonymous.",
    category=CATEGORY, severity=CRITICAL, kinds=("ClusterRoleBinding", "RoleBinding"),
    refs=("Kyverno restrict-binding-system-groups (extended)", "Kubernetes RBAC docs: permissive bindings"),
    remediation="Bind specific service accounts.")
def no_system_groups(r, config, report):
    for s in k8s.as_list(k8s.get(r.props, "subjects")):
        kind, name = k8s.get(s, "kind"), str(k8s.get(s, "name", default=""))
        broad = kind == "Group" and (name in BROAD_GROUPS or (
            r.kind == "ClusterRoleBinding" and name.startswith(BROAD_GROUPS[0] + ":")))
        if broad or (kind == "User" and name == "system:anonymous"):
            report(f"{r.label} binds {kind} {name}")


WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection", "escalate", "bind", "impersonate")
ESCALATION_RESOURCES = ("roles", "clusterroles", "rolebindings", "clusterrolebindings", "users", "groups",
                        "serviceaccounts", "serviceaccounts/token")
"""Where a '*' verb includes escalate, bind or impersonate (Kubernetes RBAC "Privilege escalation prevention")."""


@resource_policy(
    "rbac-no-wildcards",
    "Roles must not grant write verbs on '*' resources, nor '*' verbs on RBAC objects or identities (which include "
    "escalate, bind and impersonate): such a wildcard grants every write, including resources added later. '*' "
    "verbs on named ordinary resources (an operator managing its own objects) are not a wildcard grant. The aggregated metrics APIs (custom.metrics.k8s.io and friends) serve only get "
    "and list, so a wildcard there grants no write (the prometheus-adapter chart's server-resources role).",
    category=CATEGORY, severity=HIGH, kinds=("ClusterRole", "Role"),
    refs=("Kyverno restrict-wildcard-verbs", "Kyverno restrict-wildcard-resources", "Checkov CKV_K8S_49",
          "kube-linter wildcard-in-rules"),
    config={"allowedRoles": prop("array", "Role names allowed to use wildcards.", [], items={"type": "string"})},
    remediation="List the verbs (get, list, watch) and resources explicitly.")
def no_wildcards(r, config, report):
    if r.obj_name in config["allowedRoles"]:
        return
    for i, rule in enumerate(k8s.as_list(k8s.get(r.props, "rules"))):
        groups = [str(g) for g in k8s.as_list(k8s.get(rule, "apiGroups"))]
        if groups and all(g in READ_ONLY_API_GROUPS for g in groups):
            continue
        verbs = [str(v) for v in k8s.as_list(k8s.get(rule, "verbs"))]
        resources = [str(v) for v in k8s.as_list(k8s.get(rule, "resources"))]
        if "*" in verbs and ("*" in resources or any(x in ESCALATION_RESOURCES for x in resources)):
            report(f"{r.label} rules[{i}] grants '*' verbs on {', '.join(resources)}")
        elif "*" in resources and any(v in WRITE_VERBS or v == "*" for v in verbs):
            report(f"{r.label} rules[{i}] grants {', '.join(v for v in verbs if v in WRITE_VERBS)} on '*' resources")


def escalation_grants(rule) -> list[tuple[str, str, str]]:
    """(verb, resource, what it lets its holder do) of each :data:`ESCALATION_GRANTS` entry an RBAC rule grants
    by name (a ``*`` verb counts; ``*`` resources are left to ``rbac-no-wildcards``)."""
    groups = [str(g) for g in k8s.as_list(k8s.get(rule, "apiGroups"))]
    verbs = [str(v) for v in k8s.as_list(k8s.get(rule, "verbs"))]
    resources = [str(x) for x in k8s.as_list(k8s.get(rule, "resources"))]
    out = []
    for want_groups, want_resources, want_verbs, harm in ESCALATION_GRANTS:
        if not any(g in want_groups or g == "*" for g in groups):
            continue
        for res in (x for x in resources if x in want_resources):
            verb = next((v for v in verbs if v in want_verbs), None)
            if verb is not None:
                out.append((verb, res, harm))
    return out


@resource_policy(
    "rbac-no-privilege-escalation",
    "Roles must not grant the verbs and subresources that reach beyond what they name: create on pods/exec or "
    "pods/attach, get or create on nodes/proxy, escalate or bind on roles, impersonate on users, groups or "
    "service accounts, create on serviceaccounts/token (Kubernetes RBAC good practices, \"Privilege escalation "
    "risks\"). A holder of pods/exec runs any command in any pod of the namespace, GPU inference servers with their "
    "model tokens included.",
    category=CATEGORY, severity=HIGH, kinds=("ClusterRole", "Role"),
    refs=("Trivy KSV053", "Trivy KSV054", "Trivy KSV047", "Trivy KSV043", "Checkov CKV2_K8S_2", "Checkov CKV2_K8S_3",
          "Checkov CKV_K8S_157", "Checkov CKV_K8S_158", "Polaris rolePodExecAttach", "catalogs/kubernetes.py"),
    config={"allowedRoles": prop("array", "Role names allowed these grants.", [], items={"type": "string"})},
    remediation="Drop the subresource or verb; debug with an ephemeral, audited grant instead of a standing role.")
def no_privilege_escalation_grants(r, config, report):
    if r.obj_name in config["allowedRoles"]:
        return
    for i, rule in enumerate(k8s.as_list(k8s.get(r.props, "rules"))):
        for verb, resource, harm in escalation_grants(rule):
            report(f"{r.label} rules[{i}] grants {verb} on {resource}: its holder {harm}")


# ------------------------------------------------------------------------------------------------ secrets / TLS
@resource_policy(
    "container-no-plaintext-secrets",
    "Credentials must come from a Secret, not sit in the manifest (and so in the stack state and Git): an "
    "environment variable with a secret-looking name (password, token, key) holding a literal value, and any env "
    "value, command or argument holding a URL with a password (postgresql://user:password@host/db) or a token of "
    "a known format (Hugging Face hf_, OpenAI sk-, GitHub ghp_, AWS AKIA, Slack xox, NVIDIA nvapi-). References "
    "($(VAR), a secretKeyRef) are fine; $VAR and ${VAR} are not expanded by Kubernetes, so a secret-looking variable "
    "holding one is a finding too. A flag with a secret-looking name (--api-key, --hf-token) given a literal value "
    "on the command line is one. Every pod of the object is read, a custom resource's too, and a custom resource's "
    "own spec (an AIBrix ModelAdapter's additionalConfig) by the Helm values rule.",
    category=CATEGORY, severity=HIGH, kinds=k8s.POD_KINDS,
    refs=("Checkov CKV_K8S_35", "Polaris sensitiveContainerEnvVar", "gitleaks rules (token formats)",
          "catalogs/secrets.py"),
    config={"pattern": prop("string", "Regex of secret-looking variable names.", SECRET_ENV_PATTERN)},
    remediation="Use valueFrom.secretKeyRef (the workload's secretEnv); build a URL from it with $(NAME).")
def no_plaintext_secrets(r, config, report):
    pattern = re.compile(config["pattern"])
    if system.user_exempt(r, config):
        return
    said: set[str] = set()

    def report_once(message: str) -> None:  # an env list an operator adds to several containers is one finding
        if message not in said:
            said.add(message)
            report(message)

    for pod in k8s.pods_of(r.kind, r.props):
        for c in k8s.containers(pod.spec):
            who = f"{r.label} container {k8s.container_name(c)}"
            for i, e in enumerate(k8s.as_list(k8s.get(c, "env"))):
                name, value = str(k8s.get(e, "name", default="")), k8s.get(e, "value")
                if not isinstance(value, str) or not value:
                    continue
                var = unexpanded_variable(value)
                if var and pattern.search(name):
                    # Kubernetes expands only $(VAR): the pod gets these characters, or a tool substituted the
                    # token before apply and it sits in the manifest in plain text; either way a finding
                    report_once(f"{who}: env {name} holds the text {var!r}, which Kubernetes does not expand "
                                f"(only $(NAME)); take the value from a Secret (valueFrom.secretKeyRef)"
                                f"{k8s.at(r.props, e, 'value')}")
                    continue
                if is_reference(value):
                    continue
                found = credential_in(value)
                if found or pattern.search(name):
                    what = f"holds {found}" if found else "holds a literal value"
                    report_once(f"{who}: env {name} {what}{k8s.at(r.props, e, 'value')}")
            for key in ("command", "args"):
                words = list(k8s.as_list(k8s.get(c, key)))
                flags = {j: (flag, what) for j, flag, what in reversed(flag_credentials(words))}
                for j, word in enumerate(words):
                    found = credential_in(word)
                    if found:  # a token of a known format says more than the flag it is given to
                        report_once(f"{who}: {key}[{j}] holds {found}{k8s.at(r.props, c, key, j)}")
                    elif j in flags:
                        flag, what = flags[j]
                        report_once(f"{who}: {key}[{j}] gives {flag} {what}; pass it as $(NAME) of a variable "
                                    f"from a Secret{k8s.at(r.props, c, key, j)}")
    for where, what in custom_resource_secrets(r):
        found = "a literal secret" if what == "a secret-looking key" else what
        report_once(f"{r.label} holds {found} in its spec; keep it in a Secret the resource references "
                    f"at spec.{where}")


_SECRET_NAME_KEY = re.compile(r"(?i)secrets?$")
_OBJECT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


def _names_a_secret(key, value) -> bool:
    """``pullSecret: ngc-secret``, ``authSecret: ngc-api-secret``: a key ending in Secret holding an object name
    names the Secret, as custom resources' fields do (NIM operator, KServe), rather than holding one."""
    return bool(_SECRET_NAME_KEY.search(str(key))) and isinstance(value, str) and bool(_OBJECT_NAME.match(value))


def _env_list(value) -> bool:
    """A list of environment variables under any key (Dynamo's ``envs``): name and value or valueFrom each."""
    return k8s.is_list(value) and bool(value) and all(
        k8s.is_map(e) and "name" in e and ("value" in e or "valueFrom" in e) for e in value)


def _without_pods(node):
    """A custom resource's spec without its containers and env lists, which the container checks read, and
    without the fields that name a Secret."""
    if k8s.is_map(node):
        return {k: _without_pods(v) for k, v in node.items()
                if not (k in ("env", "containers", "initContainers") and k8s.is_list(v)) and not _env_list(v)
                and not _names_a_secret(k, v)}
    if k8s.is_list(node):
        return [_without_pods(v) for v in node]
    return node


def custom_resource_secrets(r) -> list[tuple[str, str]]:
    """(path under spec, what) of the credentials a custom resource's own spec holds in plain text (an AIBrix
    ModelAdapter's ``additionalConfig``), by the rule Helm values follow (catalogs/secrets.py
    ``plaintext_secrets``); its pods' containers are judged as containers. Built-in kinds are not read here."""
    if not k8s.is_custom_group(k8s.api_group(r.api_version or "")):
        return []
    return plaintext_secrets(_without_pods(k8s.plain(k8s.get(r.props, "spec"))))


@resource_policy(
    "helm-values-no-plaintext-secrets",
    "A Helm release's values must not hold a password, token or key in plain text (grafana.adminPassword, an "
    "alert receiver's token, a URL with a password or a token of a known format under any key): they land in the "
    "stack state, the release Secret and Git. The same rule as for container env; references (existingSecret, "
    "passwordFile, a secretKeyRef) are fine.",
    category=CATEGORY, severity=HIGH, types=(RELEASE_TYPE,),
    refs=("Helm 3 storage: a release's values are kept in its helm.sh/release.v1 Secret",
          "container-no-plaintext-secrets (the same name rule)"),
    remediation="Put the value in a Kubernetes Secret and point the chart at it (its existingSecret value), or "
                "pass it as a Pulumi secret.")
def helm_values_no_plaintext_secrets(r, config, report):
    if system.user_exempt(r, config):
        return
    for where, what in plaintext_secrets(k8s.plain(k8s.get(r.props, "values"))):
        found = "a literal secret" if what == "a secret-looking key" else what
        report(f"Helm release {k8s.get(r.props, 'name') or r.name}: values.{where} holds {found}")


CUSTOM_METRICS_APISERVICE = "v1beta1.custom.metrics.k8s.io"


@stack_policy(
    "custom-metrics-single-adapter",
    f"Only one adapter may serve {CUSTOM_METRICS_APISERVICE}: an APIService has one backend, so a second adapter "
    "(ack-prometheus-operator's prometheusAdapter, a copied guide APIService) takes it over and the HPAs read "
    "rules nobody generated.",
    category=CATEGORY, severity=HIGH,
    refs=("Kubernetes API aggregation: one APIService per group/version", "prometheus-adapter templates/custom-metrics-apiservice.yaml"),
    remediation="Keep one adapter: disable the other chart's adapter or drop the extra APIService.")
def custom_metrics_single_adapter(view, config, report):
    from gpuplatform.policies.stack import ACK_ADAPTER_CHART, PROMETHEUS_ADAPTER_CHART

    claimants = [r for chart in (PROMETHEUS_ADAPTER_CHART, ACK_ADAPTER_CHART) for r in view.releases(chart)]
    claimants += [r for r in view.objects("APIService") if r.obj_name == CUSTOM_METRICS_APISERVICE]
    if len(claimants) > 1:
        names = ", ".join(r.label for r in claimants)
        for r in claimants[1:]:
            report(f"{CUSTOM_METRICS_APISERVICE} is claimed {len(claimants)} times ({names})", r)


@resource_policy(
    "apiservice-tls-verified",
    "An aggregated APIService must verify its backend's certificate: insecureSkipTLSVerify must be unset (the "
    "caBundle may be injected after install, as KEDA and cert-manager do). The custom metrics API decides scaling; a spoofed backend "
    "scales the GPU fleet.",
    category=CATEGORY, severity=HIGH, kinds=("APIService",),
    refs=("APIService API doc: insecureSkipTLSVerify strongly discouraged",),
    remediation="Enable TLS (prometheus-adapter tls.enable or certManager.enabled) so the chart sets caBundle.")
def apiservice_tls(r, config, report):
    spec = k8s.as_map(k8s.get(r.props, "spec"))
    if spec.get("service") is None:
        return
    # without insecureSkipTLSVerify the API server verifies the backend; an empty caBundle is what KEDA and
    # cert-manager's cainjector fill in after install, so only the opt-out is a hole
    if spec.get("insecureSkipTLSVerify") is True:
        report(f"{r.label} sets insecureSkipTLSVerify: true")


@stack_policy(
    "adapter-release-tls",
    "In production the prometheus-adapter release must enable TLS (tls.enable or certManager.enabled); otherwise "
    "the chart renders its APIService with insecureSkipTLSVerify: true.",
    category=CATEGORY, severity=HIGH,
    refs=("prometheus-adapter chart custom-metrics-apiservice.yaml",),
    config={"environments": prop("array", "Environments that require TLS.", ["prod"], items={"type": "string"}),
            "environment": prop("string", "Environment when no GpuPlatform is checked.", "")},
    remediation="Set certManager.enabled: true (the prod stack does).")
def adapter_release_tls(view, config, report):
    if view.environment(config) not in config["environments"]:
        return
    for rel in view.releases(PROMETHEUS_ADAPTER_CHART):
        values = k8s.as_map(k8s.get(rel.props, "values"))
        if not (k8s.get(values, "tls", "enable") is True or k8s.get(values, "certManager", "enabled") is True):
            report(f"{rel.label}: prometheus-adapter without tls.enable or certManager.enabled renders an "
                   f"APIService with insecureSkipTLSVerify", rel)


# ------------------------------------------------------------------------------------------------ exposure
def _is_internal(svc, config) -> bool:
    """Whether a LoadBalancer Service asks its cloud for an internal address (catalogs.kubernetes lists the
    annotations of ACK, GKE, AWS and Azure, with their sources)."""
    if k8s.get(svc.props, "spec", "loadBalancerClass") in INTERNAL_LB_CLASSES:
        return True
    annotations = k8s.as_map(k8s.get(svc.props, "metadata", "annotations"))
    extra = {k: (str(v),) for k, v in (config.get("internalAnnotations") or {}).items()}
    for key, values in {**INTERNAL_LB_ANNOTATIONS, **extra}.items():
        value = annotations.get(key)
        if value is not None and str(value).strip().lower() in [v.lower() for v in values]:
            return True
    return False


@stack_policy(
    "service-no-public-loadbalancer",
    "LoadBalancer Services must be internal unless public endpoints are allowed (GpuPlatform "
    "allowPublicEndpoints or this policy's allowPublic): on ACK a LoadBalancer without the intranet "
    "address-type annotation gets an Internet-facing SLB.",
    category=CATEGORY, severity=HIGH,
    refs=("Kyverno restrict-loadbalancer", "Gatekeeper K8sBlockLoadBalancer", "pulumi no-public-services",
          "kube-linter exposed-services"),
    config={"allowPublic": prop("boolean", "Allow Internet-facing LoadBalancers.", False),
            "internalAnnotations": prop("object", "Further annotations that make a LoadBalancer internal.", {})},
    remediation="Use exposure.serviceType InternalLoadBalancer or ClusterIP plus an ingress.")
def no_public_lb(view, config, report):
    if config["allowPublic"] or k8s.get(view.platform, "allowPublicEndpoints") is True:
        return
    for svc in view.objects("Service"):
        if k8s.get(svc.props, "spec", "type") == "LoadBalancer" and not _is_internal(svc, config):
            report(f"{svc.label} is an Internet-facing LoadBalancer (no internal-load-balancer annotation of ACK, "
                   f"GKE, AWS or Azure)", svc)


def ingress_backends(ingress) -> list[tuple[str, object, tuple]]:
    """(service name, port number or name, path in the object) of every backend of an ``networking.k8s.io/v1``
    Ingress: the default backend and each rule's paths."""
    spec = k8s.as_map(k8s.get(ingress.props, "spec"))
    found = []
    default = k8s.get(spec, "defaultBackend", "service")
    if k8s.is_map(default):
        found.append((default, ("spec", "defaultBackend", "service")))
    for i, rule in enumerate(k8s.as_list(spec.get("rules"))):
        for j, path in enumerate(k8s.as_list(k8s.get(rule, "http", "paths"))):
            svc = k8s.get(path, "backend", "service")
            if k8s.is_map(svc):
                found.append((svc, ("spec", "rules", i, "http", "paths", j, "backend", "service")))
    return [(str(k8s.get(svc, "name", default="")), k8s.get(svc, "port", "number") or k8s.get(svc, "port", "name"),
             where) for svc, where in found]


def is_ray_dashboard(view, ingress, service: str, port) -> bool:
    """Whether an Ingress backend is a Ray head's dashboard: port 8265, or the port KubeRay's head Service names
    ``dashboard`` on a Service that is a Ray head's (its name ends in ``head-svc`` or it selects
    ``ray.io/node-type: head``)."""
    if k8s.quantity(port) == RAY_DASHBOARD_PORT:
        return True
    if port != "dashboard":
        return False
    svc = view.object("Service", ingress.namespace, service)
    head = svc is not None and k8s.get(svc.props, "spec", "selector", "ray.io/node-type") == "head"
    return head or service.endswith("head-svc")


def _ray_token_auth(view) -> bool:
    """Whether a Ray cluster among the objects checked runs its head with token authentication."""
    name, value = RAY_AUTH_ENV
    for r in view.resources:
        for pod in k8s.pods_of(r.kind, r.props):
            for c in k8s.containers(pod.spec):
                if any(k8s.get(e, "name") == name and str(k8s.get(e, "value", default="")).lower() == value
                       for e in k8s.as_list(k8s.get(c, "env"))):
                    return True
    return False


@stack_policy(
    "ray-dashboard-authenticated",
    "An Ingress must not publish a Ray dashboard (port 8265, KubeRay's 'dashboard' port of the head Service) "
    "without authentication: the dashboard serves the Jobs API, and \"anybody who can access the associated ports "
    "can execute arbitrary code on your Ray Cluster\" (Ray security docs; CVE-2023-48022), GPU nodes and the "
    "model tokens they mount included. KubeRay's headGroupSpec.enableIngress does the same. Authentication is an "
    "ingress controller's auth annotation (ingress-nginx auth-url or auth-type, AWS ALB auth-type, a GKE "
    "BackendConfig, a Traefik middleware, Kong plugins) or Ray's own token auth (RAY_AUTH_MODE=token on the head, "
    "Ray 2.52+).",
    category=CATEGORY, severity=CRITICAL,
    refs=("docs.ray.io ray-security", "CVE-2023-48022", "GHSA-q279-jhrf-cc6v (CVE-2025-62593)",
          "catalogs/kubernetes.py INGRESS_AUTH_ANNOTATIONS"),
    config=dict(EXEMPTIONS_CONFIG),
    remediation="Reach the dashboard with kubectl port-forward, or put the controller's authentication in front of "
                "it (nginx auth-url, IAP), or run Ray 2.52+ with RAY_AUTH_MODE=token.")
def ray_dashboard_authenticated(view, config, report):
    if _ray_token_auth(view):
        return
    for ing in view.objects("Ingress"):
        if system.user_exempt(ing, config):
            continue
        annotations = k8s.as_map(k8s.get(ing.props, "metadata", "annotations"))
        if any(a in annotations for a in INGRESS_AUTH_ANNOTATIONS):
            continue
        for service, port, where in ingress_backends(ing):
            if is_ray_dashboard(view, ing, service, port):
                report(f"{ing.label} publishes the Ray dashboard of Service {service} (port {k8s.fmt_number(port) if isinstance(port, (int, float)) else port}) without "
                       f"authentication: its Jobs API runs any code on the cluster at {k8s.render_path(where)}", ing)
                break
    for r in view.resources:
        if k8s.get(r.props, "spec", "headGroupSpec", "enableIngress") is True and r.kind in ("RayCluster",):
            report(f"{r.label} sets headGroupSpec.enableIngress: true, an Ingress to its dashboard without "
                   f"authentication at spec.headGroupSpec.enableIngress", r)
        elif k8s.get(r.props, "spec", "rayClusterConfig", "headGroupSpec", "enableIngress") is True:
            report(f"{r.label} sets rayClusterConfig.headGroupSpec.enableIngress: true, an Ingress to its dashboard "
                   f"without authentication at spec.rayClusterConfig.headGroupSpec.enableIngress", r)


@resource_policy(
    "service-metrics-port-not-exposed",
    "Services reachable from outside the cluster (LoadBalancer, NodePort) must not expose metrics ports: the "
    "Triton article publishes port 8002 to the Internet. Prometheus scrapes pods directly.",
    category=CATEGORY, severity=MEDIUM, kinds=("Service",), level=ADVISORY, hardening=True,
    refs=("checks.md A3",),
    config={"ports": prop("array", "Port numbers that are metrics ports whatever their name.", [],
                          items={"type": "integer"})},
    remediation="Drop the metrics port from the Service; scrape it with a PodMonitor.")
def metrics_port_not_exposed(r, config, report):
    if k8s.get(r.props, "spec", "type") not in ("LoadBalancer", "NodePort"):
        return
    for p in k8s.as_list(k8s.get(r.props, "spec", "ports")):
        names = [str(k8s.get(p, "name", default="")), str(k8s.get(p, "targetPort", default=""))]
        number = k8s.quantity(k8s.get(p, "port"))
        if any("metrics" in n for n in names) or (number is not None and number in config["ports"]):
            report(f"{r.label} exposes metrics port {k8s.get(p, 'name') or k8s.get(p, 'port')} outside the cluster")


# ------------------------------------------------------------------------------------------------ pod security
def _pod_policy(id, description, refs, remediation, severity=HIGH, remediate=None, hardening=True):
    return resource_policy(id, description, category=POD_SECURITY, severity=severity, kinds=k8s.POD_KINDS,
                           refs=refs, config=dict(EXEMPTIONS_CONFIG), remediation=remediation, remediate=remediate,
                           level=ADVISORY if hardening else MANDATORY, hardening=hardening)


def _subject(r, config):
    """(pods, system component) of an object the pod policies judge: every pod spec it carries with its path
    (:func:`k8s.pods_of`); no pods when there is nothing to judge (no pod, or exempted by the pack config)."""
    pods = k8s.pods_of(r.kind, r.props)
    if not pods or system.user_exempt(r, config):
        return [], None
    return pods, system.component_of(r)


def _who(r, c) -> str:
    return f"{r.label} container {k8s.container_name(c)}"


@_pod_policy(RUN_AS_NON_ROOT, "Containers must run as non-root: runAsNonRoot true (pod or container) and "
             "runAsUser never 0 (restricted Pod Security).",
             ("PSS restricted runAsNonRoot", "Kyverno require-run-as-nonroot", "Checkov CKV_K8S_23",
              "Polaris runAsRootAllowed", "kube-linter run-as-non-root"),
             "Set securityContext.runAsNonRoot: true and a non-zero runAsUser.")
def run_as_non_root(r, config, report):
    pods, comp = _subject(r, config)
    if not pods or (comp is not None and comp.runs_as_root):
        return
    if root_opt_out(r):
        return  # reported by the advisory pod-root-opt-out instead
    for spec in (p.spec for p in pods if p.spec.get("hostUsers") is not False):
        pod_nonroot = k8s.get(spec, "securityContext", "runAsNonRoot") is True
        if k8s.get(spec, "securityContext", "runAsUser") == 0:
            report(f"{r.label}: pod runAsUser is 0{k8s.at(r.props, spec, 'securityContext', 'runAsUser')}")
        for c in k8s.containers(spec, own_only=True):
            nonroot = _csc(c, "runAsNonRoot")
            if nonroot is False or (nonroot is None and not pod_nonroot):
                report(f"{_who(r, c)}: runAsNonRoot is not true{k8s.at(r.props, c, 'securityContext', 'runAsNonRoot')}")
            if _csc(c, "runAsUser") == 0:
                report(f"{_who(r, c)}: runAsUser is 0{k8s.at(r.props, c, 'securityContext', 'runAsUser')}")


def root_opt_out(r) -> bool:
    """The workload's pods carry the documented non-root opt-out annotation (stack key ``runAsRoot``)."""
    meta = k8s.get(r.props, "spec", "template", "metadata") if r.kind != "Pod" else k8s.get(r.props, "metadata")
    return str(k8s.get(meta, "annotations", ROOT_OPT_OUT_ANNOTATION, default="")).lower() == "true"


# Pod Security admission checks a pod against its namespace's enforce level
# (kubernetes.io/docs/concepts/security/pod-security-admission/); running as root is allowed from the baseline
# level down, and only restricted forbids it (kubernetes.io/docs/concepts/security/pod-security-standards/).
ROOT_ADMITTING_LEVELS = ("baseline", "privileged")


@stack_policy(
    "pod-root-opt-out",
    f"Workloads that opt out of non-root ({ROOT_OPT_OUT_ANNOTATION}: \"true\", stack key runAsRoot) are listed "
    "for review, and must live in a namespace whose Pod Security enforce level admits root (baseline): in a "
    "restricted namespace the API server rejects their pods.",
    category=POD_SECURITY, severity=MEDIUM, level=ADVISORY,
    refs=("Kubernetes Pod Security Standards: Running as Non-root (restricted)", "Pod Security Admission labels"),
    remediation="Prefer an image that runs as a non-root user; otherwise keep the workload in a baseline namespace.")
def pod_root_opt_out(view, config, report):
    namespaces = {ns.obj_name: ns for ns in view.objects("Namespace")}
    for w in view.objects(*k8s.WORKLOAD_KINDS):
        if not root_opt_out(w):
            continue
        ns = namespaces.get(w.namespace)
        level = k8s.get(ns.props, "metadata", "labels", POD_SECURITY_ENFORCE) if ns is not None else None
        if ns is not None and (level or "privileged") not in ROOT_ADMITTING_LEVELS:
            report(f"{w.label} runs as root, but namespace {w.namespace} enforces Pod Security {level}, which "
                   "rejects its pods; allowed: a baseline namespace", w)
        else:
            report(f"{w.label} runs as root by the documented opt-out (namespace {w.namespace}, Pod Security "
                   f"{level or 'not in this stack'})", w)


def _deny_escalation(r, config):
    pods, comp = _subject(r, config)
    if not pods or system.escalates(comp):
        return None
    props = k8s.plain(r.props)
    changed = False
    for c in k8s.containers(k8s.pod_spec(r.kind, props)):
        sc = c.setdefault("securityContext", {})
        if "allowPrivilegeEscalation" not in sc and not sc.get("privileged"):
            sc["allowPrivilegeEscalation"] = False
            changed = True
    return props if changed else None


@_pod_policy(NO_PRIVILEGE_ESCALATION, "Every container must set allowPrivilegeEscalation: false.",
             ("PSS restricted allowPrivilegeEscalation", "Kyverno disallow-privilege-escalation",
              "Checkov CKV_K8S_20", "Polaris privilegeEscalationAllowed", "kube-linter privilege-escalation-container"),
             "Set securityContext.allowPrivilegeEscalation: false (remediation fills it in where unset).",
             remediate=_deny_escalation)
def no_privilege_escalation(r, config, report):
    pods, comp = _subject(r, config)
    if not pods or system.escalates(comp):
        return
    for c in (c for p in pods for c in k8s.containers(p.spec, own_only=True)):
        if _csc(c, "allowPrivilegeEscalation") is not False:
            report(f"{_who(r, c)}: allowPrivilegeEscalation is not false"
                   f"{k8s.at(r.props, c, 'securityContext', 'allowPrivilegeEscalation')}")


@_pod_policy(DROP_ALL, "Containers must drop ALL capabilities and add none but NET_BIND_SERVICE.",
             ("PSS restricted capabilities", "Kyverno require-drop-all", "Polaris insecureCapabilities",
              "Checkov CKV_K8S_37"),
             "Set securityContext.capabilities.drop: [ALL].")
def drop_all(r, config, report):
    pods, comp = _subject(r, config)
    if not pods:
        return
    allowed = {"NET_BIND_SERVICE", *(comp.capabilities if comp else ())}
    for c in (c for p in pods for c in k8s.containers(p.spec, own_only=True)):
        if comp is not None and _csc(c, "privileged") is True:
            continue  # a privileged container has every capability: pod-no-privileged judges it
        caps = k8s.as_map(_csc(c, "capabilities"))
        if "ALL" not in [str(x) for x in k8s.as_list(caps.get("drop"))] and comp is None:
            report(f"{_who(r, c)}: capabilities do not drop ALL{k8s.at(r.props, c, 'securityContext', 'capabilities')}")
        added = [str(x) for x in k8s.as_list(caps.get("add"))
                 if str(x) not in allowed and not (comp is not None and comp.privileged)]
        if added:
            report(f"{_who(r, c)}: adds capabilities {', '.join(added)}"
                   + system.upstream_note(r, comp, "capabilities")
                   + k8s.at(r.props, c, 'securityContext', 'capabilities', 'add'))


@_pod_policy(SECCOMP, "A RuntimeDefault or Localhost seccomp profile must apply to every container (pod or "
             "container level); Unconfined is never allowed.",
             ("PSS restricted seccompProfile", "Kyverno restrict-seccomp-strict", "Checkov CKV_K8S_31",
              "kube-score container-seccomp-profile"),
             "Set the pod's securityContext.seccompProfile.type: RuntimeDefault.")
def seccomp(r, config, report):
    pods, comp = _subject(r, config)
    for spec in (p.spec for p in pods):
        pod_type = k8s.get(spec, "securityContext", "seccompProfile", "type")
        if pod_type is not None and pod_type not in SECURE_SECCOMP:
            report(f"{r.label}: pod seccompProfile is {pod_type}"
                   f"{k8s.at(r.props, spec, 'securityContext', 'seccompProfile', 'type')}")
        for c in k8s.containers(spec, own_only=True):
            ctype = k8s.get(c, "securityContext", "seccompProfile", "type")
            if ctype is not None and ctype not in SECURE_SECCOMP:
                report(f"{_who(r, c)}: seccompProfile is {ctype}"
                       f"{k8s.at(r.props, c, 'securityContext', 'seccompProfile', 'type')}")
            elif ctype is None and pod_type not in SECURE_SECCOMP and comp is None:
                # upstream node agents leave the profile to the runtime default; an explicit Unconfined still counts
                report(f"{_who(r, c)}: no RuntimeDefault/Localhost seccomp profile{k8s.at(r.props, c)}")


@_pod_policy(NO_PRIVILEGED, "Containers must not run privileged, unless the workload is a GPU system component "
             "whose upstream manifests run it privileged (GPU Operator operands).",
             ("PSS baseline privileged", "Kyverno disallow-privileged-containers", "Checkov CKV_K8S_16",
              "Polaris runAsPrivileged", "kube-linter privileged-container"),
             "Remove securityContext.privileged.", severity=CRITICAL, hardening=False)
def no_privileged(r, config, report):
    pods, comp = _subject(r, config)
    if not pods or (comp is not None and comp.privileged):
        return
    for c in (c for p in pods for c in k8s.containers(p.spec)):
        if _csc(c, "privileged") is True:
            report(f"{_who(r, c)} is privileged" + system.upstream_note(r, comp, "privileged")
                   + k8s.at(r.props, c, 'securityContext', 'privileged'))


@_pod_policy(NO_HOST_NAMESPACES, "Pods must not share the host's network, PID or IPC namespace, nor bind "
             "host ports, unless they are a GPU system component documented to (node-exporter, MIG manager).",
             ("PSS baseline hostNamespaces/hostPorts", "Kyverno disallow-host-namespaces", "Checkov CKV_K8S_17",
              "Checkov CKV_K8S_18", "Checkov CKV_K8S_19", "kube-linter host-network"),
             "Remove hostNetwork/hostPID/hostIPC and hostPort.", severity=CRITICAL, hardening=False)
def no_host_namespaces(r, config, report):
    pods, comp = _subject(r, config)
    if not pods:
        return
    allowed = {"hostNetwork": comp is not None and comp.host_network, "hostPID": comp is not None and comp.host_pid,
               "hostIPC": comp is not None and comp.host_ipc}
    for spec in (p.spec for p in pods):
        for key in ("hostNetwork", "hostPID", "hostIPC"):
            if spec.get(key) is True and not allowed[key]:
                report(f"{r.label} sets {key}: true" + system.upstream_note(r, comp, key) + k8s.at(r.props, spec, key))
    if comp is not None and (comp.host_ports or comp.host_network):
        return
    for c in (c for p in pods for c in k8s.containers(p.spec)):
        for i, p in enumerate(k8s.as_list(k8s.get(c, "ports"))):
            if k8s.get(p, "hostPort") not in (None, 0):
                report(f"{_who(r, c)} binds hostPort {k8s.fmt_number(k8s.quantity(k8s.get(p, 'hostPort')))}"
                       + system.upstream_note(r, comp, "hostPort") + k8s.at(r.props, c, 'ports', i, 'hostPort'))


@_pod_policy(RESTRICTED_VOLUMES, "Pods may only use the volume types restricted Pod Security allows: no "
             "hostPath (model caches on the node), no inline nfs (use a PersistentVolume and claim). GPU system "
             "components may mount the host paths their upstream manifests mount.",
             ("PSS restricted volumes", "Kyverno restrict-volume-types", "Kyverno disallow-host-path",
              "Polaris hostPathSet", "kube-linter sensitive-host-mounts"),
             "Use a PersistentVolumeClaim (the component turns nfs volumes into a static PV + claim).")
def restricted_volumes(r, config, report):
    pods, comp = _subject(r, config)
    for v in (v for p in pods for v in k8s.as_list(k8s.get(p.spec, "volumes"))):
        kinds = [k for k in k8s.as_map(v) if k != "name"]
        bad = [k for k in kinds if k not in RESTRICTED_VOLUME_TYPES]
        path = str(k8s.get(v, "hostPath", "path", default=""))
        if bad == ["hostPath"] and system.path_allowed(comp, path):
            continue
        if bad == ["hostPath"]:
            report(f"{r.label} volume {k8s.get(v, 'name')} is of type hostPath ({path})"
                   + system.upstream_note(r, comp, "hostPath") + k8s.at(r.props, v, "hostPath"))
        elif bad:
            report(f"{r.label} volume {k8s.get(v, 'name')} is of type {', '.join(bad)}{k8s.at(r.props, v, bad[0])}")
