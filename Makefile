# The two commands of the README: `make demo` and `make test` do all set-up.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: all venv test unit shell lint demo bench clean

all: test

$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP) lint unit shell

lint: $(STAMP)
	$(VENV)/bin/ruff check --quiet .

unit: $(STAMP)
	$(PY) -m pytest t

shell: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(MAKE) -C t --no-print-directory

demo: $(STAMP)
	$(PY) -m git_checkout_helper.demo

bench: $(STAMP)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,bench]' || true
	$(PY) -m git_checkout_helper.bench

clean:
	rm -rf $(VENV) build *.egg-info t/trash* t/test-results
