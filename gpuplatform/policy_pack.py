"""A ready policy-pack folder for another project: ``gpuplatform policy-pack init DIR``.

The installed package carries the policies (``gpuplatform.policies``) but the Pulumi CLI needs a folder with a
``PulumiPolicy.yaml`` and a program to run. This writes one that serves exactly the installed release:

* ``PulumiPolicy.yaml``: runtime ``python`` with the ``virtualenv`` option (``venv``, relative to the folder: the
  language host gives a policy pack no default virtualenv), and ``version``, the installed package's version;
* ``__main__.py``: serves :func:`gpuplatform.policies.pack.build_pack`;
* ``requirements.txt``: gpu-platform from where this release really comes from (below), and the pack's own runtime
  (``pulumi``, ``pulumi-policy``, ``pyyaml``) pinned to the versions installed here, so the CLI path judges exactly
  what ``gpuplatform check`` judges in the same CI job;
* ``strict.json``: the pack config that raises every hardening policy to mandatory (as ``check --strict``);
* ``.gitignore``: the virtualenv.

Where the pack gets gpu-platform
--------------------------------
Never by its bare name: gpu-platform is not published on PyPI, so ``gpu-platform==X`` fails there today, and whoever
registers the name later would have their code installed by every CI that runs such a pack (dependency confusion).
The source is read from the installed distribution's ``direct_url.json`` (PEP 610, now the PyPA "Direct URL Data
Structure" specification: written only for an install from a URL, a path or a VCS, never for one by name), or named
with ``--source`` / ``--index-url``:

* a wheel or sdist on this machine is copied into the pack folder and named by its relative path
  (``./gpu_platform-X-py3-none-any.whl``). An absolute ``file://`` URL names the developer's disk, which CI does not
  have; pip resolves a relative path against the directory it runs in (pip ``src/pip/_internal/req/
  constructors.py``, ``parse_req_from_line``), so the pack is installed from its own folder. No ``--hash``: one
  ``--hash`` puts pip in hash-checking mode for every requirement, dependencies included (pip docs, "Secure
  installs"), which a pack written offline cannot satisfy; and the wheel is committed in the same change as the line
  that names it, so a hash there would guard nothing the commit does not. Its sha256 is written beside it for a
  reviewer to compare with the release's;
* a wheel or sdist at an http(s) URL: ``gpu-platform @ URL#sha256=...`` (a PEP 508 URL requirement). pip checks the
  hash in the URL of a requirement it was given without entering hash-checking mode (pip ``src/pip/_internal/req/
  req_install.py``, ``InstallRequirement.hashes``), and records the hash of what it installed
  (``archive_info.hashes``);
* a VCS checkout: ``gpu-platform @ git+URL@<commit>``, the commit pip recorded (``vcs_info.commit_id``), not the
  branch or tag that was asked for, which can move;
* ``--index-url URL``: the index your organisation publishes gpu-platform to. The file starts with ``--index-url``,
  so every requirement of the pack comes from that index only; never ``--extra-index-url``, since pip gives the
  indexes no priority and takes the best match from any of them (pip docs, ``pip install``, "Finding Packages");
* a local directory or editable install, a clone on this machine, or an install by name (no ``direct_url.json``):
  nothing CI could reach or tell apart from an impostor, so init refuses and names the options.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Optional, Union
from urllib.parse import unquote, urlsplit

DISTRIBUTION = "gpu-platform"
PACK_RUNTIME = ("pulumi", "pulumi-policy", "pyyaml")
PUBLIC_INDEX_HOSTS = ("pypi.org", "test.pypi.org", "pypi.python.org", "files.pythonhosted.org")
"""Public indexes gpu-platform is not published on: an ``--index-url`` there would pin the bare name where anyone
can register it."""
ARCHIVE_NAME = re.compile(r"^gpu[-_.]platform-(?P<version>[^-]+?)(?:-[^/]+\.whl|\.tar\.gz|\.zip)$", re.IGNORECASE)
"""A wheel (``{name}-{version}(-{build})?-{tags}.whl``, PyPA "Binary distribution format") or sdist
(``{name}-{version}.tar.gz``) of gpu-platform; the name in either spelling setuptools has used."""
GIT_COMMIT = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
"""A full SHA-1 or SHA-256 object name: the one git revision no push can move."""
HASH_NAMES = ("sha256", "sha384", "sha512")
ENV_USERINFO = re.compile(r"^\$\{[A-Z0-9_]+\}(?::\$\{[A-Z0-9_]+\})?$")
"""Credentials in a URL as environment variables, which pip expands in requirements files (pip docs, "Requirements
File Format", "Using environment variables"; PEP 610 allows them in a recorded URL for the same reason)."""


class PackInitError(Exception):
    """DIR cannot take the pack, or where CI gets gpu-platform is unknown; the message says why."""


@dataclass(frozen=True)
class PackageSource:
    """How the pack's requirements.txt installs gpu-platform."""

    requirement: str
    """The requirements.txt line."""
    what: str
    """The source in words, for the command's output and the file's comment."""
    index_url: Optional[str] = None
    """``--index-url`` for the whole file."""
    vendored: Optional[Path] = None
    """A local archive copied into the pack folder; ``requirement`` names it relative to the folder."""
    sha256: Optional[str] = None


SOURCE_OPTIONS = ("name the source CI installs it from: --source FILE (a gpu-platform wheel or sdist, e.g. built "
                  "with `pip wheel --no-deps -w dist <checkout>`; it is copied into the pack folder), --source "
                  "URL#sha256=HASH (an archive on your server), --source git+https://HOST/ORG/gpu-platform.git@COMMIT, "
                  "or --index-url URL (the package index your organisation publishes gpu-platform to)")


def installed_version(dist: str = DISTRIBUTION) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        raise PackInitError(f"{dist} is not installed in this environment ({dist!r} has no distribution "
                            f"metadata); install the release the pack should run first") from None


def _digest(path: Path, algorithm: str = "sha256") -> str:
    digest = hashlib.new(algorithm)
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _archive_version(name: str, where: str) -> str:
    m = ARCHIVE_NAME.match(name)
    if not m:
        raise PackInitError(f"{where}: {name!r} is not a gpu-platform wheel or sdist (allowed: "
                            f"gpu_platform-<version>-<tags>.whl, gpu_platform-<version>.tar.gz)")
    return m.group("version")


def _same_release(found: str, version: str, where: str) -> None:
    if found != version:
        raise PackInitError(f"{where} is gpu-platform {found}, but {version} is installed here; the pack must serve "
                            f"the release `gpuplatform check` runs: install {found} first, or name the {version} "
                            f"archive")


def local_archive(path: Path, version: str, recorded: Optional[tuple[str, str]] = None) -> PackageSource:
    """A wheel or sdist on this machine, copied into the pack; ``recorded``: the hash pip recorded at install."""
    if not path.is_file():
        raise PackInitError(f"{str(path)!r} does not exist (or is not a file), so it cannot be copied into the pack; "
                            + SOURCE_OPTIONS)
    _same_release(_archive_version(path.name, str(path)), version, str(path))
    sha256 = _digest(path)
    if recorded and _digest(path, recorded[0]) != recorded[1]:
        raise PackInitError(f"{str(path)!r} changed since gpu-platform {version} was installed from it ({recorded[0]} "
                            f"differs from the one pip recorded); reinstall from it, or " + SOURCE_OPTIONS)
    return PackageSource(f"./{path.name}", f"the {'wheel' if path.suffix == '.whl' else 'sdist'} {path.name} "
                         f"(sha256 {sha256}), copied into the pack folder", vendored=path, sha256=sha256)


def remote_archive(url: str, algorithm: str, digest: str, version: str) -> PackageSource:
    name = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    _same_release(_archive_version(name, url), version, url)
    return PackageSource(f"{DISTRIBUTION} @ {url}#{algorithm}={digest}", f"{url} ({algorithm} {digest})")


def vcs_checkout(vcs: str, url: str, commit: str, subdirectory: Optional[str] = None) -> PackageSource:
    line = f"{DISTRIBUTION} @ {vcs}+{url}@{commit}" + (f"#subdirectory={subdirectory}" if subdirectory else "")
    return PackageSource(line, f"{vcs}+{url} at commit {commit}")


def _recorded_hash(archive_info: dict) -> Optional[tuple[str, str]]:
    hashes = dict(archive_info.get("hashes") or {})
    legacy = str(archive_info.get("hash") or "")  # ``<algorithm>=<hex>``, the field before ``hashes``
    if "=" in legacy:
        hashes.setdefault(*legacy.split("=", 1))
    return next(((name, str(hashes[name])) for name in HASH_NAMES if hashes.get(name)), None)


def _file_path(url: str) -> Path:
    parts = urlsplit(url)
    return Path(unquote(parts.path))


def source_from_direct_url(text: Optional[str], version: str) -> PackageSource:
    """The pin of what pip installed, from the distribution's ``direct_url.json`` (``None``: installed by name)."""
    if not text:
        raise PackInitError(
            f"{DISTRIBUTION} {version} was installed by name, from a package index or --find-links (its metadata "
            f"records no direct URL, PEP 610), so where CI would get it is unknown, and the bare name "
            f"'{DISTRIBUTION}=={version}' resolves on a public index to whoever registers it; " + SOURCE_OPTIONS)
    try:
        info = json.loads(text)
    except json.JSONDecodeError:
        info = None
    url = info.get("url") if isinstance(info, dict) else None
    if not isinstance(url, str) or not url:
        raise PackInitError(f"{DISTRIBUTION} {version} has an unreadable direct_url.json; " + SOURCE_OPTIONS)
    if isinstance(info.get("vcs_info"), dict):
        vcs = info["vcs_info"]
        if url.startswith("file:"):
            raise PackInitError(f"{DISTRIBUTION} {version} is installed from the {vcs.get('vcs', 'VCS')} clone "
                                f"{str(_file_path(url))!r} on this machine, which CI cannot reach; " + SOURCE_OPTIONS)
        if not vcs.get("vcs") or not vcs.get("commit_id"):
            raise PackInitError(f"{DISTRIBUTION} {version} was installed from {url}, but no commit was recorded; "
                                + SOURCE_OPTIONS)
        return vcs_checkout(str(vcs["vcs"]), url, str(vcs["commit_id"]), info.get("subdirectory"))
    if isinstance(info.get("archive_info"), dict):
        recorded = _recorded_hash(info["archive_info"])
        if url.startswith("file:"):
            return local_archive(_file_path(url), version, recorded)
        if not recorded:
            raise PackInitError(f"{DISTRIBUTION} {version} was installed from {url}, but no hash of it was recorded "
                                f"(--source {url}#sha256=HASH pins it); " + SOURCE_OPTIONS)
        return remote_archive(url, *recorded, version)
    editable = isinstance(info.get("dir_info"), dict) and info["dir_info"].get("editable")
    raise PackInitError(f"{DISTRIBUTION} {version} is installed from the directory {str(_file_path(url))!r}"
                        f"{' (editable)' if editable else ''}, which exists on this machine only; " + SOURCE_OPTIONS)


def source_from_option(source: str, version: str) -> PackageSource:
    """``--source``: an archive file or URL, or a git URL at a commit."""
    if source.startswith("git+"):
        rest, _, fragment = source.partition("#")
        url, at, rev = rest[len("git+"):].rpartition("@")
        if not at or "/" in rev or not GIT_COMMIT.match(rev):
            raise PackInitError(f"--source {source!r}: a git URL must end in @<full commit id> (a branch or tag "
                                f"can be moved to other code; `git rev-parse <tag>` gives the commit)")
        if url.startswith("file:") or "://" not in url:
            raise PackInitError(f"--source {source!r}: {url!r} is not a URL CI can reach (allowed: git+https://..., "
                                f"git+ssh://...)")
        sub = fragment.removeprefix("subdirectory=") if fragment.startswith("subdirectory=") else None
        return vcs_checkout("git", url, rev, sub)
    if re.match(r"^https?://", source, re.IGNORECASE):
        url, _, fragment = source.partition("#")
        algorithm, _, digest = fragment.partition("=")
        if algorithm not in HASH_NAMES or not re.fullmatch(r"[0-9a-f]{64,128}", digest):
            raise PackInitError(f"--source {source!r}: an archive URL needs its hash, {url}#sha256=<hex> (`pip hash "
                                f"FILE` prints it), so CI installs exactly that file")
        return remote_archive(url, algorithm, digest, version)
    if re.match(r"^[a-z][a-z0-9+.-]*://", source, re.IGNORECASE) and not source.startswith("file:"):
        raise PackInitError(f"--source {source!r}: allowed: a wheel or sdist path, https://...#sha256=HASH, "
                            f"git+https://...@COMMIT")
    return local_archive(_file_path(source) if source.startswith("file:") else Path(source), version)


def source_from_index(index_url: str, version: str) -> PackageSource:
    """``--index-url``: the index gpu-platform is published to, for every requirement of the pack."""
    parts = urlsplit(index_url)
    if parts.scheme != "https" or not parts.hostname:
        raise PackInitError(f"--index-url {index_url!r}: allowed: an https:// URL of a package index (the "
                            f"simple API, e.g. https://pkgs.example.com/simple)")
    if parts.hostname.lower() in PUBLIC_INDEX_HOSTS:
        raise PackInitError(f"--index-url {index_url!r}: gpu-platform is not published on {parts.hostname}, where "
                            f"anyone can register the name; name your organisation's index, or --source")
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    if userinfo and not ENV_USERINFO.match(userinfo):
        raise PackInitError("--index-url: the URL carries credentials, which would be committed with the pack; "
                            "write them as environment variables (https://${INDEX_USER}:${INDEX_TOKEN}@host/...), "
                            "which pip expands")
    return PackageSource(f"{DISTRIBUTION}=={version}", f"{DISTRIBUTION}=={version} from the index {index_url} only",
                         index_url=index_url)


def package_source(source: Optional[str] = None, index_url: Optional[str] = None) -> PackageSource:
    """Where the pack's CI gets gpu-platform: what the user names, else what this environment was installed from."""
    version = installed_version()
    if source and index_url:
        raise PackInitError("--source and --index-url name two sources; allowed: one of them")
    if source:
        return source_from_option(source, version)
    if index_url:
        return source_from_index(index_url, version)
    try:
        direct = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except OSError:
        direct = None
    return source_from_direct_url(direct, version)


def pack_files(source: PackageSource) -> dict[str, Union[str, bytes]]:
    """File name -> content of the pack folder for the installed release, gpu-platform from ``source``."""
    from gpuplatform.policies.registry import strict_config
    from gpuplatform.policies import pack  # noqa: F401  (registers every policy)

    version = installed_version()
    project = (
        "# Policy pack of gpu-platform " + version + ", for `pulumi preview --policy-pack <this folder>`.\n"
        "# Written by `gpuplatform policy-pack init`; run it again after upgrading gpu-platform.\n"
        "runtime:\n"
        "  name: python\n"
        "  options:\n"
        "    # Relative to this folder. Create it once, in this folder (requirements.txt names files relative to it):\n"
        "    #   python3 -m venv venv && venv/bin/pip install -r requirements.txt\n"
        "    virtualenv: venv\n"
        f"version: {version}\n"
        "description: GPU inference platform policies (GPU sharing semantics, custom-metrics autoscaling chain, "
        "security, reliability)\n")
    main = ('"""Entry point the Pulumi CLI runs for this folder: the pack of the installed gpu-platform."""\n'
            "from gpuplatform.policies.pack import build_pack\n\n"
            "build_pack()\n")
    lines = [f"# gpu-platform {version}, the release `gpuplatform check` runs in the same CI job: {source.what}.",
             "# Never its bare name on a public index (it is not published there). Install from this folder:",
             "#   python3 -m venv venv && venv/bin/pip install -r requirements.txt"]
    if source.index_url:
        lines += ["# every requirement from this index only (an --extra-index-url would let any index win)",
                  f"--index-url {source.index_url}"]
    lines.append(source.requirement)
    lines.append("# the pack's runtime, as installed when this folder was written")
    lines += [f"{name}=={installed_version(name)}" for name in PACK_RUNTIME]
    files: dict[str, Union[str, bytes]] = {
        "PulumiPolicy.yaml": project, "__main__.py": main, "requirements.txt": "\n".join(lines) + "\n",
        "strict.json": json.dumps(strict_config(), indent=2) + "\n", ".gitignore": "venv/\n"}
    if source.vendored:
        files[source.vendored.name] = source.vendored.read_bytes()
        # a repository that ignores archives (*.whl, dist/) must still commit this one: a pattern in a deeper
        # .gitignore overrides the ones above it (git docs, gitignore)
        files[".gitignore"] += f"# the gpu-platform release requirements.txt names\n!/{source.vendored.name}\n"
    return files


def _stale_archives(root: Path, keep: dict) -> list[Path]:
    """Archives of gpu-platform an earlier init copied here that the new requirements no longer name."""
    if not root.is_dir():
        return []
    return [p for p in root.iterdir() if p.is_file() and ARCHIVE_NAME.match(p.name) and p.name not in keep]


def init_pack(directory: str | Path, force: bool = False, source: Optional[PackageSource] = None) -> list[Path]:
    """Write the pack folder; a file that exists with other content is kept unless ``force``."""
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise PackInitError(f"{str(root)!r} exists and is not a directory")
    files = pack_files(source or package_source())

    def differs(name: str) -> bool:
        path, content = root / name, files[name]
        if not path.is_file():
            return path.exists()
        return path.read_bytes() != (content if isinstance(content, bytes) else content.encode())

    clashes = [name for name in files if differs(name)]
    if clashes and not force:
        raise PackInitError(f"{str(root)!r} already has {', '.join(clashes)} with other content; "
                            f"give --force to overwrite them")
    try:
        root.mkdir(parents=True, exist_ok=True)
        for stale in _stale_archives(root, files):
            stale.unlink()
        written = []
        for name, content in files.items():
            if isinstance(content, bytes):
                (root / name).write_bytes(content)
            else:
                (root / name).write_text(content)
            written.append(root / name)
    except OSError as exc:
        raise PackInitError(f"cannot write the pack to {str(root)!r}: {exc.strerror or exc}") from None
    return written


def main(directory: str, force: bool, source: Optional[str] = None, index_url: Optional[str] = None,
         out=None) -> Optional[int]:
    import sys

    out = out or sys.stdout
    pinned = package_source(source, index_url)
    written = init_pack(directory, force, pinned)
    out.write(f"wrote the gpu-platform {installed_version()} policy pack to {directory}: "
              f"{', '.join(p.name for p in written)}\n"
              f"  gpu-platform from {pinned.what}\n"
              f"  cd {directory} && python3 -m venv venv && venv/bin/pip install -r requirements.txt\n"
              f"  pulumi preview --policy-pack {directory} [--policy-pack-config {directory}/strict.json]\n")
    return 0


def config_reference() -> str:
    """The pack's configurable properties as the docs table (docs/policies.md, "Pack configuration")."""
    from gpuplatform.policies.pack import POLICY_DEFS

    rows = ["| Property | Policy | Type | Default | Meaning |", "|---|---|---|---|---|"]
    for p in POLICY_DEFS:
        for key, schema in p.config.items():
            default = json.dumps(schema.get("default")).replace("|", "\\|")
            rows.append(f"| `{key}` | `{p.id}` | {schema.get('type', '')} | `{default}` | "
                        f"{schema.get('description', '')} |")
    return "\n".join(rows)
