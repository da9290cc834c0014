# Helpers for the coordinator tests (t2080, t2081, t2084, t2085).
#
#   worktree_manifest <dir>         one line per path below <dir> (sorted, .git
#                                   excluded at any depth): type, permission bits
#                                   and content hash, or symlink target
#   test_cmp_worktrees <a> <b>      their manifests are equal (bytes, modes, links)
#   helpers_in_trace <file>         how many helpers a GIT_TRACE2 (normal format)
#                                   file shows started: child_start[N] ... checkout--
#   helpers_in_event_trace <file>   the same for a GIT_TRACE2_EVENT file
#   test_checkout_helpers <n> <cmd...>   run cmd with GIT_TRACE2 and check that n
#                                   helpers were started (its stdout/stderr kept)
#   verify_clean <dir>              diff-files, diff-index --cached HEAD and status
#                                   say nothing is changed
#   test_cmp_index <a> <b>          same index entries (ls-files -s) and same HEAD
#   twins <src> <name>              two `git clone`s of <src>: <name>.ours, <name>.git
#   make_coordinator_repo <dir>     a repository with branches main and other and
#                                   tag v1 covering many kinds of change

worktree_manifest() {
	"$PYTHON" - "$1" <<-\PY
	import hashlib, os, stat, sys
	top = os.fsencode(sys.argv[1])
	out = []
	for root, dirs, files in os.walk(top):
	    dirs[:] = sorted(d for d in dirs if d != b".git")
	    for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(root, d))]) + dirs:
	        full = os.path.join(root, name)
	        rel = os.path.relpath(full, top).decode("utf-8", "backslashreplace")
	        if name == b".git":
	            continue
	        st = os.lstat(full)
	        perm = "%04o" % stat.S_IMODE(st.st_mode)
	        if stat.S_ISLNK(st.st_mode):
	            out.append("link %s -> %s" % (rel, os.readlink(full).decode("utf-8", "backslashreplace")))
	        elif stat.S_ISDIR(st.st_mode):
	            out.append("dir  %s %s" % (rel, perm))
	        elif stat.S_ISREG(st.st_mode):
	            with open(full, "rb") as f:
	                h = hashlib.sha1(f.read()).hexdigest()
	            out.append("file %s %s %d %s" % (rel, perm, st.st_size, h))
	        else:
	            out.append("other %s %o" % (rel, st.st_mode))
	for line in sorted(set(out)):
	    print(line)
	PY
}

# Where to keep files about work tree <dir>: outside of every work tree.
_aside() {
	printf '%s/%s' "$TRASH_DIRECTORY" "$(printf '%s' "$1" | tr / _)"
}

test_cmp_worktrees() {
	local a b
	a=$(_aside "$1") && b=$(_aside "$2") &&
	worktree_manifest "$1" >"$a.manifest" &&
	worktree_manifest "$2" >"$b.manifest" &&
	test -s "$a.manifest" &&
	test_cmp "$b.manifest" "$a.manifest"
}

# A helper's argv ends in (git-)checkout--helper or checkout--worker, maybe
# with a --prefix; git's own child_start of a dashed command quotes it.
helpers_in_trace() {
	grep "child_start\[[0-9]*\] .*checkout--\(helper\|worker\)\( \|$\)" "$1" | wc -l | tr -d " "
}

helpers_in_event_trace() {
	grep '"event":"child_start".*checkout--\(helper\|worker\)"' "$1" |
	grep -v '"child_class":"dashed"' | wc -l | tr -d " "
}

test_checkout_helpers() {
	local want=$1 trace="$TRASH_DIRECTORY/trace.helpers" got
	shift &&
	rm -f "$trace" &&
	GIT_TRACE2="$trace" "$@" &&
	touch "$trace" &&
	got=$(helpers_in_trace "$trace") &&
	if test "$got" != "$want"
	then
		echo "expected $want helpers, trace shows $got:" >&2
		cat "$trace" >&2
		return 1
	fi
}

verify_clean() {
	git -C "$1" diff-files --quiet &&
	git -C "$1" diff-index --cached --quiet HEAD &&
	git -C "$1" status --porcelain >"$(_aside "$1").status" &&
	test_must_be_empty "$(_aside "$1").status"
}

test_cmp_index() {
	local a b
	a=$(_aside "$1") && b=$(_aside "$2") &&
	git -C "$1" ls-files -s >"$a.ls" &&
	git -C "$2" ls-files -s >"$b.ls" &&
	test_cmp "$b.ls" "$a.ls" &&
	{ git -C "$1" symbolic-ref -q HEAD || echo detached; } >"$a.head" &&
	git -C "$1" rev-parse HEAD >>"$a.head" &&
	{ git -C "$2" symbolic-ref -q HEAD || echo detached; } >"$b.head" &&
	git -C "$2" rev-parse HEAD >>"$b.head" &&
	test_cmp "$b.head" "$a.head"
}

twins() {
	rm -rf "$2.ours" "$2.git" &&
	git clone -q "$1" "$2.ours" &&
	git clone -q "$1" "$2.git"
}

# main: ~130 files in nested directories (empty, executable, spaces and
# UTF-8 in names), symlinks, a gitlink; other: modified, deleted, added,
# mode changes, file->dir, dir->file, symlink->file, file->symlink.
make_coordinator_repo() {
	git init -q "$1" &&
	(
		cd "$1" &&
		for i in $(seq 1 120)
		do
			d=d$((i % 6))/s$((i % 3)) &&
			mkdir -p $d &&
			echo "file $i" >$d/f$i || return 1
		done &&
		: >empty &&
		printf "#!/bin/sh\necho run\n" >run.sh && chmod +x run.sh &&
		echo spaced >"with space.txt" &&
		echo utf >"caf$(printf "\303\251").txt" &&
		ln -s d1/s1/f1 link-to-file &&
		ln -s d2 link-to-dir &&
		ln -s nowhere dangling &&
		mkdir -p becomes-file && echo x >becomes-file/x && echo y >becomes-file/y &&
		echo plain >becomes-dir &&
		echo plain >becomes-link &&
		ln -s run.sh link-becomes-file &&
		echo "keep me" >unchanged &&
		git add . &&
		git update-index --add --cacheinfo 160000,1111111111111111111111111111111111111111,gitlink &&
		git commit -qm one &&
		git tag v0 &&
		git checkout -q -b other &&
		for i in $(seq 1 30)
		do
			echo "changed $i" >d$((i % 6))/s$((i % 3))/f$i || return 1
		done &&
		git rm -q d4/s1/f100 d5/s2/f101 d0/s0/f102 &&
		mkdir -p new/deep/er &&
		for i in 1 2 3 4 5 6 7 8; do echo "new $i" >new/deep/er/n$i || return 1; done &&
		chmod +x d1/s1/f115 && chmod -x run.sh &&
		git rm -rq becomes-file && echo "now a file" >becomes-file &&
		git rm -q becomes-dir && mkdir becomes-dir && echo in >becomes-dir/in &&
		git rm -q becomes-link && ln -s unchanged becomes-link &&
		git rm -q link-becomes-file && echo "was a link" >link-becomes-file &&
		rm link-to-file && ln -s d3/s0/f3 link-to-file &&
		git add -A &&
		git commit -qm two &&
		echo "third" >d0/s0/f6 && git commit -qam three &&
		git tag v1 &&
		git checkout -q main
	)
}
