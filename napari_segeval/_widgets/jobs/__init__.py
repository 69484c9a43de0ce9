"""The panels' jobs: runner, what ends a job, and the functions run. Imports nothing."""
