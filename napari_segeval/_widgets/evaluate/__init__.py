"""The *Segment*, *Attack*, *Dice* and *Export* tabs. Importing this package imports nothing."""
