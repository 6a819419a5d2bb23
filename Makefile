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

.PHONY: venv install test lint typecheck bench openapi run clean

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

test: lint typecheck
	$(VPY) -m pytest

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
