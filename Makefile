# The two commands of the README: `make demo` and `make test` do all set-up.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: all venv test unit shell lint demo bench fuzz clean git-tests man

all: test

# editable_mode=compat: a plain path entry in a .pth, not setuptools' import-hook
# finder, which costs every interpreter start (coordinator, exec'd helper) ~20 ms
# of imports (pathlib, importlib.util, fnmatch) before our first line runs.
EDITABLE := --config-settings editable_mode=compat

# The package's bytecode, compiled once: an editable install gets none from pip,
# and with PYTHONDONTWRITEBYTECODE=1 in the environment every coordinator and
# helper would compile every module again at start-up (~0.1 s), which no user
# of an installed package pays. compileall only redoes modules whose source
# changed; `bench` and `demo` run it again for that reason.
BYTECODE := $(PY) -m compileall -q git_checkout_helper

$(STAMP): setup.cfg pyproject.toml Makefile $(wildcard man/man1/*.1)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test]' $(EDITABLE)
	$(BYTECODE)
	@# An editable install skips setup.cfg's data_files: the man pages go where
	@# a real install puts them, so `git help parallel-checkout` finds them here too.
	mkdir -p $(VENV)/share/man/man1 && cp man/man1/*.1 $(VENV)/share/man/man1/
	touch $(STAMP)

venv: $(STAMP)

# pytest and the shell tests side by side (one core each: about 6 minutes
# instead of 11 one after the other); pytest's output is kept in
# t/pytest.out and printed after the shell tests' own.
test: $(STAMP) lint
	@$(PY) -m pytest t >t/pytest.out 2>&1 & unit=$$!; \
	$(MAKE) --no-print-directory shell; shell=$$?; \
	wait $$unit; unit=$$?; \
	echo "== pytest"; cat t/pytest.out; \
	test $$unit = 0 && test $$shell = 0

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
	$(BYTECODE)
	$(PY) -m bench.demo

# The latency filesystem needs libfuse 2 (fusepy) and fusermount (Debian's fuse3); install
# them when missing and we may (root with apt-get), else the bench skips it with a note.
# Settings: BENCH_* in the environment (python -m bench -h), BENCH_ARGS.
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
	$(BYTECODE)
	$(PY) -m bench $(BENCH_ARGS)

# The coordinator's differential fuzzer against real git (t/helper/fuzz-coordinator);
# reproducers of divergences go to fuzz-results/. FUZZ_JOBS=n runs the seed's
# cases as n shards at once (the same cases as one run), a log each.
FUZZ_CASES ?= 2000
FUZZ_SEED ?= 1
FUZZ_JOBS ?= 1
fuzz: $(STAMP)
	@mkdir -p fuzz-results; pids=; \
	for k in $$(seq 0 $$(($(FUZZ_JOBS) - 1))); do \
	  PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) t/helper/fuzz-coordinator --cases $(FUZZ_CASES) \
	    --seed $(FUZZ_SEED) --shard $$k/$(FUZZ_JOBS) --out fuzz-results $(FUZZ_ARGS) \
	    >fuzz-results/shard-$$k.log 2>&1 & pids="$$pids $$!"; \
	done; rc=0; for p in $$pids; do wait $$p || rc=1; done; \
	for k in $$(seq 0 $$(($(FUZZ_JOBS) - 1))); do sed -n '/^fuzz-coordinator:/,$$p' fuzz-results/shard-$$k.log; done; \
	exit $$rc

# git's own test scripts from a built git tree (GIT_BUILD), with our helper as
# git's checkout--worker under GIT_TEST_CHECKOUT_WORKERS=2 (WORKER=git: git's own,
# for comparison); counts per script. Not part of `make test` (needs a git build).
GIT_BUILD ?=
WORKER ?= ours
T ?= t2400-worktree-add.sh t2401-worktree-prune.sh t2402-worktree-list.sh t2403-worktree-move.sh \
     t2404-worktree-config.sh t2405-worktree-submodule.sh t2406-worktree-repair.sh \
     t2407-worktree-heads.sh t3400-rebase.sh t3404-rebase-interactive.sh
git-tests: $(STAMP)
	@test -n "$(GIT_BUILD)" || { echo "make git-tests GIT_BUILD=<built git tree> [T=\"t2400-worktree-add.sh ...\"] [WORKER=git]"; exit 2; }
	t/run-git-tests.sh "$(GIT_BUILD)" "$(WORKER)" $(T)

clean:
	rm -rf $(VENV) build *.egg-info t/trash* t/test-results t/pytest.out fuzz-results
