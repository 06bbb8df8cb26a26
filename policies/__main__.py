"""Entry point the Pulumi CLI runs for ``--policy-pack policies``."""
import pathlib
import sys

# The CLI runs this folder as a program, with no install of the package: the checkout root on sys.path makes
# ``gpuplatform.policies`` and ``gpuplatform.catalogs`` importable (gpuplatform/policies and gpuplatform/catalogs
# link to this folder and to catalogs/).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from gpuplatform.policies.pack import build_pack  # noqa: E402

build_pack()
