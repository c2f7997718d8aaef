"""One module per codemod; each defines CODEMOD and is registered in fixer.patching.registry."""
