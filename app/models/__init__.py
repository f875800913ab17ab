"""Models: the manifest, the fetch command, the session factory and the registry.

Run `python -m app.models --help` for the fetch command.
"""
