"""RQ jobs: turn timeouts (and, later, ladder scheduling and ratings)."""
