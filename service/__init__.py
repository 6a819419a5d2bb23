"""Love Letter Arena service: HTTP API, Redis store, RQ jobs and the rules engine."""
