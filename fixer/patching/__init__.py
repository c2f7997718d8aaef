"""Patches to the user's own code: LibCST codemods, one per kind of fix, planned from a traceback.

Only `fixer patch` (and `fixer explain` when a user file is on this machine) imports LibCST.
"""
