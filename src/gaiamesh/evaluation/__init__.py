"""What a run is worth and what it leaves: ``metrics.json`` (RunMetrics) and the books it is
folded from, the scorers, the audit and the archive."""
