"""Model interfaces and backends: start from :mod:`napari_segeval.models.registry`.

Nothing here imports torch at package import time.
"""
