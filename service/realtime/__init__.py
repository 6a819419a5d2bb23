"""Realtime layer: one Redis pub/sub subscription per process wakes the long-polls that wait on a match or an inbox."""
