"""Full-Duplex-Bench (v1.0 turn-taking, v1.5 overlap handling) as a benchmark family."""
