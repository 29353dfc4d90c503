"""The project as a whole: import layers, public surface, cold start, the docs and CI."""
