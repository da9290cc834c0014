#!/usr/bin/env bash
test_description='post-checkout as git runs it: arguments, $0, working directory,
environment, core.hooksPath, a non-executable hook, the exit status'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"

git lfs version >/dev/null 2>&1 && test_set_prereq GIT_LFS

# The hook: one record per run in $HOOK_LOG (outside every work tree), a line
# on its stdout (git sends it to stderr), and the exit status in $HOOK_EXIT.
write_hook() {
	mkdir -p "$(dirname "$1")" &&
	cat >"$1" <<-\EOF &&
	#!/bin/sh
	{
		echo "args: $*"
		echo "0: $0"
		echo "pwd: $(pwd)"
		echo "GIT_DIR: ${GIT_DIR-unset}"
		echo "GIT_PREFIX: ${GIT_PREFIX-unset}"
		echo "GIT_WORK_TREE: ${GIT_WORK_TREE-unset}"
		if read line; then echo "stdin: $line"; else echo "stdin: empty"; fi
	} >>"$HOOK_LOG"
	echo "hook says hello"
	exit ${HOOK_EXIT:-0}
	EOF
	chmod +x "$1"
}

test_expect_success 'setup' '
	make_coordinator_repo src &&
	git -C src branch side v0
'

# twin_hook <name> <dir below work tree or .> <ours command> --- <git command>:
# run both in their work trees with a hook log each; same exit code, stderr
# (hook output included) and hook records, with the twin names swapped.
twin_hook() {
	local name=$1 sub=$2 ours git
	shift 2
	ours= git=
	while test "$1" != "---"; do ours="$ours '$1'"; shift; done
	shift
	for a in "$@"; do git="$git '$a'"; done
	rm -f $name.log.ours $name.log.git &&
	(cd $name.ours/$sub && HOOK_LOG="$TRASH_DIRECTORY/$name.log.ours" eval "$ours" \
		>../$name.out.ours 2>"$TRASH_DIRECTORY/$name.err.ours"; echo $? >"$TRASH_DIRECTORY/$name.rc.ours") &&
	(cd $name.git/$sub && HOOK_LOG="$TRASH_DIRECTORY/$name.log.git" eval "$git" \
		>../$name.out.git 2>"$TRASH_DIRECTORY/$name.err.git"; echo $? >"$TRASH_DIRECTORY/$name.rc.git") &&
	touch $name.log.ours $name.log.git &&
	sed "s/$name\.ours/$name.TWIN/g" $name.log.ours >$name.log.ours.cmp &&
	sed "s/$name\.git/$name.TWIN/g" $name.log.git >$name.log.git.cmp &&
	test_cmp $name.log.git.cmp $name.log.ours.cmp &&
	test_cmp $name.rc.git $name.rc.ours &&
	test_cmp $name.err.git $name.err.ours
}

test_expect_success 'a switch: <old> <new> 1, in the top, GIT_PREFIX empty, stdout to stderr' '
	twins src sw &&
	write_hook sw.ours/.git/hooks/post-checkout &&
	write_hook sw.git/.git/hooks/post-checkout &&
	twin_hook sw . git parallel-checkout -q other --- git checkout -q other &&
	grep "^args: $(git -C src rev-parse main) $(git -C src rev-parse other) 1$" sw.log.ours &&
	grep "^0: .git/hooks/post-checkout$" sw.log.ours &&
	grep "^stdin: empty$" sw.log.ours &&
	grep "^hook says hello$" sw.err.ours
'

test_expect_success 'a switch from a subdirectory: GIT_PREFIX, the hook runs in the top' '
	twin_hook sw d1 git parallel-checkout -q v1 --- git checkout -q v1 &&
	grep "^GIT_PREFIX: d1/$" sw.log.ours
'

test_expect_success 'restoring paths: HEAD HEAD 0 (also from a subdirectory)' '
	echo changed >sw.ours/d1/s1/f1 && echo changed >sw.git/d1/s1/f1 &&
	twin_hook sw d1 git parallel-checkout -- s1/f1 --- git checkout -- s1/f1 &&
	grep "^args: $(git -C src rev-parse v1) $(git -C src rev-parse v1) 0$" sw.log.ours &&
	twin_hook sw . git parallel-checkout main -- unchanged --- git checkout main -- unchanged
'

test_expect_success 'a failing hook: a switch exits 1, a path restore with the status' '
	twin_hook sw . env HOOK_EXIT=3 git parallel-checkout -q main --- env HOOK_EXIT=3 git checkout -q main &&
	echo 1 >expect && test_cmp expect sw.rc.ours &&
	twin_hook sw . env HOOK_EXIT=3 git parallel-checkout -- unchanged --- env HOOK_EXIT=3 git checkout -- unchanged &&
	echo 3 >expect && test_cmp expect sw.rc.ours &&
	git -C sw.ours rev-parse HEAD >ours.head && git -C sw.git rev-parse HEAD >git.head &&
	test_cmp git.head ours.head && test_cmp_index sw.ours sw.git
'

test_expect_success 'a refused switch runs no hook' '
	echo mine >sw.ours/d0/s0/f6 && echo mine >sw.git/d0/s0/f6 &&
	twin_hook sw . git parallel-checkout -q other --- git checkout -q other &&
	test_must_be_empty sw.log.ours &&
	git -C sw.ours checkout -q -f main && git -C sw.git checkout -q -f main
'

test_expect_success 'a hook that is not executable: git'"'"'s hint, and no run' '
	chmod -x sw.ours/.git/hooks/post-checkout sw.git/.git/hooks/post-checkout &&
	twin_hook sw . git parallel-checkout -q side --- git checkout -q side &&
	test_must_be_empty sw.log.ours &&
	grep "hook was ignored" sw.err.ours &&
	twin_hook sw . git -c advice.ignoredHook=false parallel-checkout -q main --- \
		git -c advice.ignoredHook=false checkout -q main &&
	test_must_be_empty sw.err.ours &&
	chmod +x sw.ours/.git/hooks/post-checkout sw.git/.git/hooks/post-checkout
'

test_expect_success 'a hook without #! is run by the shell, as git does' '
	twins src sh &&
	for d in sh.ours sh.git
	do
		printf "echo \"args: \$*\" >>\"\$HOOK_LOG\"\n" >$d/.git/hooks/post-checkout &&
		chmod +x $d/.git/hooks/post-checkout || return 1
	done &&
	twin_hook sh . git parallel-checkout -q other --- git checkout -q other &&
	test_line_count = 1 sh.log.ours
'

test_expect_success 'core.hooksPath, relative to the top' '
	twins src hp &&
	write_hook hp.ours/myhooks/post-checkout &&
	write_hook hp.git/myhooks/post-checkout &&
	git -C hp.ours config core.hooksPath myhooks &&
	git -C hp.git config core.hooksPath myhooks &&
	twin_hook hp d2 git parallel-checkout -q other --- git checkout -q other &&
	grep "^0: myhooks/post-checkout$" hp.log.ours
'

# Our repository discovery in a linked worktree (a .git file whose git
# directory has a commondir) is another piece of work; run this when it works.
git init -q probe.main && git -C probe.main commit -q --allow-empty -m x &&
git -C probe.main worktree add -q ../probe.wt 2>/dev/null &&
(cd probe.wt && git parallel-checkout -q HEAD 2>/dev/null) && test_set_prereq LINKED_WORKTREE

test_expect_success LINKED_WORKTREE 'in a linked worktree: the common hooks, GIT_DIR exported as git does' '
	twins src lw &&
	write_hook lw.ours/.git/hooks/post-checkout &&
	write_hook lw.git/.git/hooks/post-checkout &&
	git -C lw.ours worktree add -q ../lw.ours.wt side 2>/dev/null &&
	git -C lw.git worktree add -q ../lw.git.wt side 2>/dev/null &&
	rm -f lw.log.ours lw.log.git &&
	(cd lw.ours.wt && HOOK_LOG="$TRASH_DIRECTORY/lw.log.ours" git parallel-checkout -q v1 2>../lw.err.ours) &&
	(cd lw.git.wt && HOOK_LOG="$TRASH_DIRECTORY/lw.log.git" git checkout -q v1 2>../lw.err.git) &&
	sed "s/lw\.ours/lw.TWIN/g" lw.log.ours >lw.log.ours.cmp &&
	sed "s/lw\.git/lw.TWIN/g" lw.log.git >lw.log.git.cmp &&
	test_cmp lw.log.git.cmp lw.log.ours.cmp &&
	grep "^GIT_DIR: /.*/worktrees/" lw.log.ours
'

test_expect_success 'clone: 0000... <head> 1 from a global core.hooksPath, GIT_DIR absolute' '
	write_hook "$TRASH_DIRECTORY/global-hooks/post-checkout" &&
	test_when_finished "git config --global --unset core.hooksPath" &&
	git config --global core.hooksPath "$TRASH_DIRECTORY/global-hooks" &&
	rm -f cl.log.ours cl.log.git &&
	HOOK_LOG="$TRASH_DIRECTORY/cl.log.ours" git parallel-clone -q src cl.ours 2>cl.err.ours &&
	HOOK_LOG="$TRASH_DIRECTORY/cl.log.git" git clone -q src cl.git 2>cl.err.git &&
	sed "s/cl\.ours/cl.TWIN/g" cl.log.ours >cl.log.ours.cmp &&
	sed "s/cl\.git/cl.TWIN/g" cl.log.git >cl.log.git.cmp &&
	test_cmp cl.log.git.cmp cl.log.ours.cmp &&
	test_cmp cl.err.git cl.err.ours &&
	grep "^args: 0000000000000000000000000000000000000000 $(git -C src rev-parse main) 1$" cl.log.ours
'

test_expect_success 'clone: a failing hook is the exit status, the clone stays' '
	test_when_finished "git config --global --unset core.hooksPath" &&
	git config --global core.hooksPath "$TRASH_DIRECTORY/global-hooks" &&
	(HOOK_LOG=/dev/null HOOK_EXIT=5 git parallel-clone -q src cl2.ours 2>/dev/null; echo $? >cl2.rc.ours) &&
	(HOOK_LOG=/dev/null HOOK_EXIT=5 git clone -q src cl2.git 2>/dev/null; echo $? >cl2.rc.git) &&
	test_cmp cl2.rc.git cl2.rc.ours &&
	test_cmp_worktrees cl2.ours cl2.git
'

test_expect_success 'clone: the template directory is copied, and its post-checkout hook runs, as git clone' '
	mkdir -p tmpl/hooks tmpl/info &&
	write_hook tmpl/hooks/post-checkout &&
	echo "# mine" >tmpl/info/exclude && echo "my repo" >tmpl/description && echo x >tmpl/.hidden &&
	rm -f tp.log.ours tp.log.git &&
	GIT_TEMPLATE_DIR="$TRASH_DIRECTORY/tmpl" HOOK_LOG="$TRASH_DIRECTORY/tp.log.ours" \
		git parallel-clone -q src tp.ours 2>tp.err.ours &&
	GIT_TEMPLATE_DIR="$TRASH_DIRECTORY/tmpl" HOOK_LOG="$TRASH_DIRECTORY/tp.log.git" \
		git clone -q src tp.git 2>tp.err.git &&
	sed "s/tp\.ours/tp.TWIN/g" tp.log.ours >tp.log.ours.cmp &&
	sed "s/tp\.git/tp.TWIN/g" tp.log.git >tp.log.git.cmp &&
	test_cmp tp.log.git.cmp tp.log.ours.cmp &&
	test_cmp tp.err.git tp.err.ours &&
	(cd tp.git/.git && find . -path ./objects -prune -o -printf "%p %m\n" | sort) >tree.git &&
	(cd tp.ours/.git && find . -path ./objects -prune -o -printf "%p %m\n" | sort) >tree.ours &&
	test_cmp tree.git tree.ours &&
	test_cmp tp.git/.git/info/exclude tp.ours/.git/info/exclude &&
	test_cmp tp.git/.git/description tp.ours/.git/description &&
	test_path_is_missing tp.ours/.git/.hidden &&
	rm -rf tp.ours tp.git &&
	GIT_TEMPLATE_DIR= git parallel-clone -q src tp.ours && GIT_TEMPLATE_DIR= git clone -q src tp.git &&
	test_path_is_missing tp.ours/.git/hooks/post-checkout &&
	(cd tp.git/.git && find . -path ./objects -prune -o -print | sort) >tree.git &&
	(cd tp.ours/.git && find . -path ./objects -prune -o -print | sort) >tree.ours &&
	test_cmp tree.git tree.ours
'

test_expect_success 'clone: a template config is the start of the clone config, as git clone' '
	mkdir -p tmplcfg &&
	printf "[core]\n\tfoo = bar\n\tlogallrefupdates = false\n[user]\n\tname = Tmpl\n" >tmplcfg/config &&
	GIT_TEMPLATE_DIR="$TRASH_DIRECTORY/tmplcfg" git parallel-clone -q src tc.ours &&
	GIT_TEMPLATE_DIR="$TRASH_DIRECTORY/tmplcfg" git clone -q src tc.git &&
	sed "s/tc\.ours/tc.TWIN/" tc.ours/.git/config >tc.ours.cfg &&
	sed "s/tc\.git/tc.TWIN/" tc.git/.git/config >tc.git.cfg &&
	test_cmp tc.git.cfg tc.ours.cfg &&
	test_path_is_missing tc.ours/.git/logs &&
	test_path_is_missing tc.git/.git/logs
'

# hook_events <trace2 event file>: the hook's region and child, the fields
# that do not depend on time, process or session.
hook_events() {
	"$PYTHON" -c '
import json, sys
hooks = set()
for line in open(sys.argv[1]):
    e = json.loads(line)
    ev = e["event"]
    if ev.startswith("region_") and e.get("category") != "hook":
        continue
    if ev == "child_start":
        if e.get("child_class") != "hook":
            continue
        hooks.add((e["sid"], e["child_id"]))
    elif ev == "child_exit":
        if (e["sid"], e["child_id"]) not in hooks:
            continue
    elif not ev.startswith("region_"):
        continue
    print(json.dumps({k: v for k, v in e.items() if k not in
                      ("sid", "time", "file", "line", "t_rel", "pid", "thread", "child_id")}, sort_keys=True))
' "$1"
}

test_expect_success 'trace2 records the hook as git does: a hook region, a child of class hook' '
	rm -rf tr.ours tr.git && git clone -q src tr.ours && git clone -q src tr.git &&
	write_hook tr.ours/.git/hooks/post-checkout && write_hook tr.git/.git/hooks/post-checkout &&
	(cd tr.ours && HOOK_LOG=/dev/null GIT_TRACE2_EVENT="$TRASH_DIRECTORY/tr.ev.ours" \
		git parallel-checkout -q side 2>/dev/null) &&
	(cd tr.git && HOOK_LOG=/dev/null GIT_TRACE2_EVENT="$TRASH_DIRECTORY/tr.ev.git" git checkout -q side 2>/dev/null) &&
	hook_events tr.ev.ours >tr.ours.hook && hook_events tr.ev.git >tr.git.hook &&
	test_line_count = 4 tr.git.hook &&
	test_cmp tr.git.hook tr.ours.hook
'

test_expect_success GIT_LFS 'git-lfs'"'"'s post-checkout hook: lockable files made read-only, as with git' '
	git init -q -b main lfs &&
	(
		cd lfs &&
		git lfs install --local >/dev/null &&
		echo "*.lck lockable" >.gitattributes &&
		echo a >a.lck && echo p >plain && git add . && git commit -qm one &&
		git checkout -qb other &&
		echo b >b.lck && echo a2 >a.lck && git add . && git commit -qm two &&
		git checkout -q main
	) &&
	for who in ours git
	do
		rm -rf lfs.$who &&
		git clone -q lfs lfs.$who &&
		git -C lfs.$who lfs install --local >/dev/null &&
		chmod u+w lfs.$who/a.lck || return 1
	done &&
	git -C lfs.ours parallel-checkout -q other &&
	git -C lfs.git checkout -q other &&
	stat -c "%a %n" lfs.git/a.lck lfs.git/b.lck lfs.git/plain >modes &&
	printf "%s\n" "444 lfs.git/a.lck" "444 lfs.git/b.lck" "644 lfs.git/plain" >expect &&
	test_cmp expect modes &&
	test_cmp_worktrees lfs.ours lfs.git &&
	test_cmp_index lfs.ours lfs.git
'

test_done
