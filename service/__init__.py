"""Love Letter Arena service, one folder per layer; dependencies point one way (docs/design.md):
``http``, ``jobs`` and ``ops`` use ``store`` and ``realtime``, which use ``engine``."""
