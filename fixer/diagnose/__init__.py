"""Live diagnostics: probes that confirm or rule out a cause on the user's machine (issue in progress:
the checkpoint probe is here; environment and object probes come next)."""
