"""Preprocessing and inference helpers (CT windows, intensity clipping, ...).

Submodules are imported on demand; nothing heavy is imported here.
"""
