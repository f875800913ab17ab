"""The pipelines: each runs models and the pure steps of `app.imaging` in order, timing each stage.

They take decoded pixels and ready models and return results or raise domain errors
(`app.errors`); they know nothing of HTTP, so the API and the command line share them.
"""
