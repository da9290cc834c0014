#!/usr/bin/env bash
test_description='partial clones: the blobs (and trees) a checkout needs are found
before anything is touched; without a promisor remote the checkout is refused;
with one they are fetched in one batch (file://, git daemon, git http-backend on
127.0.0.1) and the result is the one git gives; a fetch that fails changes nothing'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"
. "$TEST_DIRECTORY/lib-promisor.sh"

test_expect_success 'setup' '
	make_coordinator_repo src &&
	git -C src config uploadpack.allowFilter true &&
	git -C src config uploadpack.allowAnySHA1InWant true &&
	SRC_URL="file://$TRASH_DIRECTORY/src"
'

# partial_twins <url> <filter> <name> [<clone args>]: two git clones with the filter
partial_twins() {
	local url=$1 filter=$2 name=$3
	shift 3
	rm -rf $name.ours $name.git &&
	git clone -q --filter=$filter "$@" "$url" $name.ours &&
	git clone -q --filter=$filter "$@" "$url" $name.git &&
	missing_objects $name.ours >$name.missing.before &&
	test -s $name.missing.before
}

# same_result <name>: work tree, index, HEAD, status and the objects still
# missing are the same in <name>.ours and <name>.git
same_result() {
	test_cmp_worktrees $1.ours $1.git &&
	test_cmp_index $1.ours $1.git &&
	git -C $1.ours status --porcelain >$1.status.ours &&
	git -C $1.git status --porcelain >$1.status.git &&
	test_cmp $1.status.git $1.status.ours &&
	git -C $1.ours diff-files --quiet &&
	missing_objects $1.ours >$1.missing.ours &&
	missing_objects $1.git >$1.missing.git &&
	test_cmp $1.missing.git $1.missing.ours
}

# server_gone <name> <stop command> <pattern>: with the server stopped, the
# switch in <name>.ours fails with one line matching <pattern>, and nothing
# of <name>.ours changed (no index.lock left either)
server_gone() {
	partial_state $1.ours >$1.before &&
	$2 &&
	test_must_fail git -C $1.ours parallel-checkout -q other 2>err &&
	test_line_count = 1 err &&
	test_grep "$3" err &&
	partial_state $1.ours >$1.after &&
	test_cmp $1.before $1.after &&
	test_path_is_missing $1.ours/.git/index.lock
}

test_expect_success 'no promisor remote: refused before anything is touched, one line, 128' '
	partial_twins "$SRC_URL" blob:none np &&
	git -C np.ours config --unset remote.origin.promisor &&
	git -C np.ours config --unset remote.origin.partialclonefilter &&
	partial_state np.ours >np.before &&
	test_expect_code 128 git -C np.ours parallel-checkout other 2>err &&
	test_line_count = 1 err &&
	test_grep "^fatal: unable to read sha1 file of .* ([0-9a-f]\{40\}) and [0-9]* more; no promisor remote" err &&
	partial_state np.ours >np.after &&
	test_cmp np.before np.after &&
	test_path_is_missing np.ours/.git/index.lock &&
	ls np.ours/.git/objects/pack/*.pack >packs &&
	test_line_count = 2 packs
'

test_expect_success 'no promisor remote: a tree:0 clone is refused with "unable to read tree"' '
	partial_twins "$SRC_URL" tree:0 npt &&
	git -C npt.ours config --unset remote.origin.promisor &&
	git -C npt.ours config --unset remote.origin.partialclonefilter &&
	partial_state npt.ours >npt.before &&
	test_expect_code 128 git -C npt.ours parallel-checkout other 2>err &&
	test_line_count = 1 err &&
	test_grep "^fatal: unable to read tree [0-9a-f]\{40\}$" err &&
	partial_state npt.ours >npt.after &&
	test_cmp npt.before npt.after
'

test_expect_success 'file://, blob:none: switch like git, the missing blobs in one promisor pack' '
	partial_twins "$SRC_URL" blob:none fs &&
	ls fs.ours/.git/objects/pack/*.promisor >promisors.before &&
	git -C fs.ours parallel-checkout -j 2 --threshold 0 other >out.ours 2>err.ours &&
	git -C fs.git checkout other >out.git 2>err.git &&
	same_result fs &&
	test_cmp err.git err.ours &&
	ls fs.ours/.git/objects/pack/*.promisor >promisors.after &&
	test_line_count = $(( $(wc -l <promisors.before) + 1 )) promisors.after &&
	new=$(comm -13 promisors.before promisors.after) &&
	test_must_be_empty $new &&
	test -f ${new%.promisor}.idx
'

test_expect_success 'file://, blob:none: far switch and back, restore, --all' '
	git -C fs.ours parallel-checkout -q v0 &&
	git -C fs.git checkout -q v0 &&
	same_result fs &&
	git -C fs.ours parallel-checkout -q main &&
	git -C fs.git checkout -q main &&
	same_result fs &&
	git -C fs.ours parallel-checkout v1 -- d0 new &&
	git -C fs.git checkout v1 -- d0 new &&
	same_result fs &&
	partial_twins "$SRC_URL" blob:none all -n &&
	git -C all.ours read-tree origin/other &&
	git -C all.git read-tree origin/other &&
	git -C all.ours parallel-checkout --all &&
	git -C all.git checkout-index -a &&
	test_cmp_worktrees all.ours all.git &&
	missing_objects all.ours >all.missing.ours &&
	missing_objects all.git >all.missing.git &&
	test_cmp all.missing.git all.missing.ours
'

test_expect_success 'file://, a source that stops allowing filters: blob:none and tree:0 fetch unfiltered, with git'"'"'s warning even with -q' '
	git clone -q --bare src nf &&
	git -C nf config uploadpack.allowFilter true &&
	git -C nf config uploadpack.allowAnySHA1InWant true &&
	partial_twins "file://$TRASH_DIRECTORY/nf" blob:none nfs &&
	git -C nf config uploadpack.allowFilter false &&
	git -C nfs.ours parallel-checkout -q other 2>err.ours &&
	git -C nfs.git checkout -q other 2>err.git &&
	test_grep "^warning: filtering not recognized by server, ignoring$" err.ours &&
	test_cmp err.git err.ours &&
	same_result nfs &&
	git -C nf config uploadpack.allowFilter true &&
	partial_twins "file://$TRASH_DIRECTORY/nf" tree:0 nft &&
	git -C nf config uploadpack.allowFilter false &&
	git -C nft.ours parallel-checkout -q other 2>err.ours &&
	git -C nft.git checkout -q other 2>err.git &&
	test_grep "^warning: filtering not recognized by server, ignoring$" err.ours &&
	test_cmp err.git err.ours &&
	same_result nft
'

test_expect_success 'file://, tree:0: the trees and then the blobs are fetched; same as git' '
	partial_twins "$SRC_URL" tree:0 t0 &&
	git -C t0.ours parallel-checkout -q other &&
	git -C t0.git checkout -q other &&
	test_cmp_worktrees t0.ours t0.git &&
	test_cmp_index t0.ours t0.git &&
	git -C t0.ours diff-files --quiet &&
	git -C t0.ours status --porcelain >t0.status &&
	test_must_be_empty t0.status &&
	git -C t0.ours parallel-checkout -q v0 &&
	git -C t0.git checkout -q v0 &&
	test_cmp_worktrees t0.ours t0.git &&
	test_cmp_index t0.ours t0.git
'

test_expect_success 'git daemon: the server gone before the switch: one line, nothing changed' '
	start_git_daemon &&
	partial_twins "$GIT_DAEMON_URL/src" blob:none gd &&
	server_gone gd stop_git_daemon \
		"^fatal: could not fetch [0-9a-f]\{40\} (and [0-9]* more objects) from promisor remote .origin. (git://127.0.0.1:$GIT_DAEMON_PORT/src): "
'

test_expect_success 'git daemon: back, the re-run completes with one fetch; same as git' '
	start_git_daemon $GIT_DAEMON_PORT &&
	: >daemon.log &&
	git -C gd.ours parallel-checkout -q other &&
	grep -c "Request upload-pack" daemon.log >connections &&
	echo 1 >one &&
	test_cmp one connections &&
	git -C gd.git checkout -q other &&
	same_result gd
'

test_expect_success 'git daemon: .gitattributes that arrive with the switch: one fetch, applied as git does' '
	git -C src checkout -q -b attrs main &&
	(
		cd src &&
		printf "*.txt eol=crlf\n" >.gitattributes &&
		mkdir -p attr && printf "one\ntwo\n" >attr/t.txt &&
		printf "*.c ident\n" >attr/.gitattributes && printf "/* \$Id\$ */\n" >attr/i.c &&
		git add . && git commit -qm attrs
	) &&
	git -C src checkout -q main &&
	partial_twins "$GIT_DAEMON_URL/src" blob:none ga &&
	: >daemon.log &&
	git -C ga.ours parallel-checkout -q attrs &&
	grep -c "Request upload-pack" daemon.log >connections &&
	test_cmp one connections &&
	git -C ga.git checkout -q attrs &&
	same_result ga &&
	printf "one\r\ntwo\r\n" >expect &&
	test_cmp expect ga.ours/attr/t.txt &&
	grep "Id: [0-9a-f]\{40\} " ga.ours/attr/i.c
'

test_expect_success 'git daemon: an object the server does not have: one line, nothing changed' '
	git init -q -b main other-src &&
	(cd other-src && echo x >x && git add x && git commit -qm x) &&
	git -C gd.ours config remote.origin.url "$GIT_DAEMON_URL/other-src" &&
	partial_state gd.ours >gd.before &&
	test_must_fail git -C gd.ours parallel-checkout -q $(git -C gd.ours rev-parse other~1) 2>err9 &&
	test_line_count = 1 err9 &&
	test_grep "^fatal: could not fetch [0-9a-f]\{40\} from promisor remote .origin. ($GIT_DAEMON_URL/other-src): " err9 &&
	partial_state gd.ours >gd.after &&
	test_cmp gd.before gd.after &&
	git -C gd.ours config remote.origin.url "$GIT_DAEMON_URL/src" &&
	git -C gd.ours parallel-checkout -q $(git -C gd.ours rev-parse other~1) &&
	git -C gd.git checkout -q $(git -C gd.git rev-parse other~1) &&
	same_result gd &&
	stop_git_daemon
'

test_expect_success 'http (git http-backend): the server gone: one line, nothing changed' '
	start_http_backend &&
	partial_twins "$HTTPD_URL/src" blob:none hb &&
	server_gone hb stop_http_backend \
		"^fatal: could not fetch .* from promisor remote .origin. (http://127.0.0.1:$HTTPD_PORT/src): "
'

test_expect_success 'http (git http-backend): back, switch like git' '
	start_http_backend $HTTPD_PORT &&
	: >httpd.log &&
	git -C hb.ours parallel-checkout -q other &&
	cp httpd.log requests.ours &&
	: >httpd.log &&
	git -C hb.git checkout -q other &&
	cp httpd.log requests.git &&
	test_cmp requests.git requests.ours &&
	same_result hb &&
	git -C hb.ours parallel-checkout -q v0 &&
	git -C hb.git checkout -q v0 &&
	same_result hb &&
	stop_http_backend
'

test_expect_success SSHD 'ssh (GIT_SSH_COMMAND): the server gone: one line, nothing changed' '
	start_sshd &&
	partial_twins "$SSH_URL$TRASH_DIRECTORY/src" blob:none ssh &&
	server_gone ssh stop_sshd "^fatal: could not fetch .* from promisor remote .origin. (ssh://[^@]*@127.0.0.1:$SSHD_PORT/"
'

test_expect_success SSHD 'ssh: back, switch and far switch like git (the far one with core.sshCommand)' '
	start_sshd $SSHD_PORT &&
	git -C ssh.ours parallel-checkout -q other &&
	git -C ssh.git checkout -q other &&
	same_result ssh &&
	cmd=$GIT_SSH_COMMAND &&
	(unset GIT_SSH_COMMAND && git -C ssh.ours -c core.sshCommand="$cmd" parallel-checkout -q v0) &&
	(unset GIT_SSH_COMMAND && git -C ssh.git -c core.sshCommand="$cmd" checkout -q v0) &&
	same_result ssh &&
	stop_sshd
'

test_done
