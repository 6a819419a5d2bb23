"""HTTP layer: the Flask app factory, one blueprint per resource, errors, logs, metrics, OpenAPI, web pages."""
