"""Config validation and the policy pack judge the same facts the same way.

A stack config that `plan` accepts must pass `check`, and a config `check` would fail on a mandatory policy must
be refused by `plan` before any resource exists, and what `plan` refuses `check --strict` fails (docs/policies.md, "The preview caveat": validation is the check
that still runs when a preview cannot). Each case changes one shared fact of a valid stack; validation judges the
config, and the pack judges the objects the components author from that same config, synthesized with
validation switched off so that the pack sees what would otherwise never be created."""
import contextlib

import pytest

from gpuplatform import program
from gpuplatform.check import run_policies, with_strict
from gpuplatform.components import inference_service
from gpuplatform.components import validation as validation_pkg
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.validation import load
from gpuplatform.components.validation.rules import parse
from support import stack_raw, synth


@contextlib.contextmanager
def _validation_off(monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(validation_pkg, "validate", lambda *a, **k: [])
        m.setattr(validation_pkg, "load", lambda raw, provider_settings=None: parse(raw))
        m.setattr(program, "load", lambda raw, provider_settings=None: parse(raw))
        m.setattr(inference_service, "_validate", lambda *a, **k: [])
        yield


def _autoscaling(**changes):
    def mutate(raw):
        raw["workloads"][0]["autoscaling"].update(changes)
    return mutate


def _small_pods(mutate):
    def both(raw):
        mutate(raw)
        raw["workloads"][0]["resources"] = {"cpu": "1", "memory": "3Gi"}
    return both


def _cluster(**changes):
    def mutate(raw):
        raw.setdefault("cluster", {}).update(changes)
    return mutate


def _env(**env):
    def mutate(raw):
        raw["workloads"][0].setdefault("env", {}).update(env)
    return mutate


def _args(*args):
    def mutate(raw):
        raw["workloads"][0]["args"] = list(args)
    return mutate


# (stack, mutation, facts the case touches)
CASES = {
    # credentials in values (catalogs.secrets credential_in): refused by validation, mandatory in the pack
    "secret-url-in-env": ("dev", _env(DATABASE_URL="postgresql://app:Sup3rS3cret@db.example.com/app")),
    "secret-url-by-reference": ("dev", _env(DATABASE_URL="postgresql://app:$(DB_PASSWORD)@db.example.com/app")),
    "user-only-url-in-env": ("dev", _env(CACHE_URL="redis://app@cache.example.com:6379/0")),
    "token-in-args": ("dev", _args("--port", "80", "--hub-token=hf_Qw3rTyUiOpAsDfGhJkLzXcVbNmQwErTyUi")),
    "token-by-reference-in-args": ("dev", _args("--port", "80", "--hub-token=$(HF_TOKEN)")),
    # replica bounds (catalogs.kubernetes.hpa_replica_bounds)
    **{f"bounds-{mn}-{mx}": ("dev", _autoscaling(minReplicas=mn, maxReplicas=mx))
       for mn in (1, 2, 3) for mx in (1, 2, 3, 6)},
    # capacity: 3 nodes of one T4 each hold 3 x 3 pods of 4 GiB of GPU memory (catalogs.capacity); each pod asks
    # 3Gi of node memory, so three fit what a 15 GiB node offers pods and the GPU is what binds (the pack counts
    # GPU units only)
    **{f"capacity-max-{mx}": ("dev", _small_pods(_autoscaling(maxReplicas=mx))) for mx in (9, 10, 40)},
    # the metric against the pool's sharing mode (catalogs.metrics sharing_modes)
    **{f"metric-{m}-on-cgpu": ("dev", _autoscaling(metrics=[{"metric": m, "target": 20}]))
       for m in ("gpu_sm_util", "gpu_util", "gpu_fb_used", "gpu_engine_active", "gpu_mem_used_ratio")},
    "metric-gpu_util-on-mig": ("prod", _autoscaling(metrics=[{"metric": "gpu_util", "target": 50}])),
    "metric-gpu_engine_active-on-mig": ("prod", _autoscaling(metrics=[{"metric": "gpu_engine_active",
                                                                       "target": 0.6}])),
    "metric-gpu_mem_used-exclusive": ("staging", _autoscaling(metrics=[{"metric": "gpu_mem_used", "target": 0.5}])),
    "bounds-zero-min": ("dev", _autoscaling(minReplicas=0, maxReplicas=3)),
    # the HPA API version against the cluster's version (catalogs.kubernetes.served_by)
    **{f"hpa-api-{api.split('/')[1]}-k8s-{kv.split('-')[0]}": ("dev", lambda raw, api=api, kv=kv: (
        _autoscaling(hpaApiVersion=api)(raw), _cluster(kubernetesVersion=kv)(raw)))
       for api in ("autoscaling/v2", "autoscaling/v2beta2") for kv in ("1.22.15-aliyun.1", "1.26.3-aliyun.1", "1.30.1-aliyun.1")},
}


def _validation_verdict(raw):
    try:
        load(raw)
    except ConfigError as exc:
        return [str(i) for i in exc.issues]
    return []


@pytest.mark.parametrize("case", sorted(CASES))
def test_validation_and_the_pack_agree(case, monkeypatch):
    stack, mutate = CASES[case]
    raw = stack_raw(stack)
    mutate(raw)
    refused = _validation_verdict(raw)
    with _validation_off(monkeypatch):
        records = synth(raw)
    failed = [f"{v.policy_id}: {v.message}" for v in run_policies(records) if v.mandatory]
    strict = [f"{v.policy_id}: {v.message}" for v in run_policies(records, with_strict(None)) if v.mandatory]
    # nothing plan accepts fails check; what plan refuses, check --strict fails too (validation holds the objects
    # the components author to the hardening policies as well)
    assert not failed or refused, f"plan accepts what check fails:\n{failed}"
    assert bool(refused) == bool(strict), f"validation: {refused or 'accepts'}\npack, strict: {strict or 'passes'}"


def test_the_cases_cover_both_verdicts():
    verdicts = {bool(_validation_verdict(_mutated(c))) for c in CASES}
    assert verdicts == {True, False}


def _mutated(case):
    stack, mutate = CASES[case]
    raw = stack_raw(stack)
    mutate(raw)
    return raw
