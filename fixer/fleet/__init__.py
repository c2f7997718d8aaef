"""Fleet triage: every traceback in many job logs, grouped by cause and by fingerprint (`fixer scan`)."""
