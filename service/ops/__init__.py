"""Operations: the local stack (`make run`), container health checks, the house bots and gunicorn settings."""
