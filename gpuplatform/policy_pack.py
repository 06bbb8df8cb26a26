"""A ready policy-pack folder for another project: ``gpuplatform policy-pack init DIR``.

The installed package carries the policies (``gpuplatform.policies``) but the Pulumi CLI needs a folder with a
``PulumiPolicy.yaml`` and a program to run. This writes one that serves exactly the installed release:

* ``PulumiPolicy.yaml``: runtime ``python`` with the ``virtualenv`` option (``venv``, relative to the folder: the
  language host gives a policy pack no default virtualenv), and ``version``, the installed package's version;
* ``__main__.py``: serves :func:`gpuplatform.policies.pack.build_pack`;
* ``requirements.txt``: the installed release of gpu-platform and of the pack's own runtime (``pulumi``,
  ``pulumi-policy``, ``pyyaml``), each pinned to the version installed here, so the CLI path judges exactly what
  ``gpuplatform check`` judges in the same CI job;
* ``strict.json``: the pack config that raises every hardening policy to mandatory (as ``check --strict``);
* ``.gitignore``: the virtualenv.
"""
from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Optional

DISTRIBUTION = "gpu-platform"
PACK_RUNTIME = ("pulumi", "pulumi-policy", "pyyaml")


class PackInitError(Exception):
    """DIR cannot take the pack; the message says why."""


def installed_version(dist: str = DISTRIBUTION) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        raise PackInitError(f"{dist} is not installed in this environment ({dist!r} has no distribution "
                            f"metadata); install the release the pack should run, e.g. pip install {dist}") from None


def _package_requirement(dist: str = DISTRIBUTION) -> str:
    """The requirement that reinstalls what is installed here: a VCS install stays on its commit (PEP 610
    ``direct_url.json``), anything else is pinned by version."""
    version = installed_version(dist)
    try:
        direct = metadata.distribution(dist).read_text("direct_url.json")
    except (OSError, metadata.PackageNotFoundError):
        direct = None
    if direct:
        try:
            info = json.loads(direct)
        except json.JSONDecodeError:
            info = {}
        vcs = info.get("vcs_info") or {}
        if vcs.get("vcs") == "git" and vcs.get("commit_id") and info.get("url"):
            return f"{dist} @ git+{info['url']}@{vcs['commit_id']}"
    return f"{dist}=={version}"


def pack_files() -> dict[str, str]:
    """File name -> content of the pack folder for the installed release."""
    from gpuplatform.policies.registry import strict_config
    from gpuplatform.policies import pack  # noqa: F401  (registers every policy)

    version = installed_version()
    pins = [_package_requirement()] + [f"{name}=={installed_version(name)}" for name in PACK_RUNTIME]
    project = (
        "# Policy pack of gpu-platform " + version + ", for `pulumi preview --policy-pack <this folder>`.\n"
        "# Written by `gpuplatform policy-pack init`; run it again after upgrading gpu-platform.\n"
        "runtime:\n"
        "  name: python\n"
        "  options:\n"
        "    # Relative to this folder. Create it once:\n"
        "    #   python3 -m venv venv && venv/bin/pip install -r requirements.txt\n"
        "    virtualenv: venv\n"
        f"version: {version}\n"
        "description: GPU inference platform policies (GPU sharing semantics, custom-metrics autoscaling chain, "
        "security, reliability)\n")
    main = ('"""Entry point the Pulumi CLI runs for this folder: the pack of the installed gpu-platform."""\n'
            "from gpuplatform.policies.pack import build_pack\n\n"
            "build_pack()\n")
    requirements = ("# The release `gpuplatform check` runs in the same CI job, and the pack's runtime, as installed "
                    "when this folder was written.\n" + "\n".join(pins) + "\n")
    strict = json.dumps(strict_config(), indent=2) + "\n"
    return {"PulumiPolicy.yaml": project, "__main__.py": main, "requirements.txt": requirements,
            "strict.json": strict, ".gitignore": "venv/\n"}


def init_pack(directory: str | Path, force: bool = False) -> list[Path]:
    """Write the pack folder; a file that exists with other content is kept unless ``force``."""
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise PackInitError(f"{str(root)!r} exists and is not a directory")
    files = pack_files()
    clashes = [name for name in files
               if (root / name).exists() and (root / name).read_text(errors="replace") != files[name]]
    if clashes and not force:
        raise PackInitError(f"{str(root)!r} already has {', '.join(clashes)} with other content; "
                            f"give --force to overwrite them")
    try:
        root.mkdir(parents=True, exist_ok=True)
        written = []
        for name, text in files.items():
            (root / name).write_text(text)
            written.append(root / name)
    except OSError as exc:
        raise PackInitError(f"cannot write the pack to {str(root)!r}: {exc.strerror or exc}") from None
    return written


def main(directory: str, force: bool, out=None) -> Optional[int]:
    import sys

    out = out or sys.stdout
    written = init_pack(directory, force)
    out.write(f"wrote the gpu-platform {installed_version()} policy pack to {directory}: "
              f"{', '.join(p.name for p in written)}\n"
              f"  python3 -m venv {directory}/venv && {directory}/venv/bin/pip install -r {directory}/requirements.txt\n"
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
