"""Compare mode: clean and attacked side by side. Importing this package imports nothing."""
