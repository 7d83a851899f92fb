"""Recordings made outside duplexeval: checked against the stimulus, imported as a run, scored like any run.

`checks` refuses audio no family can score (NaN/inf samples, a rate out of range, a file
shorter than its declared events), shared by every importer, data and recordings alike;
`align` checks a file's user channel against the stimulus by cross-correlation;
`run_folder` writes the run folder of imported recordings (marked as recorded elsewhere). Which items a
benchmark expects and how its files are named is its family's (e.g.
`duplexeval.benchmarks.mtr.recordings`).
"""
