"""Entry point the Pulumi CLI runs for ``--policy-pack policies``."""
import pathlib
import sys

# the CLI runs this directory as a script; the pack imports catalogs/ and components/ from the repository root
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from policies.pack import build_pack  # noqa: E402

build_pack()
