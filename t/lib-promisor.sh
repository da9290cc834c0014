# Servers for the partial-clone tests, on 127.0.0.1 only, bounded in time
# and stopped when the test script exits (trap).
#
#   free_port                      a port of 127.0.0.1 free a moment ago
#   start_git_daemon [<port>]      git daemon --export-all for $TRASH_DIRECTORY
#                                  (GIT_DAEMON_PORT, GIT_DAEMON_URL=git://127.0.0.1:<port>);
#                                  its log in daemon.log
#   stop_git_daemon
#   start_http_backend [<port>]    git http-backend behind t/helper/http-backend-server
#                                  (HTTPD_URL=http://127.0.0.1:<port>); requests in httpd.log
#   stop_http_backend
#   start_sshd [<port>]            an sshd for this test alone (its own host and user keys;
#                                  SSH_URL=ssh://<user>@127.0.0.1:<port>, GIT_SSH_COMMAND set);
#                                  prerequisite SSHD when sshd can run here
#   stop_sshd
#   wait_for_port <port>           until something accepts there (10 s at most)
#   partial_state <dir>            work tree manifest, index, HEAD and refs of <dir>,
#                                  for "nothing changed" checks
#   missing_objects <dir>          the objects <dir> lacks that its refs reach (sorted)
#   test_expect_code <code> <cmd>  <cmd> exits with exactly <code>

GIT_DAEMON_PID=
HTTPD_PID=
SSHD_PID=
trap 'stop_git_daemon; stop_http_backend; stop_sshd' EXIT

# sshd needs its privilege-separation directory, which only root can make.
SSHD=$(command -v sshd || echo /usr/sbin/sshd)
if test -x "$SSHD" && command -v ssh >/dev/null && command -v ssh-keygen >/dev/null &&
	mkdir -p /run/sshd 2>/dev/null
then
	test_set_prereq SSHD
fi

start_sshd() {
	local d="$TRASH_DIRECTORY/sshd"
	SSHD_PORT=${1:-$(free_port)} &&
	mkdir -p "$d" &&
	if ! test -f "$d/user"
	then
		ssh-keygen -q -t ed25519 -N "" -f "$d/host" &&
		ssh-keygen -q -t ed25519 -N "" -f "$d/user" &&
		cp "$d/user.pub" "$d/authorized_keys"
	fi &&
	printf "%s\n" "Port $SSHD_PORT" "ListenAddress 127.0.0.1" "HostKey $d/host" \
		"AuthorizedKeysFile $d/authorized_keys" "PidFile $d/pid" "StrictModes no" "UsePAM no" \
		"PermitRootLogin yes" "PasswordAuthentication no" "KbdInteractiveAuthentication no" \
		"AcceptEnv GIT_PROTOCOL" "SetEnv PATH=$(dirname "$(command -v git)"):/usr/bin:/bin" >"$d/config" ||
		return 1
	timeout 300 "$SSHD" -D -e -f "$d/config" >>"$TRASH_DIRECTORY/sshd.log" 2>&1 </dev/null &
	SSHD_PID=$!
	SSH_URL="ssh://$(id -un)@127.0.0.1:$SSHD_PORT"
	GIT_SSH_COMMAND="ssh -i $d/user -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes" &&
	export GIT_SSH_COMMAND &&
	wait_for_port "$SSHD_PORT"
}

stop_sshd() {
	_stop_server SSHD_PID
}

# _stop_server <variable>: kill and reap the server whose pid <variable> holds
_stop_server() {
	eval "set -- $1 \"\${$1}\""
	if test -n "$2"
	then
		kill "$2" 2>/dev/null
		wait "$2" 2>/dev/null
	fi
	eval "$1="
	return 0
}

free_port() {
	"$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for_port() {
	"$PYTHON" - "$1" <<-\PY
	import socket, sys, time
	end = time.monotonic() + 10
	while True:
	    try:
	        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
	        break
	    except OSError:
	        if time.monotonic() > end:
	            sys.exit("nothing listens on 127.0.0.1:" + sys.argv[1])
	        time.sleep(0.05)
	PY
}

start_git_daemon() {
	GIT_DAEMON_PORT=${1:-$(free_port)} || return 1
	timeout 300 git daemon --export-all --base-path="$TRASH_DIRECTORY" --reuseaddr \
		--listen=127.0.0.1 --port="$GIT_DAEMON_PORT" --timeout=60 --init-timeout=10 \
		--verbose >>"$TRASH_DIRECTORY/daemon.log" 2>&1 </dev/null &
	GIT_DAEMON_PID=$!
	GIT_DAEMON_URL=git://127.0.0.1:$GIT_DAEMON_PORT
	wait_for_port "$GIT_DAEMON_PORT"
}

stop_git_daemon() {
	_stop_server GIT_DAEMON_PID
}

start_http_backend() {
	local port=${1:-$(free_port)}
	rm -f "$TRASH_DIRECTORY/httpd.port"
	"$PYTHON" "$TEST_DIRECTORY/helper/http-backend-server" \
		"$TRASH_DIRECTORY" "$TRASH_DIRECTORY/httpd.port" 300 "$port" \
		>>"$TRASH_DIRECTORY/httpd.log" 2>&1 </dev/null &
	HTTPD_PID=$!
	"$PYTHON" -c '
import os, sys, time
end = time.monotonic() + 10
while not os.path.exists(sys.argv[1]):
    if time.monotonic() > end:
        sys.exit("the http server did not start")
    time.sleep(0.05)' "$TRASH_DIRECTORY/httpd.port" &&
	HTTPD_PORT=$(cat "$TRASH_DIRECTORY/httpd.port") &&
	HTTPD_URL=http://127.0.0.1:$HTTPD_PORT
}

stop_http_backend() {
	_stop_server HTTPD_PID
}

partial_state() {
	worktree_manifest "$1" &&
	sha1sum <"$1/.git/index" &&
	cat "$1/.git/HEAD" &&
	git -C "$1" for-each-ref --format="%(objectname) %(refname)"
}

missing_objects() {
	git -C "$1" rev-list --objects --missing=print --all | sed -n "s/^?//p" | sort
}

