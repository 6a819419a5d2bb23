"""llsdk: Python client SDK for the Love Letter Arena HTTP API."""

__version__ = "0.1.0"
