"""Store layer: matches, players, ladders and inboxes in Redis, each change one compare-and-set (no Flask, no metrics, no process configuration)."""
