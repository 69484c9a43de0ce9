"""The model picker and its Qt-free rows. Importing this package imports nothing."""
