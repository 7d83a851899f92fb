"""Published data sets: fetched at a pinned revision, verified, located (`duplexeval data`).

`snapshot` is the pinned-snapshot mechanism shared with model weights (`duplexeval.weights`);
`sets` says which data sets exist and where each one's pin lives.
"""
