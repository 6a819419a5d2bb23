"""RQ jobs and the worker process: turn deadlines and their dispatcher, ladder scheduling passes and ratings."""
