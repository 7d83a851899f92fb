"""Model-family adapters shared by the shims in images/<id>/.

A module here is copied into model images together with `duplexeval.protocol`, so it
imports only the protocol package, numpy, torch and (lazily) the model's own library;
never the rest of duplexeval (judges, runner, reports), which an image does not install.
"""
