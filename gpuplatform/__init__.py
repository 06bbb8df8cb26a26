"""gpu-platform: one import namespace for everything the package installs.

The repository keeps its top-level folders (``components/``, ``catalogs/``, ``policies/``), and
``gpuplatform/components``, ``gpuplatform/catalogs`` and ``gpuplatform/policies`` are symbolic links to them: the
import ``gpuplatform.components.config`` names the file ``gpuplatform/components/config.py``, which is
``components/config.py``. A checkout on ``sys.path``, an editable install and the wheel resolve the same names the
same way (a wheel holds the files themselves), so a consumer's own ``components/`` folder cannot shadow ours.
"""
