"""duplexeval: a reproducibility bundle for full-duplex speech language model benchmarks.

The public surface is small on purpose; subpackages mirror the data flow
(specs -> scenes -> runner -> judges -> reports).
"""

__version__ = "0.1.0"
