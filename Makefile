# Two commands matter: `make run` (the Dagster UI) and `make test` (the whole suite).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export CODEGEN_HOME ?= $(CURDIR)/.codegen
export DAGSTER_HOME ?= $(CODEGEN_HOME)/dagster_home
HOST ?= 127.0.0.1
PORT ?= 3000

.PHONY: run test lint venv home lock clean sandbox-image sandbox-locks postgres postgres-stop

# The venv is rebuilt only when the lock or the project metadata changes.
$(STAMP): requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -e .
	@# As pip does for a regular install: a Python that writes no bytecode of its own
	@# (PYTHONDONTWRITEBYTECODE) would otherwise compile the package's source in every process.
	$(BIN)/python -m compileall -q codegen
	@touch $(STAMP)

venv: $(STAMP)

home: venv
	@mkdir -p "$(DAGSTER_HOME)"
	@$(BIN)/python -m codegen.orchestration.instance

# `dagster dev` under a small supervisor (codegen/orchestration/dev.py): SIGINT and SIGTERM
# stop it and every child it started. The CLI is then $(BIN)/codegen.
run: venv home
	$(BIN)/python -m codegen.orchestration.dev --host $(HOST) --port $(PORT)

# A local PostgreSQL server for the instance (Debian's postgresql package; data under
# $(CODEGEN_HOME)/postgres, run as the postgres user, never root; loopback only). Prints the
# URL: `eval "$(make -s postgres)"` exports DAGSTER_POSTGRES_URL, and every instance
# (make run, the daemon, the CLI) then keeps runs, event logs and schedules there.
POSTGRES_DIR ?= $(CODEGEN_HOME)/postgres
postgres: venv
	@$(BIN)/python -m codegen.orchestration.postgres start --data "$(POSTGRES_DIR)"

postgres-stop: venv
	@$(BIN)/python -m codegen.orchestration.postgres stop --data "$(POSTGRES_DIR)"

# Idempotent (CI calls it before `make test`): a no-op when the image tag and the cached
# debootstrapped root file system (also bubblewrap's root) exist; else a few minutes offline.
sandbox-image: venv
	$(BIN)/codegen sandbox build --offline

# Re-resolve the sandbox's named package sets (codegen/sandbox/image/packages.py) against PyPI
# into their committed locks, codegen/sandbox/image/locks/<set>.txt (every pin, with hashes).
sandbox-locks: venv
	$(BIN)/python -m codegen.sandbox.image.relock

# Two worker processes, each test file on one worker (its module fixtures shared): most tests
# wait on subprocesses, daemons and containers, so two cores run two files at once.
TEST_WORKERS ?= 2
test: venv
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Re-resolve every dependency from pyproject.toml into a fresh venv and pin the result.
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet --disable-pip-version-check -e '.[dev]'
	.lock-venv/bin/pip freeze --exclude-editable | grep -v '^multiagent-codegen' > requirements.lock
	rm -rf .lock-venv

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

# ---- docker deployment (codegen/deploy/docker): webserver, daemon, code server and Postgres as
# containers on this host, each run in its own container. Images are built offline.
.PHONY: deploy-images deploy-docker deploy-docker-down
deploy-images: sandbox-image
	$(BIN)/python -m codegen.deploy.images

deploy-docker: deploy-images
	$(BIN)/python -m codegen.deploy.stack up

# Keeps the volumes (CODEGEN_HOME, Postgres data); DEPLOY_DOWN_ARGS=--volumes deletes them.
deploy-docker-down: venv
	$(BIN)/python -m codegen.deploy.stack down $(DEPLOY_DOWN_ARGS)
# ---- end of docker deployment
