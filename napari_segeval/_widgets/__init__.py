"""napari dock widgets: thin adapters that run the headless core in worker threads.

Importing this package imports nothing (no Qt, no napari); its layering is in docs/design.md.
"""
