"""napari dock widgets: thin adapters over the headless core (no numerics here)."""
