#!/usr/bin/env bash
test_description='git parallel-clone --filter: a partial clone like git clone --filter
(same config, promisor pack and its ref list, work tree, index, objects missing),
over file://, git daemon and git http-backend on 127.0.0.1; the checkout fetches
the blobs of HEAD in one batch'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"
. "$TEST_DIRECTORY/lib-promisor.sh"

test_expect_success 'setup' '
	make_coordinator_repo src &&
	(
		cd src &&
		"$PYTHON" -c "import sys; sys.stdout.write(\"x\" * 5000)" >big &&
		echo "*.txt text" >.gitattributes &&
		mkdir -p sub && echo "*.c ident" >sub/.gitattributes &&
		printf "int x; /* \$Id\$ */\n" >sub/x.c &&
		git add big .gitattributes sub && git commit -qm big &&
		git tag -a -m annotated v2 &&
		git config uploadpack.allowFilter true &&
		git config uploadpack.allowAnySHA1InWant true
	) &&
	SRC_URL="file://$TRASH_DIRECTORY/src"
'

# same_clone <ours> <git>: config, the ref list of the clone's promisor pack,
# refs (annotated tags peeled, packed-refs as git writes it), work tree, index, status and the objects still missing
same_clone() {
	git -C $1 config -l --local >$1.config &&
	git -C $2 config -l --local >$2.config &&
	test_cmp $2.config $1.config &&
	for d in $1 $2
	do
		cat $d/.git/objects/pack/*.promisor | sort >$d.promised &&
		git -C $d for-each-ref --format="%(objectname) %(refname) %(symref)" >$d.refs &&
		git -C $d show-ref -d >$d.peeled || return 1
	done &&
	test_cmp $2.promised $1.promised &&
	test_cmp $2.refs $1.refs &&
	test_cmp $2.peeled $1.peeled &&
	test_cmp $2/.git/packed-refs $1/.git/packed-refs &&
	test_cmp_worktrees $1 $2 &&
	test_cmp_index $1 $2 &&
	verify_clean $1 &&
	missing_objects $1 >$1.missing &&
	missing_objects $2 >$2.missing &&
	test_cmp $2.missing $1.missing &&
	git -C $1 fsck --connectivity-only 2>fsck.err
}

test_expect_success 'file://, blob:none: like git clone --filter=blob:none' '
	git parallel-clone -q -j 2 --threshold 0 --filter=blob:none "$SRC_URL" bn.ours &&
	git clone -q --filter=blob:none "$SRC_URL" bn.git &&
	same_clone bn.ours bn.git &&
	test -s bn.ours.missing &&
	ls bn.ours/.git/objects/pack/*.promisor >promisors &&
	test_line_count = 2 promisors
'

test_expect_success 'file://, tree:0 and blob:limit=1k (recorded as git records them)' '
	git parallel-clone -q --filter=tree:0 "$SRC_URL" t0.ours &&
	git clone -q --filter=tree:0 "$SRC_URL" t0.git &&
	same_clone t0.ours t0.git &&
	test -s t0.ours.missing &&
	git parallel-clone -q --filter=blob:limit=1k "$SRC_URL" bl.ours &&
	git clone -q --filter=blob:limit=1k "$SRC_URL" bl.git &&
	echo blob:limit=1024 >expect &&
	git -C bl.ours config remote.origin.partialclonefilter >actual &&
	test_cmp expect actual &&
	same_clone bl.ours bl.git &&
	ls bl.ours/.git/objects/pack/*.promisor >promisors &&
	test_line_count = 2 promisors
'

test_expect_success 'the partial clone then switches like git (the promisor remote is used)' '
	git -C bn.ours parallel-checkout -q other &&
	git -C bn.git checkout -q other &&
	same_clone bn.ours bn.git
'

# twin_clone <name> <url> [<clone option>...]: git parallel-clone -q and git clone -q
# of <url> into <name>.ours and <name>.git: the same exit code, the same messages
twin_clone() {
	name=$1 url=$2 &&
	shift 2 &&
	{ git parallel-clone -q "$@" "$url" $name.ours 2>$name.err.ours; echo $? >$name.rc.ours; } &&
	{ git clone -q "$@" "$url" $name.git 2>$name.err.git; echo $? >$name.rc.git; } &&
	test_cmp $name.rc.git $name.rc.ours &&
	test_cmp $name.err.git $name.err.ours
}

# same_head_config <name>: <name>.ours and <name>.git have the same HEAD and config
same_head_config() {
	test_cmp $1.git/.git/HEAD $1.ours/.git/HEAD &&
	git -C $1.ours config -l --local >$1.ours.config &&
	git -C $1.git config -l --local >$1.git.config &&
	test_cmp $1.git.config $1.ours.config
}

# odd_heads_twins <base url> <prefix>: the sources det, unb and empty (made
# over file:// below) cloned from <base url> as git clones them
odd_heads_twins() {
	twin_clone $2det "$1/det" --filter=blob:none &&
	same_clone $2det.ours $2det.git &&
	test_cmp $2det.git/.git/HEAD $2det.ours/.git/HEAD &&
	twin_clone $2unb "$1/unb" --filter=blob:none &&
	same_head_config $2unb &&
	twin_clone $2empty "$1/empty" --filter=blob:none &&
	same_head_config $2empty
}

# twin_source <name>: a bare copy of src that allows filters
twin_source() {
	git clone -q --bare src $1 &&
	git -C $1 config uploadpack.allowFilter true
}

test_expect_success 'a source on a detached HEAD: the branch at its commit is taken, as git guesses it' '
	twin_source det &&
	oid=$(git -C det rev-parse other) &&
	echo $oid >det/HEAD &&
	twin_clone det "file://$TRASH_DIRECTORY/det" --filter=blob:none &&
	same_clone det.ours det.git &&
	test_cmp det.git/.git/HEAD det.ours/.git/HEAD &&
	echo "ref: refs/heads/other" >expect &&
	test_cmp expect det.ours/.git/HEAD
'

test_expect_success 'a source detached at no branch: the clone is detached there, no branch made' '
	twin_source det2 &&
	oid=$(git -C det2 commit-tree -p other -m loose "other^{tree}") &&
	echo $oid >det2/HEAD &&
	twin_clone det2 "file://$TRASH_DIRECTORY/det2" --filter=blob:none &&
	same_clone det2.ours det2.git &&
	test_cmp det2.git/.git/HEAD det2.ours/.git/HEAD &&
	test_grep "detached HEAD" det2.err.ours &&
	git -C det2.ours for-each-ref refs/heads >heads &&
	test_must_be_empty heads
'

test_expect_success 'an unborn HEAD beside branches: HEAD names it, with its upstream; nothing checked out' '
	twin_source unb &&
	git -C unb symbolic-ref HEAD refs/heads/nope &&
	twin_clone unb "file://$TRASH_DIRECTORY/unb" --filter=blob:none &&
	test_grep "^warning: remote HEAD refers to nonexistent ref, unable to checkout$" unb.err.ours &&
	same_head_config unb &&
	git -C unb.ours for-each-ref >refs.ours &&
	git -C unb.git for-each-ref >refs.git &&
	test_cmp refs.git refs.ours &&
	test_cmp unb.git/.git/packed-refs unb.ours/.git/packed-refs
'

test_expect_success 'an empty repository: HEAD names its unborn branch, and no pack is made' '
	git init -q --bare -b trunk empty &&
	git -C empty config uploadpack.allowFilter true &&
	twin_clone empty "file://$TRASH_DIRECTORY/empty" --filter=blob:none &&
	test_grep "^warning: You appear to have cloned an empty repository.$" empty.err.ours &&
	same_head_config empty &&
	find empty.ours/.git/objects/pack empty.git/.git/objects/pack -type f >packs &&
	test_must_be_empty packs
'

test_expect_success '-b <tag>: detached at the tag, as git clone -b <tag>; a missing -b refused as git refuses it, an existing empty directory left empty' '
	twin_clone bt "$SRC_URL" --filter=blob:none -b v2 &&
	same_clone bt.ours bt.git &&
	test_cmp bt.git/.git/HEAD bt.ours/.git/HEAD &&
	test_expect_code 128 git parallel-clone -q --filter=blob:none -b nosuch "$SRC_URL" nb.ours 2>err.ours &&
	test_expect_code 128 git clone -q --filter=blob:none -b nosuch "$SRC_URL" nb.git 2>err.git &&
	test_cmp err.git err.ours &&
	test_path_is_missing nb.ours &&
	mkdir nbe.ours nbe.git &&
	test_expect_code 128 git parallel-clone -q --filter=blob:none -b nosuch "$SRC_URL" nbe.ours 2>err.ours &&
	test_expect_code 128 git clone -q --filter=blob:none -b nosuch "$SRC_URL" nbe.git 2>err.git &&
	test_cmp err.git err.ours &&
	test_path_is_dir nbe.ours &&
	ls -A nbe.ours >left &&
	test_must_be_empty left
'

test_expect_success 'a source that does not allow filters sends everything, with git'"'"'s warning' '
	git clone -q --bare src nofilter &&
	twin_clone nofilter "file://$TRASH_DIRECTORY/nofilter" --filter=blob:none &&
	test_grep "^warning: filtering not recognized by server, ignoring$" nofilter.err.ours &&
	same_clone nofilter.ours nofilter.git &&
	test_must_be_empty nofilter.ours.missing
'

test_expect_success 'a local path ignores --filter as git does, and records it' '
	git parallel-clone --filter=blob:none src lp.ours 2>err.ours &&
	git clone --filter=blob:none src lp.git 2>err.git &&
	grep "^warning: --filter is ignored in local clones; use file:// instead.$" err.git &&
	grep "^warning: --filter is ignored in local clones; use file:// instead.$" err.ours &&
	git -C lp.ours config -l --local >lp.ours.config &&
	git -C lp.git config -l --local >lp.git.config &&
	test_cmp lp.git.config lp.ours.config &&
	missing_objects lp.ours >lp.missing &&
	test_must_be_empty lp.missing
'

test_expect_success 'a bad filter: refused before anything is made' '
	for spec in foo blob:limit=abc tree:x
	do
		test_expect_code 128 git parallel-clone --filter=$spec "$SRC_URL" bad.ours 2>err.ours &&
		test_expect_code 128 git clone --filter=$spec "$SRC_URL" bad.git 2>err.git &&
		test_cmp err.git err.ours &&
		test_path_is_missing bad.ours || return 1
	done
'

test_expect_success '--sparse: the top-level files only, their blobs alone fetched, as git clone --sparse' '
	git parallel-clone -q -j 2 --threshold 0 --sparse --filter=blob:none "$SRC_URL" sp.ours &&
	git clone -q --sparse --filter=blob:none "$SRC_URL" sp.git &&
	same_clone sp.ours sp.git &&
	test_cmp sp.git/.git/config.worktree sp.ours/.git/config.worktree &&
	test_cmp sp.git/.git/info/sparse-checkout sp.ours/.git/info/sparse-checkout &&
	git -C sp.ours ls-files -t >ls.ours && git -C sp.git ls-files -t >ls.git &&
	test_cmp ls.git ls.ours && test_grep "^S sub/x.c" ls.ours &&
	test_path_is_missing sp.ours/sub &&
	test -s sp.ours.missing &&
	git parallel-clone -q --sparse -n "$SRC_URL" spn.ours && git clone -q --sparse -n "$SRC_URL" spn.git &&
	git -C spn.ours config -l --local >spn.ours.config && git -C spn.git config -l --local >spn.git.config &&
	test_cmp spn.git.config spn.ours.config &&
	test_cmp spn.git/.git/config.worktree spn.ours/.git/config.worktree
'

test_expect_success 'git daemon: like git; a fetch for the clone, one for the checkout' '
	start_git_daemon &&
	: >daemon.log &&
	git parallel-clone -q --filter=blob:none "$GIT_DAEMON_URL/src" gd.ours &&
	grep -c "Request upload-pack" daemon.log >connections.ours &&
	: >daemon.log &&
	git clone -q --filter=blob:none "$GIT_DAEMON_URL/src" gd.git &&
	grep -c "Request upload-pack" daemon.log >connections.git &&
	test_cmp connections.git connections.ours &&
	same_clone gd.ours gd.git
'

test_expect_success 'git daemon, tree:0: the trees, then the blobs; like git' '
	: >daemon.log &&
	git parallel-clone -q --filter=tree:0 "$GIT_DAEMON_URL/src" gt.ours &&
	grep -c "Request upload-pack" daemon.log >connections.ours &&
	: >daemon.log &&
	git clone -q --filter=tree:0 "$GIT_DAEMON_URL/src" gt.git &&
	grep -c "Request upload-pack" daemon.log >connections.git &&
	test_cmp connections.git connections.ours &&
	same_clone gt.ours gt.git &&
	git -C gt.ours parallel-checkout -q other &&
	git -C gt.git checkout -q other &&
	same_clone gt.ours gt.git
'

test_expect_success 'git daemon: a detached HEAD, an unborn one and an empty repository as over file://' '
	odd_heads_twins "$GIT_DAEMON_URL" g
'

# GIT_PROGRESS_DELAY=0: the checkout's meter, like git's, starts only after 2 s.
test_expect_success 'git daemon: --progress shows the fetch as git does' '
	GIT_PROGRESS_DELAY=0 git parallel-clone --progress --filter=blob:none "$GIT_DAEMON_URL/src" gp.ours 2>err &&
	tr "\r" "\n" <err >progress &&
	test_grep "^Cloning into .gp.ours.\.\.\.$" progress &&
	test_grep "^remote: Enumerating objects: [0-9]*, done\.$" progress &&
	test_grep "^Receiving objects: 100% ([0-9]*/[0-9]*), .*, done\.$" progress &&
	test_grep "^Updating files: 100% ([0-9]*/[0-9]*), done\.$" progress
'

test_expect_success 'git daemon gone: the clone fails with one line and leaves nothing' '
	stop_git_daemon &&
	test_must_fail git parallel-clone -q --filter=blob:none "$GIT_DAEMON_URL/src" gone.ours 2>err &&
	test_line_count = 1 err &&
	test_grep "^fatal: could not fetch from .$GIT_DAEMON_URL/src.: " err &&
	test_path_is_missing gone.ours
'

test_expect_success 'http (git http-backend): like git clone --filter=blob:none, the same requests' '
	start_http_backend &&
	: >httpd.log &&
	git parallel-clone -q --filter=blob:none "$HTTPD_URL/src" hb.ours &&
	cp httpd.log requests.ours &&
	: >httpd.log &&
	git clone -q --filter=blob:none "$HTTPD_URL/src" hb.git &&
	cp httpd.log requests.git &&
	test_cmp requests.git requests.ours &&
	same_clone hb.ours hb.git &&
	stop_http_backend
'

test_expect_success 'http: a detached HEAD, an unborn one and an empty repository as over file://' '
	start_http_backend &&
	odd_heads_twins "$HTTPD_URL" h &&
	stop_http_backend
'

test_expect_success SSHD 'ssh (GIT_SSH_COMMAND): like git clone --filter=blob:none' '
	start_sshd &&
	git parallel-clone -q --filter=blob:none "$SSH_URL$TRASH_DIRECTORY/src" ssh.ours &&
	git clone -q --filter=blob:none "$SSH_URL$TRASH_DIRECTORY/src" ssh.git &&
	same_clone ssh.ours ssh.git &&
	stop_sshd
'

test_done
