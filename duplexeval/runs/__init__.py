"""Runs of suites: planning (suite -> jobs), the run manifest, and execution."""
