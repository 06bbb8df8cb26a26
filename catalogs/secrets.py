"""What a credential written in plain text looks like, wherever it hides: a secret-looking name (``HF_TOKEN``,
``adminPassword``), a URL that carries one (``postgresql://user:password@host/db``, ``?access_token=``, an
incoming-webhook path), or a token whose issuer gives it a recognisable form (``hf_``, ``ghp_``, ``AKIA``...).

One catalog for both sides: config validation refuses a stack whose ``env``, ``command``/``args`` or
``helmValues`` hold one (components/validation), and the policy pack reports the same in any manifest
(``container-no-plaintext-secrets``, ``helm-values-no-plaintext-secrets``).

What is *not* a credential, by decision:

* a reference: Kubernetes ``$(VAR)`` (expanded from the container's environment, where a Secret can put it),
  shell ``${VAR}``/``$VAR``, a Helm/Go template action ``{{ ... }}``: they name where the secret is;
* a URL with a user but no password (``user@host``, ``user:@host``);
* a placeholder in a URL's password (``<password>``, ``***``): the URL does not work as written and nothing
  leaks; a real password typed over it is then found;
* an issuer's documented example (AWS's ``AKIAIOSFODNN7EXAMPLE``).

A guessable default password (``changeme``, ``admin``) *is* a credential: it opens the database it is written
for. A value under a secret-looking name is judged by the name whatever it holds, placeholders included (the
key is where a real token goes), except a pure reference.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

SECRET_ENV_PATTERN = (r"(?i)^(?!.*_(?:FILE|PATH|DIR|NAME)$).*?(?:^|_)"
                      r"(?:PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)(?:_|$)")
"""Environment variable names whose values must come from a Secret, never a literal. Matched on whole
``_``-separated words (``HF_TOKEN``, ``OPENAI_API_KEY``, ``AWS_SECRET_ACCESS_KEY``), so that settings such as
``TOKENIZERS_PARALLELISM`` (Hugging Face tokenizers, set by most vLLM/TGI manifests) are not mistaken for
secrets, and names of files or objects that hold one (``*_TOKEN_FILE``, ``*_SECRET_NAME``) are not either."""

REFERENCE_KEY = re.compile(r"(?i)(?:^EXISTING_|_(?:REF|ENABLED|ENABLE)$|(?:^|_)FROM_SECRETS?$|"
                           r"(?:PASSWORD|PASSWD|TOKEN|CREDENTIALS?)_KEY$)")
"""Keys that name where a secret is (an existing Secret, a key inside one, a reference), not the secret."""

SECRET_URL_KEY = re.compile(r"(?i)(?:^|_)(?:WEBHOOK_URL|SLACK_API_URL|ROUTING_KEY|SERVICE_KEY|INTEGRATION_KEY)$")
"""Keys whose value is itself the credential: Alertmanager marks them ``<secret>`` in its configuration reference
(prometheus.io/docs/alerting/latest/configuration: ``slack_api_url``, ``webhook_url`` of Microsoft Teams and
Discord, PagerDuty ``routing_key``/``service_key``; each has a ``*_file`` form that reads it from a mounted
Secret), and the same key in other charts' values: whoever holds the URL can post to the channel."""
SECRET_QUERY_PARAMETER = re.compile(r"(?i)^(?:access_?token|token|api_?key|key|secret|signature|sig|password)$")
"""URL query parameters that carry a credential (a DingTalk robot's ``access_token``, a signed URL's ``signature``)."""
INCOMING_WEBHOOK = re.compile(r"(?i)^(?:hooks\.slack\.com/services/|[a-z0-9.-]*\.webhook\.office\.com/|"
                              r"(?:discord|discordapp)\.com/api/webhooks/)")
"""Incoming-webhook URLs whose path is the credential (Slack's ``hooks.slack.com/services/...``, Microsoft Teams',
Discord's): Alertmanager marks the keys holding them ``<secret>``, under whichever key a chart puts them."""

REFERENCE = re.compile(r"^(?:\$\([A-Za-z_][A-Za-z0-9_.-]*\)|\$\{[^{}]+\}|\$[A-Za-z_][A-Za-z0-9_]*|\{\{.*\}\})$",
                       re.DOTALL)
"""A value that is a reference as a whole: Kubernetes ``$(VAR)`` (Container ``env``/``args``: "Variable references
$(VAR_NAME) are expanded using the previously defined environment variables"), shell ``${VAR}``/``$VAR``, a
Helm/Go template action."""
PLACEHOLDER = re.compile(r"^(?:<[^<>]*>|\*+|x{3,}|X{3,})$")
"""A stand-in for a password: ``<password>``, ``***`` (masked), ``xxxx``."""
URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]*(?:<[^<>\s]*>[^\s'\"<>`]*)*")
"""A URL inside free text (a shell script, a JDBC option): scheme, ``://``, up to white space or a quote; a
``<placeholder>`` inside it stays part of it."""


@dataclass(frozen=True)
class TokenFormat:
    """A credential its issuer gives a fixed, recognisable form."""

    name: str
    """How a message names it: ``a Hugging Face token``."""
    pattern: re.Pattern
    source: str
    """Where the form is documented (the issuer), and the public secret-scanner rule that detects it."""


TOKEN_FORMATS: tuple[TokenFormat, ...] = (
    # "hf_" then 34 letters (and digits, in the scanners' reading); organisation tokens "api_org_" the same
    TokenFormat("a Hugging Face token", re.compile(r"(?<![A-Za-z0-9_])(?:hf|api_org)_[A-Za-z0-9]{34}(?![A-Za-z0-9])"),
                "huggingface.co/docs/hub/security-tokens (User Access Tokens start with hf_); gitleaks "
                "cmd/generate/config/rules/huggingface.go (huggingface-access-token, "
                "huggingface-organization-api-token)"),
    # every OpenAI key carries "T3BlbkFJ" (base64 of "OpenAI") between two random runs; project, service-account
    # and admin keys say so after "sk-"
    TokenFormat("an OpenAI API key", re.compile(r"(?<![A-Za-z0-9_-])sk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{20,}"
                                                r"T3BlbkFJ[A-Za-z0-9_-]{20,}"),
                "platform.openai.com/docs/api-reference/authentication (sk- keys, project keys); gitleaks "
                "cmd/generate/config/rules/openai.go (openai-api-key)"),
    # classic personal access, OAuth, user-to-server, server-to-server and refresh tokens: a 3-letter prefix, "_",
    # 36 alphanumerics; fine-grained personal access tokens "github_pat_" and 82 word characters
    TokenFormat("a GitHub token", re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_\w{82})"
                                             r"(?![A-Za-z0-9])"),
                "docs.github.com/authentication (About authentication to GitHub: GitHub's token formats, ghp_ gho_ "
                "ghu_ ghs_ ghr_ github_pat_); gitleaks cmd/generate/config/rules/github.go"),
    # long-term (AKIA) and temporary (ASIA) access key ids: the prefix and 16 upper-case letters or digits
    TokenFormat("an AWS access key id", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)(?![A-Z0-9]*EXAMPLE)[A-Z0-9]{16}"
                                                   r"(?![A-Z0-9])"),
                "docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html (unique ID prefixes: AKIA access "
                "key, ASIA temporary access key); gitleaks cmd/generate/config/rules/aws.go (aws-access-token)"),
    # bot (xoxb), user (xoxp), app-configuration (xoxa), refresh (xoxr) and legacy (xoxs) tokens
    TokenFormat("a Slack token", re.compile(r"(?<![A-Za-z0-9])xox[baprs]-[A-Za-z0-9-]{10,}"),
                "api.slack.com/authentication/token-types; gitleaks cmd/generate/config/rules/slack.go "
                "(slack-bot-token, slack-user-token, slack-legacy-workspace-token)"),
    # NVIDIA API keys (build.nvidia.com, and NGC personal keys of the same form): "nvapi-" and a random run
    TokenFormat("an NVIDIA API key", re.compile(r"(?<![A-Za-z0-9_-])nvapi-[A-Za-z0-9_-]{20,}"),
                "docs.nvidia.com/nemo/retriever/latest/extraction/api-keys (NVIDIA_API_KEY: keys start with "
                "nvapi-); docs.nvidia.com/ngc (Generating a personal API key)"),
)
"""Token formats found in any value, whatever its key: a token under an innocent name (``MODEL_ARGS``, a command
line) is still a token. Each pattern is anchored at the edges of the token so that a longer word containing one
by chance is not read as one."""


def is_reference(value: Any) -> bool:
    """Whether ``value`` as a whole names where a secret is rather than holding one (:data:`REFERENCE`)."""
    return isinstance(value, str) and bool(REFERENCE.match(value.strip()))


KUBERNETES_REFERENCE = re.compile(r"^\$\([A-Za-z_][A-Za-z0-9_.-]*\)$")
"""The one reference Kubernetes expands in a container's ``env`` values, ``command`` and ``args``: ``$(VAR)``
(Container API reference: "Variable references $(VAR_NAME) are expanded using the previously defined environment
variables in the container"; "$$(VAR_NAME)" escapes it). ``$VAR`` and ``${VAR}`` are not expanded there: the
container receives the characters as written, unless a shell it runs reads them (``sh -c``)."""
SHELL_VARIABLE = re.compile(r"^\$(?:\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)$")
"""A shell variable as a whole value: ``$HF_TOKEN``, ``${HF_TOKEN}``."""


def unexpanded_variable(value: Any) -> Optional[str]:
    """The shell variable a Kubernetes ``env`` value or exec-form argument holds as a whole (``$HF_TOKEN``), which
    Kubernetes passes on as these very characters (:data:`KUBERNETES_REFERENCE`); None otherwise. Such a value is
    either sent as is (the server gets the text ``$HF_TOKEN``: a gated model fails to download, an API key is
    public) or substituted by a tool before apply (the token then sits in the manifest in plain text)."""
    if isinstance(value, str) and SHELL_VARIABLE.match(value.strip()):
        return value.strip()
    return None


SECRET_FLAG_NAME = re.compile(r"(?i)(?:^|[-_])(?:API[-_]?KEY|ACCESS[-_]?KEY|PRIVATE[-_]?KEY|TOKEN|PASSWORD|PASSWD|"
                              r"SECRET|CREDENTIALS?)$")
"""Flags that take a credential: the name *ends* with one (``--api-key``, ``--hf-token``, ``--client-secret``);
a flag that only mentions one (``--secret-field-selector``, ``--token-file``) configures something else."""
SECRET_FLAG = re.compile(r"^--?([A-Za-z][A-Za-z0-9_-]*)(?:=(.*))?$", re.DOTALL)
"""A command-line flag, ``--api-key`` or ``--api-key=VALUE``."""
FLAG_IN_TEXT = re.compile(r"""(?:^|\s)--?([A-Za-z][A-Za-z0-9_-]*)(?:=|\s+)("[^"]*"|'[^']*'|[^\s"'-][^\s"']*)""")
"""A flag and its value inside a shell script: ``--api-key sk-123``, ``--api-key='sk-123'``."""


def _literal_flag_value(value: str, shell: bool) -> bool:
    """Whether a flag's value is written out: not empty, no placeholder, no reference (a shell expands ``$VAR``
    in a script; only ``$(VAR)`` is a reference in an exec-form argument, :func:`unexpanded_variable` says the
    rest)."""
    text = value.strip().strip("'\"")
    if not text or PLACEHOLDER.match(text) or KUBERNETES_REFERENCE.match(text) or REFERENCE.match(text) and (
            shell or not SHELL_VARIABLE.match(text)):
        return False
    return not (shell and "$" in text)


def flag_credentials(words: list) -> list[tuple[int, str, str]]:
    """(index of the word holding the value, flag, what) of each flag with a secret-looking name (``--api-key``,
    ``--hf-token``, ``--password``: :data:`SECRET_FLAG_NAME`) given a value written out in a command line, as exec-form
    words (``["--api-key", "sk-123"]``, ``["--api-key=sk-123"]``) or inside a shell script word. A value that
    is a reference (``$(VLLM_API_KEY)``; ``$VLLM_API_KEY`` inside a script) is no credential; ``$VLLM_API_KEY`` as an
    exec-form word is, as the characters the server receives."""
    out = []
    words = [w if isinstance(w, str) else "" for w in words]
    for i, word in enumerate(words):
        if any(ch.isspace() for ch in word.strip()):
            for m in FLAG_IN_TEXT.finditer(word):
                if SECRET_FLAG_NAME.search(m.group(1)) and _literal_flag_value(m.group(2), shell=True):
                    out.append((i, f"--{m.group(1)}", "a literal value"))
            continue
        m = SECRET_FLAG.match(word.strip())
        if not m or not SECRET_FLAG_NAME.search(m.group(1)):
            continue
        if m.group(2) is not None:
            value, at = m.group(2), i
        elif i + 1 < len(words) and not words[i + 1].startswith("-"):
            value, at = words[i + 1], i + 1
        else:
            continue
        var = unexpanded_variable(value)
        if var:
            out.append((at, f"--{m.group(1)}", f"the text {var!r}, which Kubernetes does not expand (only $(NAME))"))
        elif _literal_flag_value(value, shell=False):
            out.append((at, f"--{m.group(1)}", "a literal value"))
    return out


def token_format(text: str) -> Optional[TokenFormat]:
    """The first :data:`TOKEN_FORMATS` entry found anywhere in ``text``."""
    for fmt in TOKEN_FORMATS:
        if fmt.pattern.search(text):
            return fmt
    return None


def url_credential(value: str) -> Optional[str]:
    """What credential a URL written as text carries (None: none): a ``user:password@`` part whose password is
    a literal (not a reference or a placeholder), an incoming-webhook path, or a query parameter that holds a
    token or key. Parsed as clients parse it (``urllib.parse``)."""
    from urllib.parse import parse_qsl, unquote, urlsplit

    text = value.strip()
    if "://" not in text:
        return None
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    password = unquote(parts.password or "")
    if password and not is_reference(password) and not PLACEHOLDER.match(password):
        return "a user:password@ part"
    if INCOMING_WEBHOOK.match(f"{parts.hostname or ''}{parts.path}"):
        return "an incoming-webhook path"
    names = [k for k, v in parse_qsl(parts.query, keep_blank_values=True)
             if v and SECRET_QUERY_PARAMETER.match(k) and not is_reference(v) and not PLACEHOLDER.match(v)]
    return f"the query parameter {names[0]!r}" if names else None


def credential_in(text: Any) -> Optional[str]:
    """What credential ``text`` holds anywhere in it (None: none): a URL carrying one (:func:`url_credential`,
    e.g. ``"a URL with a user:password@ part"``) or a token of a known format (``"a Hugging Face token"``). Free
    text is searched: a credential inside a shell script or a ``--flag=value`` is found."""
    if not isinstance(text, str) or not text.strip() or is_reference(text):
        return None
    for url in URL_IN_TEXT.findall(text):
        what = url_credential(url)
        if what:
            return f"a URL with {what}"
    fmt = token_format(text)
    return fmt.name if fmt else None


def secret_name(key: str) -> bool:
    """Whether a key reads as a secret (:data:`SECRET_ENV_PATTERN`, :data:`SECRET_URL_KEY`) once camelCase and
    dotted names are spelled as words (``adminPassword`` -> ``ADMIN_PASSWORD``), unless it names where a secret
    is (:data:`REFERENCE_KEY`: ``existingSecret``, ``passwordKey``)."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", str(key)).replace("-", "_").replace(".", "_").upper()
    if REFERENCE_KEY.search(words):
        return False
    return bool(re.search(SECRET_ENV_PATTERN, words) or SECRET_URL_KEY.search(words))


def plaintext_secrets(values: Any, path: str = "") -> list[tuple[str, str]]:
    """(path, what) of every credential written in plain text anywhere in a nested mapping (Helm values, env):
    a non-empty string under a key that reads as a secret (:func:`secret_name`), or a credential found in any
    string value (:func:`credential_in`: a URL carrying one, a known token format). References are not secrets:
    keys naming a file, path, Secret name or existing Secret (``passwordFile``, ``existingSecret``), mappings
    (``secretKeyRef``), and values that are references (``$(VAR)``, ``{{ .Values.x }}``)."""
    out: list[tuple[str, str]] = []
    if isinstance(values, dict):
        for key, value in values.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(value, (dict, list)):
                out += plaintext_secrets(value, where)
            elif isinstance(value, str) and value.strip() and not is_reference(value):
                found = credential_in(value)
                if found:
                    out.append((where, found))
                elif secret_name(str(key)):
                    out.append((where, "a secret-looking key"))
    elif isinstance(values, list):
        for i, item in enumerate(values):
            found = credential_in(item) if isinstance(item, str) else None
            if found:
                out.append((f"{path}[{i}]", found))
            elif isinstance(item, (dict, list)):
                out += plaintext_secrets(item, f"{path}[{i}]")
    return out
