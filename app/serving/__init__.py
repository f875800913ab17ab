"""The serving layer: what gunicorn owns (hooks, worker class, admission, memory policy, watchdog)."""
