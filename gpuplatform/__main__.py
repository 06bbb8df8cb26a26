from gpuplatform.cli import entrypoint

entrypoint()
