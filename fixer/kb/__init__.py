"""The knowledge base as data: the entry schema, loading it into a catalog, its lint, running its
repros, and scoring it on labelled corpora."""
