"""The package's version: one home, read by the front door, bundles and the CLI (pyproject.toml
states the same number; tests/test_packaging.py checks they agree). Standard library only."""

__version__ = "0.1.0"
