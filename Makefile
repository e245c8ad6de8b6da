# roost: `make run` starts the daemon, `make test` runs every test.
# Both create .venv and install the pinned dependencies themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install prod run test pytest nodetest browser postgres synapse bench bench-quick lint format clean

# `make` alone installs: the venv and the pinned dependencies, then roost's byte code and
# start-up caches (bridge/cli/precompile.py), written ahead because the systemd unit's
# user cannot write the tree (without them every start compiles roost again: about twice
# the CPU). Run it again after updating roost.
.DEFAULT_GOAL := install
install: $(STAMP)
	$(BIN)/python -m bridge.cli.precompile

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || { echo "make: creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "make: installing roost and its pinned dependencies into $(VENV) (the first time takes a minute or two)"
	$(BIN)/python -m pip install --disable-pip-version-check --progress-bar on -e '.[dev]'
	@touch $(STAMP)

# `make prod`: the install for a service (README, "Run as a service"): roost and its pinned
# runtime dependencies only, none of the test and lint tools `make` adds (pytest, playwright,
# mypy, ruff, hypothesis, ...), then the same byte code and start-up caches. In a fresh
# checkout: pip removes nothing a `make` there installed before. `make run` and `make test`
# still install the dev tools on top (their stamp).
prod:
	@test -x $(BIN)/python || { echo "make: creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	@echo "make: installing roost and its pinned runtime dependencies into $(VENV)"
	$(BIN)/python -m pip install --disable-pip-version-check --progress-bar on -e .
	$(BIN)/python -m bridge.cli.precompile

run: $(STAMP)
	$(BIN)/roost serve

# Both halves always run, side by side: the node tests in the background while pytest
# runs its tests in PYTEST_WORKERS processes (pytest-xdist; twice the 2 cores, since
# most tests wait on a daemon, a server or a browser: on a quiet 2-core machine 4
# workers took 4 min 6 s against 4 min 58 s for 3, in one session; 6 took 366.7 s of
# pytest against 313.3 s for 4 on the same tree in session 32). The run fails if
# either half did.
# PYTHONDONTWRITEBYTECODE is dropped for the run: every daemon a test starts would
# otherwise compile roost from source again (about 1.5 s of CPU each), and pytest
# could not cache its rewritten test modules (in a fresh clone the controller rewrites
# them all once, before the workers start, instead of each worker rewriting all of them:
# tests/conftest.py's pytest_configure). pytest prints its slowest tests.
# Where the CPU goes, per test file (worker and children): PYTEST_ARGS="-p tests.cpu_profile",
# then `python -m tests.cpu_profile DIR` (tests/cpu_profile.py says how); `... DIR timeline`
# shows how busy the workers and the machine's cores were over the run.
PYTEST_WORKERS ?= 4
PYTEST_ARGS ?=
test: $(STAMP) browser postgres synapse
	@command -v node >/dev/null || { echo "node is required for the js/ tests"; exit 1; }
	@status=0; nodelog=$$(mktemp); \
	node --test js/test/ >$$nodelog 2>&1 & nodepid=$$!; \
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist load \
	  --durations=25 $(PYTEST_ARGS) || status=$$?; \
	if wait $$nodepid; then tail -n 9 $$nodelog | sed 's/^/node: /'; \
	else [ $$status -ne 0 ] || status=1; echo "make test: the node tests FAILED:"; cat $$nodelog; fi; \
	rm -f $$nodelog; \
	[ $$status -eq 0 ] || echo "make test: FAILED (pytest and/or the node tests; see above)"; \
	exit $$status

# The web page's browser test needs Debian's chromium; as root we install it,
# otherwise that test is skipped with a message (CI requires it).
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	  && { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium \
	       >/dev/null; } ; } || echo "make: chromium not installed; the browser test will be skipped"

# The storage tests start a throwaway PostgreSQL server (tests/storage/pg_server.py);
# as root we install Debian's postgresql when initdb is missing, otherwise those
# tests are skipped with a message (CI requires them: ROOST_REQUIRE_POSTGRES=1).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null \
	  || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	  && { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql \
	       >/dev/null; } ; } || echo "make: postgresql not installed; the PostgreSQL storage tests will be skipped"

# The Matrix tests start a real Synapse homeserver (tests/matrix/synapse_server.py) from
# its own venv, .venv-synapse (Synapse pins many packages; they stay out of .venv). Made
# once (stamp file); if the install fails those tests skip with a message (CI requires
# them: ROOST_REQUIRE_MATRIX=1).
SYNAPSE_VENV := .venv-synapse
SYNAPSE_STAMP := $(SYNAPSE_VENV)/.installed-stamp
SYNAPSE_PIN := matrix-synapse==1.163.2
synapse:
	@test -f $(SYNAPSE_STAMP) || { { test -x $(SYNAPSE_VENV)/bin/python || $(PYTHON) -m venv $(SYNAPSE_VENV); } \
	  && echo "make: installing $(SYNAPSE_PIN) into $(SYNAPSE_VENV) (once; for the Matrix tests)" \
	  && $(SYNAPSE_VENV)/bin/python -m pip install -q --disable-pip-version-check '$(SYNAPSE_PIN)' \
	  && touch $(SYNAPSE_STAMP); } || echo "make: Synapse not installed; the Matrix tests will be skipped"

pytest: $(STAMP) browser postgres synapse
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist load --durations=25 $(PYTEST_ARGS)

nodetest:
	@command -v node >/dev/null || { echo "node is required for the js/ tests"; exit 1; }
	node --test js/test/

# Every bench script as a module (`python -m bench.NAME`, never `python bench/NAME.py`:
# that would put bench/ first on sys.path). Prints each script's seconds; fails if one did.
bench: $(STAMP)
	$(BIN)/python -m bench

# Each script once in its quick mode (seconds, no thresholds): CI runs this so no bench rots.
bench-quick: $(STAMP)
	$(BIN)/python -m bench --quick

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
