"""WSGI entry point for gunicorn: ``gunicorn service.http.wsgi:app``."""

from .app import create_app

app = create_app()
