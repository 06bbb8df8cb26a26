"""Catalogs: the single source of truth for GPU hardware, sharing modes, metrics and pinned versions.

Components, config validation, policies, the CLI, docs and tests all read these modules; no other module
spells a GPU label, resource name, metric series or chart version.
"""
