"""What the panels draw over the image. Importing this package imports nothing."""
