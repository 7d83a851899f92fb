"""Runs of suites: execution, cost estimates, outcomes, sensitivity and statistics.

The run folder's files the families also write (the planned job, job files, the manifest,
sealing and verifying) live one layer down, in duplexeval/runfolder/.
"""
