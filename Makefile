# The two commands of the README: `make demo` and `make test` do all set-up.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: all venv test unit shell lint demo bench clean man

all: test

# editable_mode=compat: a plain path entry in a .pth, not setuptools' import-hook
# finder, which costs every interpreter start (coordinator, exec'd helper) ~20 ms
# of imports (pathlib, importlib.util, fnmatch) before our first line runs.
EDITABLE := --config-settings editable_mode=compat

$(STAMP): setup.cfg pyproject.toml Makefile $(wildcard man/man1/*.1)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test]' $(EDITABLE)
	@# An editable install skips setup.cfg's data_files: the man pages go where
	@# a real install puts them, so `git help parallel-checkout` finds them here too.
	mkdir -p $(VENV)/share/man/man1 && cp man/man1/*.1 $(VENV)/share/man/man1/
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP) lint unit shell

lint: $(STAMP)
	$(VENV)/bin/ruff check --quiet .

unit: $(STAMP)
	$(PY) -m pytest t

shell: $(STAMP)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(MAKE) -C t --no-print-directory

# The manual pages, from the usage texts in cli.py (manpage.py); committed, and
# installed by setup.cfg's data_files. t/test_manpage.py checks they are current.
man:
	$(PYTHON) -m git_checkout_helper.manpage man

demo: $(STAMP)
	$(PY) -m git_checkout_helper.demo

# The latency filesystem needs libfuse 2 (fusepy) and fusermount (Debian's fuse3); install
# them when missing and we may (root with apt-get), else the bench skips it with a note.
# Settings: BENCH_* in the environment (python -m git_checkout_helper.bench -h), BENCH_ARGS.
bench: $(STAMP)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,bench]' $(EDITABLE) || true
	@if [ -e /dev/fuse ] && { ! command -v fusermount3 >/dev/null || ! ldconfig -p 2>/dev/null | grep -q 'libfuse\.so\.2'; }; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "bench: installing fuse3 and libfuse2 (latency filesystem)"; \
	    { export DEBIAN_FRONTEND=noninteractive; apt-get install -y -q fuse3 libfuse2 || apt-get install -y -q fuse3 libfuse2t64 || \
	      { apt-get update -q && { apt-get install -y -q fuse3 libfuse2 || apt-get install -y -q fuse3 libfuse2t64; }; }; } \
	      >/dev/null 2>&1 || echo "bench: could not install fuse3/libfuse2: the latency filesystem will be skipped"; \
	  else echo "bench: fuse3/libfuse2 missing and not root: the latency filesystem will be skipped"; fi; \
	fi
	$(PY) -m git_checkout_helper.bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info t/trash* t/test-results
