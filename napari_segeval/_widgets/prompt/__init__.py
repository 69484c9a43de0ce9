"""The *Prompt & propagate* tab: the panel, the prompt layers and tools, its propagation
jobs and the propagation drawn as it runs.

Importing this package imports nothing.
"""
