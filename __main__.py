"""Entry point for `pulumi preview` / `pulumi up`: the program lives in gpuplatform/program.py."""
from gpuplatform.program import main

main()
