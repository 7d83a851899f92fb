#!/bin/sh
# The install step every image of this project shares, written once: the staged build
# context puts this file beside the wheelhouse (duplexeval/containers/build.py), and each
# Dockerfile runs it right after `FROM ${BASE}`:
#
#     COPY install-wheels.sh wheels/ /tmp/wheels/
#     RUN sh /tmp/wheels/install-wheels.sh
#
# Why a script in the context and not ONBUILD lines in the base: on a GPU host BASE is an
# outside CUDA image, which has no ONBUILD lines, so the step must travel with the context.
# No network: every package comes from the wheelhouse (--no-index). requirements-nodeps.txt
# (packages whose declared dependencies are wrong or GPU-only) is optional.
set -eu
W=/tmp/wheels
python3 -m venv /opt/venv
/opt/venv/bin/pip install --no-cache-dir --no-index --find-links "$W" -r "$W/requirements.txt"
if [ -s "$W/requirements-nodeps.txt" ]; then
    /opt/venv/bin/pip install --no-cache-dir --no-index --no-deps --find-links "$W" -r "$W/requirements-nodeps.txt"
fi
rm -rf "$W"
