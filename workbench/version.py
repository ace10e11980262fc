"""The package's version: its one home, read by the front door, bundles, the CLI and the build
(pyproject.toml takes it from here: ``[tool.setuptools.dynamic]``). Standard library only."""

__version__ = "0.1.0"
