# Make real git drive our helper: git starts its workers as
# `git checkout--worker`, looking `git` up on PATH with its exec-path first.
# setup_git_helper_exec_path makes "$HELPER_EXEC_PATH": a `git` wrapper that runs
# our helper for checkout--worker and the real git otherwise, plus links to
# every other entry of the real exec-path. Then
#   GIT_EXEC_PATH="$HELPER_EXEC_PATH" git -c checkout.workers=2 ... clone/checkout
# uses our helper. The wrapper logs each helper run to "$HELPER_EXEC_PATH.log",
# so tests can prove our helper (not git's worker) did the writing.

setup_git_helper_exec_path() {
	HELPER_EXEC_PATH="$TRASH_DIRECTORY/helper-exec-path"
	local real_exec real_git helper
	real_exec=$("$REAL_GIT" --exec-path) &&
	real_git="$REAL_GIT" &&
	helper="$PROJECT_ROOT/.venv/bin/git-checkout--helper" &&
	test -x "$helper" &&
	rm -rf "$HELPER_EXEC_PATH" && mkdir "$HELPER_EXEC_PATH" &&
	for f in "$real_exec"/* "$real_exec"/.[!.]*
	do
		test -e "$f" || continue
		case "${f##*/}" in git) continue ;; esac
		ln -s "$f" "$HELPER_EXEC_PATH/${f##*/}" || return 1
	done &&
	cat >"$HELPER_EXEC_PATH/git" <<-WRAPPER &&
	#!/bin/sh
	if test "\$1" = checkout--worker
	then
		shift
		echo "helper \$*" >>"$HELPER_EXEC_PATH.log"
		exec "$helper" "\$@"
	fi
	exec "$real_git" "\$@"
	WRAPPER
	chmod +x "$HELPER_EXEC_PATH/git" &&
	: >"$HELPER_EXEC_PATH.log" &&
	export HELPER_EXEC_PATH
}

# git_with_helper <git args>: real git, with our helper as its checkout worker.
git_with_helper() {
	GIT_EXEC_PATH="$HELPER_EXEC_PATH" "$REAL_GIT" "$@"
}

# helper_runs: how many times git started our helper since setup.
helper_runs() {
	wc -l <"$HELPER_EXEC_PATH.log" | tr -d ' '
}
