"""The *Prompt & propagate* tab. Importing this package imports nothing."""
