"""Live diagnostics: probes that confirm or rule out a cause on the user's machine.

`probes` names them all and imports nothing heavy; each probe module imports torch only when used.
"""
