"""RQ jobs: turn deadlines, their recovery (rq cron), ladder scheduling passes and ratings."""
