"""HTTP blueprints: parse the request, call a pipeline, encode the answer; nothing else."""
