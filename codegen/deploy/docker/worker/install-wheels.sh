#!/bin/sh
# Runs inside a container of the Debian base with the locked wheels mounted at /wheels and no
# network; `python -m codegen.deploy.images` commits the result as the worker's dependency image.
set -eu
# Debian's python3 lacks ensurepip; pip runs straight from its own wheel instead.
pip_wheel=$(ls /wheels/pip-*.whl)
python3 -m venv --without-pip /opt/codegen
/opt/codegen/bin/python "$pip_wheel/pip" install --quiet --no-index --no-deps --no-cache-dir \
  --disable-pip-version-check "$pip_wheel"
# Bookworm's python3 is 3.11.2 and a few wheels claim >=3.11.5 (soupsieve) for no ABI reason:
# the lock was resolved for 3.11, which is what counts, so Requires-Python is not enforced.
/opt/codegen/bin/pip install --quiet --no-index --no-deps --no-cache-dir \
  --disable-pip-version-check --ignore-requires-python --find-links /wheels \
  -r /wheels/requirements.lock
