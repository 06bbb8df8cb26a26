"""gpu-platform: one import namespace for everything the package installs.

The repository keeps the design card's layout (``components/``, ``catalogs/``, ``policies/`` at the top), and
an install maps them to ``gpuplatform.components``, ``gpuplatform.catalogs`` and ``gpuplatform.policies``
(``package-dir`` in pyproject.toml), so a consumer's own ``components/`` folder cannot shadow ours.

Run straight from a checkout (the policy pack under the Pulumi CLI, a script before ``pip install``), the same
names resolve to the top-level folders: the checkout root joins this package's search path. An installed copy
has its subpackages inside this folder and never looks outside it.
"""
from pathlib import Path as _Path

_CHECKOUT = _Path(__file__).resolve().parent.parent
_SUBPACKAGES = ("components", "catalogs", "policies")

if not all((_Path(__file__).parent / name).is_dir() for name in _SUBPACKAGES) and all(
        (_CHECKOUT / name / "__init__.py").is_file() for name in _SUBPACKAGES):
    __path__.append(str(_CHECKOUT))  # noqa: F821 - package __path__
