"""Scoring: rules on timelines and episodes, drivers that read recordings, aggregation."""
