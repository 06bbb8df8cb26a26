"""Credentials wherever they hide (catalogs/secrets.py): each token format found and its look-alikes not, URL
userinfo with a password but not a user alone, a reference or a placeholder; and both sides refusing them, config
validation with the stack path and the pack with the field's path."""
import pytest

from gpuplatform.catalogs.secrets import (TOKEN_FORMATS, credential_in, is_reference, plaintext_secrets,
                                          token_format, url_credential)
from gpuplatform.check import run_policies
from gpuplatform.components.errors import ConfigError
from gpuplatform.components.validation import load
from gpuplatform.policies.registry import by_id
from gpuplatform.records import RegisteredResource
from support import stack_raw

# made-up values in each issuer's form (none is a real credential)
HF = "hf_Qw3rTyUiOpAsDfGhJkLzXcVbNmQwErTyUi"
OPENAI = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7dEf0hIj3kLm6nT3BlbkFJQr9sT2uV5wX8yZ1aB4cD7eF0gH3iJ6kL9mN2oP5q"
OPENAI_LEGACY = "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"
GITHUB = "ghp_0123456789abcdefghijABCDEFGHIJklmnop"
GITHUB_FINE = "github_pat_" + ("11ABCDEFG0123456789abc_defghijklmnopqrstuvwxyz" * 2)[:82]
AWS = "AKIAZ7QW4ERT5YUI8OPQ"
SLACK = "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx"
NVIDIA = "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"

FOUND = [
    (HF, "a Hugging Face token"),
    ("api_org_Qw3rTyUiOpAsDfGhJkLzXcVbNmQwErTyUi", "a Hugging Face token"),
    (OPENAI, "an OpenAI API key"),
    (OPENAI_LEGACY, "an OpenAI API key"),
    (GITHUB, "a GitHub token"),
    ("gho_0123456789abcdefghijABCDEFGHIJklmnop", "a GitHub token"),
    (GITHUB_FINE, "a GitHub token"),
    (AWS, "an AWS access key id"),
    ("ASIAZ7QW4ERT5YUI8OPQ", "an AWS access key id"),
    (SLACK, "a Slack token"),
    ("xoxp-1234567890-1234567890-1234567890-abcdef0123456789abcdef0123456789", "a Slack token"),
    (NVIDIA, "an NVIDIA API key"),
    # inside free text: a flag, a shell script
    (f"--hf-token={HF}", "a Hugging Face token"),
    (f"export GH={GITHUB} && git clone https://github.com/acme/x", "a GitHub token"),
]


@pytest.mark.parametrize("text, name", FOUND, ids=[n + ":" + t[:12] for t, n in FOUND])
def test_each_token_format_is_found(text, name):
    assert token_format(text).name == name
    assert credential_in(text) == name


NOT_FOUND = [
    "hf_transfer",                                   # the huggingface_hub extra, a package name
    "hf_Qw3rTyUiOpAsDfGhJkLzXc",                     # too short for a token
    "sk-learn-compatible-model-name-v2-long-enough",  # "sk-" without OpenAI's marker
    "sk-ant-api03-not-an-openai-key",
    "ghp_tooshort",
    "AKIAIOSFODNN7EXAMPLE",                          # AWS's documented example key id
    "AKIAZ7QW4ERT5YUI8OPQEXTRA",                     # longer word: not a key id
    "xoxb-",                                         # a prefix alone
    "nvapi-key",
    "TOKENIZERS_PARALLELISM=false",
    "meta-llama/Llama-3.1-8B-Instruct",
]


@pytest.mark.parametrize("text", NOT_FOUND)
def test_look_alikes_are_not_tokens(text):
    assert token_format(text) is None and credential_in(text) is None


URLS = [
    ("postgresql://app:Sup3rS3cret@db.example.com:5432/app", "a user:password@ part"),
    ("postgresql://app:changeme@db/app", "a user:password@ part"),  # a guessable password still opens the db
    ("redis://:pw0rd@redis:6379/0", "a user:password@ part"),
    ("https://user:p%40ss@host/x", "a user:password@ part"),
    ("https://oapi.dingtalk.com/robot/send?access_token=abc123", "the query parameter 'access_token'"),
    ("https://hooks.slack.com/services/T000/B000/XXXX", "an incoming-webhook path"),
]


@pytest.mark.parametrize("url, what", URLS)
def test_urls_that_carry_a_credential(url, what):
    assert url_credential(url) == what
    assert credential_in(f"--db {url}") == f"a URL with {what}"


@pytest.mark.parametrize("url", [
    "postgresql://app@db/app",                       # a user, no password
    "postgresql://app:@db/app",                      # an empty password
    "postgresql://app:$(DB_PASSWORD)@db/app",        # Kubernetes expands it from a Secret-backed variable
    "postgresql://app:${DB_PASSWORD}@db/app",
    "postgresql://app:$DB_PASSWORD@db/app",
    "postgresql://app:<password>@db/app",            # a placeholder: the URL does not work as written
    "postgresql://app:****@db/app",                  # masked
    "https://example.com/x?token=$(API_TOKEN)",
    "https://example.com/search?q=token",
    "http://prometheus.monitoring.svc:9090",
])
def test_urls_without_a_literal_credential(url):
    assert url_credential(url) is None and credential_in(url) is None


def test_references_are_not_credentials_whatever_they_name():
    for value in ("$(HF_TOKEN)", "${HF_TOKEN}", "$HF_TOKEN", "{{ .Values.hfToken }}"):
        assert is_reference(value) and credential_in(value) is None
    assert not is_reference(f"prefix-$(X)-{HF}") and credential_in(f"prefix-$(X)-{HF}") == "a Hugging Face token"


def test_every_format_cites_its_issuer_and_a_scanner_rule():
    for fmt in TOKEN_FORMATS:
        assert "docs" in fmt.source or ".com/" in fmt.source, fmt.name
    assert {f.name for f in TOKEN_FORMATS} == {"a Hugging Face token", "an OpenAI API key", "a GitHub token",
                                               "an AWS access key id", "a Slack token", "an NVIDIA API key"}


def test_helm_values_are_searched_under_any_key():
    values = {"grafana": {"adminPassword": "prom-operator", "admin": {"existingSecret": "grafana-admin"}},
              "extraArgs": ["--storage=s3://minio:m1n10Pass@minio:9000/b", "--verbose"],
              "notes": {"channel": SLACK, "model": "meta-llama/Llama-3.1-8B"},
              "remoteWrite": [{"url": "https://rw.example.com/api/v1/write",
                               "basicAuth": {"password": {"name": "rw", "key": "pw"}}}]}
    assert plaintext_secrets(values) == [("grafana.adminPassword", "a secret-looking key"),
                                         ("extraArgs[0]", "a URL with a user:password@ part"),
                                         ("notes.channel", "a Slack token")]


# ---------------------------------------------------------------------------------------------- the stack config
def _refused(raw) -> dict[str, str]:
    with pytest.raises(ConfigError) as err:
        load(raw)
    return {i.path: i.message for i in err.value.issues}


def test_a_database_url_with_a_password_in_env_is_refused_with_its_path():
    raw = stack_raw("dev")
    raw["workloads"][0].setdefault("env", {})["DATABASE_URL"] = "postgresql://app:Sup3rS3cret@db/app"
    issues = _refused(raw)
    message = issues["workloads[0].env.DATABASE_URL"]
    assert "a URL with a user:password@ part" in message and "secretEnv" in message
    assert "Sup3rS3cret" not in message  # the value is never shown


def test_a_url_built_from_a_secret_variable_is_accepted():
    raw = stack_raw("dev")
    w = raw["workloads"][0]
    w.setdefault("env", {})["DATABASE_URL"] = "postgresql://app:$(DB_PASSWORD)@db/app"
    w["secretEnv"] = {"DB_PASSWORD": {"secretName": "db", "key": "password"}}
    load(raw)


def test_a_token_under_an_innocent_env_name_is_refused():
    raw = stack_raw("dev")
    raw["workloads"][0].setdefault("env", {})["MODEL_HUB_AUTH"] = HF
    assert "a Hugging Face token" in _refused(raw)["workloads[0].env.MODEL_HUB_AUTH"]


def test_a_token_in_the_args_of_a_workload_without_a_server_is_refused_at_its_index():
    raw = stack_raw("dev")
    raw["workloads"][0]["args"] = ["--port", "80", f"--wandb-key={GITHUB}"]
    assert "a GitHub token" in _refused(raw)["workloads[0].args[2]"]


def test_a_secret_variable_referenced_in_args_is_accepted():
    raw = stack_raw("dev")
    raw["workloads"][0]["args"] = ["--push-to", "https://bot:$(GH_TOKEN)@github.com/acme/x.git"]
    raw["workloads"][0]["secretEnv"] = {"GH_TOKEN": {"secretName": "gh", "key": "token"}}
    load(raw)


def test_a_token_in_helm_values_is_refused_under_any_key():
    raw = stack_raw("staging")
    raw.setdefault("monitoring", {}).setdefault("helmValues", {})["kubePrometheusStack"] = {
        "alertmanager": {"config": {"global": {"slack_channel_note": SLACK}}}}
    issues = _refused(raw)
    assert "a Slack token" in issues["monitoring.helmValues.kubePrometheusStack.alertmanager.config.global."
                                     "slack_channel_note"]


# ---------------------------------------------------------------------------------------------- the policy pack
def _deployment(container):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app", "namespace": "ml"},
            "spec": {"template": {"spec": {"containers": [container]}}}}


def _secrets_found(obj):
    found = run_policies([RegisteredResource("kubernetes:apps/v1:Deployment", "ml/app", obj)],
                         policies=[by_id("container-no-plaintext-secrets")])
    return [v.message for v in found if v.mandatory]


def test_the_pack_finds_credentials_in_env_values_and_args_with_the_field_path():
    obj = _deployment({"name": "app", "image": "registry.example.com/app:1",
                       "env": [{"name": "LOG_LEVEL", "value": "info"},
                               {"name": "DATABASE_URL", "value": "postgresql://app:Sup3rS3cret@db/app"}],
                       "args": ["--verbose", f"--token={NVIDIA}"]})
    assert _secrets_found(obj) == [
        "Deployment ml/app container app: env DATABASE_URL holds a URL with a user:password@ part "
        "at spec.template.spec.containers[0].env[1].value",
        "Deployment ml/app container app: args[1] holds an NVIDIA API key at spec.template.spec.containers[0].args[1]"]


def test_the_pack_leaves_references_and_placeholders_in_urls_alone():
    obj = _deployment({"name": "app", "image": "registry.example.com/app:1",
                       "env": [{"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}},
                               {"name": "DATABASE_URL", "value": "postgresql://app:$(DB_PASSWORD)@db/app"},
                               {"name": "CACHE_URL", "value": "redis://cache@redis:6379/0"},
                               {"name": "DOC_URL", "value": "postgresql://app:<password>@db/app"},
                               {"name": "HF_TOKEN", "value": "$(HF_TOKEN_FROM_SECRET)"}]})
    assert _secrets_found(obj) == []


def test_a_shell_variable_under_a_secret_name_in_env_is_refused_not_taken_for_a_reference():
    """Kubernetes expands $(NAME) in env values, not $NAME or ${NAME}: the pod would get the text."""
    for value in ("$HF_TOKEN", "${HF_TOKEN}"):
        raw = stack_raw("dev")
        raw["workloads"][0].setdefault("env", {})["HF_TOKEN"] = value
        message = _refused(raw)["workloads[0].env.HF_TOKEN"]
        assert message.startswith(f"{value!r} is not expanded by Kubernetes (only $(NAME) is)") and "secretEnv" in \
            message
    raw = stack_raw("dev")
    raw["workloads"][0].setdefault("env", {})["MODEL_PATH"] = "$MODEL_DIR"  # no secret name: no finding
    load(raw)
