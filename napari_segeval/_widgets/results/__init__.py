"""The *Results* panel: browse a ``segeval evaluate`` folder. Importing this imports nothing."""
