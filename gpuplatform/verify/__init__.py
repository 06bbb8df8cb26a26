"""Post-deploy verification: does the running cluster do what the stack declared?

``pulumi up`` succeeding only proves the objects were accepted. The autoscaling loop (GPU nodes -> device
plugin -> exporter -> Prometheus -> adapter -> custom metrics API -> HPA) can still be broken at any link, and
an HPA with a missing metric fails quietly: it shows ``<unknown>`` and never scales. These checks read the
cluster through the Kubernetes API only and compare it with the stack config; every failure names what is
wrong and the most likely cause.

Check ids (stable; ``docs/verify.md`` describes each):

* ``cluster.reachable``
* ``nodes.present``, ``nodes.labels``, ``nodes.taints``, ``nodes.gpu-capacity`` (one result per GPU pool)
* ``apiservice.available`` (custom metrics; external metrics too when a workload uses KEDA)
* ``adapter.ready``, ``exporter.ready``
* ``metrics.listed``, ``metrics.value`` (one per workload and HPA metric)
* ``hpa.scaling-active``, ``hpa.current-metrics`` (one per workload)
* ``podmonitor.present`` (workloads scaled on inference-server metrics)
* ``model.load-time`` (one per workload): measured container start to ready against the startup budget; warns
  above half of it, fails when the startup probe killed a container
* ``model.wake-time`` (vLLM workloads serving sleep mode): a live wake-up of a sleeping replica, put back to sleep
  after, against the warm set's estimate (module ``wake``)
* ``startup.warm-capacity`` (workloads with ``autoscaling.warmReplicas``), ``startup.pre-pull`` (with ``prePull``),
  ``startup.fluid-cache`` (with a ``fluid`` volume), ``startup.compile-cache`` (vLLM with its compile cache on a
  shared volume): the time-to-capacity measures hold on the cluster, one result per object the stack rendered
* ``nodes.mig-partitioned`` (one per mixed-strategy MIG pool with nodes), ``nodes.mig-config`` (one per MIG pool with
  nodes that the GPU Operator's mig-manager partitions)
* ``ingress.address`` (one per workload with an ingress)
* ``credential.lifetime``, ``cluster.csi-driver`` (ACK), ``cluster.pod-network`` (new ACK clusters with flannel):
  the ACK behaviours docs/ack.md lists as unverified
* ``account.service-role``, ``account.vcpu-quota``, ``account.instance-stock``, ``account.preflight``
  (``--preflight``, before the first ``pulumi up``: the Alibaba Cloud account through its read-only APIs, not the
  cluster; module ``preflight``)
* ``cluster.system-pods``: no pod of kube-system or of the stack's charts is left unschedulable (every cluster)
* ``sharing.cgpu-component`` (dedicated ACK clusters with cGPU pools): the legacy ack-cgpu component runs
* ``network.policy-enforced``: the network plugin applies the workloads' NetworkPolicies (a warning where it does
  not); ``network.policy-peers`` (one per workload): its NetworkPolicy exists and the peers it admits by documented
  labels (ingress controller, Prometheus) are running pods off the host network

One module per area checked: ``cluster`` (credential, CSI driver, pod network), ``nodes`` (pools, GPU capacity,
MIG), ``monitoring`` (APIServices, adapter, exporter, custom metrics), ``workloads`` (HPAs, PodMonitors),
``startup`` (model load times), ``capacity`` (warm capacity, pre-puller, Fluid cache), ``ingress``, ``network`` (NetworkPolicies); ``runner`` runs them in order,
``kube`` reaches the cluster,
``output`` formats the report.
"""
from gpuplatform.verify.capacity import (check_compile_cache, check_fluid_cache, check_pre_pull, check_warm_capacity,
                                         check_warm_priority_class)
from gpuplatform.verify.cluster import (ACK_DISK_CSI_DRIVER, CREDENTIAL_MIN_DAYS, certificate_not_after,
                                       check_cgpu_component, check_credential, check_csi_driver, check_pod_network,
                                       check_system_pods)
from gpuplatform.verify.ingress import check_ingress, ingress_names
from gpuplatform.verify.kube import REQUEST_TIMEOUT, build_api_client, get_raw
from gpuplatform.verify.monitoring import (CUSTOM_METRICS_APISERVICE, CUSTOM_METRICS_ROOT, EXPORTER_DAEMONSETS,
                                           EXTERNAL_METRICS_APISERVICE, check_adapter_pods, check_apiservice,
                                           check_exporter, check_metrics)
from gpuplatform.verify.nodes import check_mig_config, check_mig_partitioned, check_mig_resources, check_pool
from gpuplatform.verify.output import format_json, format_table, progress_line
from gpuplatform.verify.placement import check_pod_placement
from gpuplatform.verify.results import CheckResult
from gpuplatform.verify.runner import POLL_SECONDS, run_verify, verify_main
from gpuplatform.verify.startup import check_load_time
from gpuplatform.verify.wake import check_wake_time
from gpuplatform.verify.workloads import KEDA_HPA_PREFIX, PODMONITOR, check_hpa, check_pod_monitor

__all__ = ["CheckResult", "run_verify", "verify_main", "build_api_client", "format_table", "format_json",
           "progress_line", "check_credential", "check_hpa", "check_pool", "check_ingress", "ingress_names",
           "check_load_time", "check_wake_time", "check_warm_priority_class", "check_warm_capacity", "check_pre_pull",
           "check_fluid_cache", "check_compile_cache", "check_pod_placement"]
