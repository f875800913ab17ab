"""Pure image math on numpy arrays: no I/O, no HTTP, no model sessions."""
