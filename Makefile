# Love Letter Arena: developer tasks (GNU make).
#
#   make test      lint, typecheck and run the test suite (creates .venv on first use)
#   make run       run the whole stack locally (service.run)
#   make bench     run every bench/*.py and print its numbers
#   make openapi   regenerate openapi.yaml (service.openapi)

PY    ?= python3
VENV  := .venv
VPY   := $(VENV)/bin/python
STAMP := $(VENV)/.installed.stamp

# Directories ruff/mypy look at; missing ones are skipped at run time (shell test, not make).
LINT_DIRS := service sdk tests bench examples
TYPE_DIRS := service/engine sdk/llsdk

# Print the subset of the given paths that exist (empty if none).
existing = $$(for p in $(1); do [ -e "$$p" ] && printf '%s ' "$$p"; done; true)

.PHONY: venv install test lint typecheck browser bottools bench openapi run clean

venv install: $(STAMP)

# Re-install only when a pyproject changes (or the venv is new).
$(STAMP): pyproject.toml sdk/pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -e '.[dev]' -e ./sdk
	touch $@

lint: $(STAMP)
	$(VENV)/bin/ruff check $(call existing,$(LINT_DIRS))

typecheck: $(STAMP)
	@paths="$(call existing,$(TYPE_DIRS))"; \
	if [ -z "$$paths" ]; then echo "typecheck: nothing to check yet"; \
	else echo "mypy $$paths"; $(VENV)/bin/mypy $$paths; fi

test: lint typecheck browser bottools
	$(VPY) -m pytest

# Headless Chromium for the browser tests (tests/web): Debian's `chromium`, installed only when
# /usr/bin/chromium is missing and apt-get exists (as root, or with password-less sudo). If it
# cannot be installed, the browser tests skip with a message saying so. Playwright (a dev extra)
# drives it; `playwright install` (a download of its own browsers) is never used.
browser:
	@if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
		else echo "browser: not root and no sudo: cannot install chromium (browser tests will skip)"; exit 0; fi; \
		echo "browser: installing Debian's chromium for the browser tests"; \
		export DEBIAN_FRONTEND=noninteractive; \
		$$SUDO apt-get install -y -qq chromium >/dev/null 2>&1 \
		|| { $$SUDO apt-get update -qq >/dev/null 2>&1 && $$SUDO apt-get install -y -qq chromium >/dev/null 2>&1; } \
		|| echo "browser: could not install chromium (browser tests will skip)"; \
	fi

# jq and Node for the example bots in other languages (tests/test_example_bots.py runs
# examples/bots/curl_bot.sh and examples/bots/js/bot.mjs): Debian's `jq` and `nodejs`, installed
# only when missing, the same way as chromium above. If they cannot be installed, those tests skip.
bottools:
	@missing=; command -v jq >/dev/null 2>&1 || missing="$$missing jq"; \
	command -v node >/dev/null 2>&1 || command -v nodejs >/dev/null 2>&1 || missing="$$missing nodejs"; \
	if [ -n "$$missing" ] && command -v apt-get >/dev/null 2>&1; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO="sudo -n"; \
		else echo "bottools: not root and no sudo: cannot install$$missing (the example bot tests will skip)"; exit 0; fi; \
		echo "bottools: installing Debian's$$missing for the example bot tests"; \
		export DEBIAN_FRONTEND=noninteractive; \
		$$SUDO apt-get install -y -qq $$missing >/dev/null 2>&1 \
		|| { $$SUDO apt-get update -qq >/dev/null 2>&1 && $$SUDO apt-get install -y -qq $$missing >/dev/null 2>&1; } \
		|| echo "bottools: could not install$$missing (the example bot tests will skip)"; \
	fi

bench: $(STAMP)
	@files=$$(ls bench/*.py 2>/dev/null | LC_ALL=C sort); \
	if [ -z "$$files" ]; then echo "bench: no bench/*.py scripts yet"; exit 0; fi; \
	for f in $$files; do \
		echo "== $$f"; PYTHONPATH="$(CURDIR)" $(VPY) "$$f" || exit 1; \
	done

openapi: $(STAMP)
	$(VPY) -m service.openapi

run: $(STAMP)
	$(VPY) -m service.run

clean:
	rm -rf $(VENV) build dist *.egg-info sdk/*.egg-info sdk/build \
		.pytest_cache .mypy_cache .ruff_cache tests/artifacts
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
