"""``gaiamesh stream``: a file of items through one long-lived team, one run, its files."""
