#!/bin/sh
# git's own submodule matrix (lib-submodule-update.sh), as t2013 runs it for
# `git checkout`, run against `git parallel-checkout`: run from a built git's
# t/ by t/run-git-tests.sh (make git-tests GIT_BUILD=<git> T=<this file>).

test_description='git parallel-checkout with submodules: the matrix git checkout passes'

. ./test-lib.sh
. "$TEST_DIRECTORY"/lib-submodule-update.sh

KNOWN_FAILURE_DIRECTORY_SUBMODULE_CONFLICTS=1
test_submodule_switch_recursing_with_args "parallel-checkout"

test_submodule_forced_switch_recursing_with_args "parallel-checkout -f"

test_submodule_switch "parallel-checkout"

test_submodule_forced_switch "parallel-checkout -f"

test_done
