#!/usr/bin/env bash
test_description='coordinator: cases found by t/helper/fuzz-coordinator, each against git
in cp -a twins (exit status, first error line, work tree, index, HEAD)'
. "$(dirname "$0")/test-lib.sh"
. "$TEST_DIRECTORY/lib-coordinator.sh"

# fuzz_case <name> <git args> <ours args>: copies repository <name> (made
# by the test) into <name>.git and <name>.ours, runs git and ours (-j 1, 2
# and 3, each in a new copy), and compares them. The args are eval'ed.
# racy_paths <dir>: the tracked files of <dir> that share its index's second
# or are newer (racily clean: whether diff-files reports them depends on
# where the second boundary fell while the command ran, in git and in ours).
racy_paths() {
	"$PYTHON" - "$1" <<-\PY
	import os, subprocess, sys
	d = os.fsencode(sys.argv[1])
	try:
	    index = os.stat(os.path.join(d, b".git", b"index")).st_mtime_ns // 10**9
	except FileNotFoundError:
	    sys.exit(0)
	names = subprocess.run(["git", "-C", d, "ls-files", "-z"], capture_output=True, check=True).stdout
	for p in names.split(b"\0"):
	    try:
	        if p and os.lstat(os.path.join(d, p)).st_mtime_ns // 10**9 >= index:
	            sys.stdout.buffer.write(p + b"\n")
	    except OSError:
	        pass
	PY
}

# diff-files lines of <file> but those naming a path listed in racypaths.git.lst or racypaths.ours.lst
_without_racy() {
	cat racypaths.git.lst racypaths.ours.lst | awk -F"\t" "NR == FNR { racy[\$0] = 1; next } !(\$2 in racy)" - "$1"
}

# the entry count in the index file of <dir> (with a split index: its split part)
index_count() {
	python3 -c "import sys; d=open(sys.argv[1], \"rb\").read(); print(int.from_bytes(d[8:12], \"big\"))" "$1/.git/index"
}

# ours_git_opts: options before ours' subcommand (e.g. -c name=value), empty by default
ours_git_opts=
fuzz_case() {
	local name=$1 gitargs=$2 oursargs=$3 j
	rm -rf $name.git && cp -a $name $name.git &&
	{ (cd $name.git && eval "git $gitargs") >/dev/null 2>err.git; echo $? >rc.git; } &&
	{ grep -E "^(error|fatal):|no checkout\$" err.git | head -1 >first.git || :; } &&
	worktree_manifest $name.git >wt.git &&
	git -C $name.git ls-files -s -v >idx.git &&
	git -C $name.git diff-files --name-status >df.git &&
	racy_paths $name.git >racypaths.git.lst &&
	for j in 1 2 3
	do
		rm -rf $name.ours && cp -a $name $name.ours &&
		{ (cd $name.ours && eval "git $ours_git_opts parallel-checkout -j $j --threshold 0 $oursargs") >/dev/null 2>err.ours
		  echo $? >rc.ours; } &&
		{ grep -E "^(error|fatal):|no checkout\$" err.ours | head -1 >first.ours || :; } &&
		test_cmp rc.git rc.ours &&
		test_cmp first.git first.ours &&
		worktree_manifest $name.ours >wt.ours &&
		test_cmp wt.git wt.ours &&
		git -C $name.ours ls-files -s -v >idx.ours &&
		test_cmp idx.git idx.ours &&
		git -C $name.ours diff-files --name-status >df.ours &&
		racy_paths $name.ours >racypaths.ours.lst &&
		_without_racy df.git >df.git.cmp && _without_racy df.ours >df.ours.cmp &&
		test_cmp df.git.cmp df.ours.cmp &&
		test_cmp $name.git/.git/HEAD $name.ours/.git/HEAD || return 1
	done
}

test_expect_success 'a user file where a tracked directory was: a switch that changes a file in it is refused' '
	git init -q dirfile && (
		cd dirfile && mkdir build && echo one >build/util.c && echo k >keep &&
		git add . && git commit -qm one && git checkout -q -b other &&
		echo two >build/util.c && git commit -qam two && git checkout -q main &&
		rm -rf build && echo mine >build
	) &&
	fuzz_case dirfile "checkout other" other &&
	echo mine >expect && test_cmp expect dirfile.ours/build &&
	test_grep "^	build/util.c" err.ours
'

test_expect_success 'the same when the switch deletes the file in it' '
	git init -q dirfile2 && (
		cd dirfile2 && mkdir build && echo one >build/util.c && echo k >keep &&
		git add . && git commit -qm one && git checkout -q -b other &&
		git rm -q build/util.c && git commit -qm two && git checkout -q main &&
		rm -rf build && echo mine >build
	) &&
	fuzz_case dirfile2 "checkout other" other &&
	echo mine >expect && test_cmp expect dirfile2.ours/build
'

test_expect_success '--all without -f: a user file where a directory goes is fatal, nothing written' '
	git init -q allfile && (
		cd allfile && mkdir docs && echo u >docs/util.c && echo z >zz &&
		git add . && git commit -qm one &&
		rm -rf docs zz && echo mine >docs
	) &&
	fuzz_case allfile "checkout-index -a -u" "--all -u" &&
	echo 128 >expect && test_cmp expect rc.ours &&
	echo "fatal: cannot create directory at '"'"'docs'"'"': File exists" >expect &&
	test_cmp expect first.ours &&
	echo mine >expect && test_cmp expect allfile.ours/docs
'

test_expect_success '--all without -f: "already exists, no checkout" as git says it, exit 1' '
	git init -q allexists && (
		cd allexists && mkdir src && echo y >src/y && echo z >z &&
		git add . && git commit -qm one &&
		echo mine >src/y && rm z
	) &&
	fuzz_case allexists "checkout-index -a -u" "--all -u" &&
	echo "src/y already exists, no checkout" >expect &&
	test_cmp expect first.ours &&
	echo "src/y already exists, no checkout" >expect &&
	test_cmp expect err.ours
'

test_expect_success 'an untracked file with the blob bytes where the checkout writes them converted is refused' '
	git init -q conv && (
		cd conv && echo k >keep && git add . && git commit -qm one &&
		git checkout -q -b other && printf "*.txt eol=crlf\n" >.gitattributes &&
		printf "a\nb\n" >n.txt && git add . && git commit -qm two && git checkout -q main &&
		printf "a\nb\n" >n.txt
	) &&
	fuzz_case conv "checkout other" other &&
	printf "a\nb\n" >expect && test_cmp expect conv.ours/n.txt
'

test_expect_success 'a switch refreshes the stat data of the entries it keeps; -f rewrites stat-dirty ones' '
	git init -q stat && (
		cd stat && echo k >keep && echo c >chg && printf "a\nb\n" >conv.txt &&
		git add . && git commit -qm one && git checkout -q -b other &&
		echo c2 >chg && printf "*.txt eol=crlf\n" >.gitattributes &&
		git add . && git commit -qm two && git checkout -q main
	) &&
	fuzz_case stat "checkout other" other &&
	test_must_be_empty df.ours &&
	fuzz_case stat "checkout -f other" "-f other" &&
	test_must_be_empty df.ours &&
	printf "a\r\nb\r\n" >expect && test_cmp expect stat.ours/conv.txt
'

test_expect_success 'a CRLF blob under text is modified for git (its file cleans to LF): the switch is refused' '
	git init -q crlfblob && (
		cd crlfblob && printf "a\r\nb\r\n" >f.txt && echo k >keep && git add . && git commit -qm one &&
		git checkout -q -b other && echo two >f.txt && git commit -qam two && git checkout -q main &&
		printf "*.txt text\n" >.git/info/attributes
	) &&
	fuzz_case crlfblob "checkout other" other &&
	echo 1 >expect && test_cmp expect rc.ours &&
	test_grep "^	f.txt" err.ours
'

test_expect_success 'a file with mixed line endings that cleans to its staged blob is unmodified' '
	git init -q mixed && (
		cd mixed && printf "*.txt eol=crlf\n" >.gitattributes && echo a >f.txt && echo k >keep &&
		git add . && git commit -qm one && git checkout -q -b other && echo k2 >keep &&
		git commit -qam two && git checkout -q main &&
		printf "one\r\ntwo\n" >f.txt && git add f.txt
	) &&
	fuzz_case mixed "checkout other" other &&
	test_must_be_empty df.ours
'

test_expect_success 'a per-directory .gitignore counts: the switch overwrites an ignored untracked file' '
	git init -q gi && (
		cd gi && mkdir src && printf "*.txt\n" >src/.gitignore && echo k >keep &&
		git add . && git commit -qm one && git checkout -q -b other &&
		echo new >src/z.txt && git add -f src/z.txt && git commit -qm two && git checkout -q main &&
		echo mine >src/z.txt
	) &&
	fuzz_case gi "checkout other" other &&
	echo 0 >expect && test_cmp expect rc.ours
'

test_expect_success 'ignored only through info/exclude or core.excludesFile, in a directory that becomes a file: refused (2.39)' '
	git init -q gx && (
		cd gx && mkdir build && echo u >build/util.c && echo k >keep &&
		git add . && git commit -qm one && git checkout -q -b other &&
		git rm -rq build && echo file >build && git add build && git commit -qm two && git checkout -q main &&
		echo obj >build/x.o && echo "*.o" >.git/info/exclude
	) &&
	fuzz_case gx "checkout other" other &&
	echo obj >expect && test_cmp expect gx.ours/build/x.o &&
	(cd gx && echo "*.o" >"$HOME/fuzz-excludes" && git config core.excludesFile "$HOME/fuzz-excludes" &&
	 : >.git/info/exclude) &&
	fuzz_case gx "checkout other" other &&
	echo obj >expect && test_cmp expect gx.ours/build/x.o &&
	(cd gx && echo "*.o" >.gitignore) &&
	fuzz_case gx "checkout other" other &&
	test_path_is_file gx.ours/build
'

test_expect_success 'a directory, even empty, where a leaving tracked file was: refused as a local change' '
	git init -q dleave && (
		cd dleave && echo a >f && echo k >keep && git add . && git commit -qm one &&
		git checkout -q -b other && git rm -q f && git commit -qm two && git checkout -q main &&
		rm f && mkdir f
	) &&
	fuzz_case dleave "checkout other" other &&
	test_grep "^	f\$" err.ours
'

test_expect_success 'git rm --cached, then a target without the file: refused, the file would be removed' '
	git init -q rmc && (
		cd rmc && echo a >f && echo k >keep && git add . && git commit -qm one &&
		git checkout -q -b other && git rm -q f && git commit -qm two && git checkout -q main &&
		git rm -q --cached f
	) &&
	fuzz_case rmc "checkout other" other &&
	echo "error: The following untracked working tree files would be removed by checkout:" >expect &&
	test_cmp expect first.ours &&
	git init -q rmc2 && (
		cd rmc2 && echo a >c && echo k >keep && git add . && git commit -qm one &&
		git checkout -q -b other && git rm -q c && mkdir c && echo x >c/x && git add c &&
		git commit -qm two && git checkout -q main && git rm -q --cached c
	) &&
	fuzz_case rmc2 "checkout other" other &&
	test_cmp err.git err.ours
'

test_expect_success 'a user file where a tracked directory was, the target has a file there: both groups, as git' '
	git init -q both && (
		cd both && mkdir d && echo f >d/f.txt && echo k >keep && git add . && git commit -qm one &&
		git checkout -q -b other && git rm -rq d && echo file >d && git add d && git commit -qm two &&
		git checkout -q main && rm -rf d && echo mine >d
	) &&
	fuzz_case both "checkout other" other &&
	grep -v "^Aborting" err.git >expect && grep -v "^Aborting" err.ours >actual && test_cmp expect actual &&
	test_line_count = 3 actual &&
	git init -q both2 && (
		cd both2 && mkdir d && echo f >d/f.txt && echo k >keep && git add . && git commit -qm one &&
		git checkout -q -b other && mkdir d/e && echo g >d/e/g && echo f2 >d/f.txt && git add d && git commit -qm two &&
		git checkout -q main && rm -rf d && echo mine >d
	) &&
	fuzz_case both2 "checkout other" other &&
	grep -v "^Aborting" err.git >expect && grep -v "^Aborting" err.ours >actual && test_cmp expect actual &&
	test_line_count = 6 actual
'

test_expect_success 'attributes: a switch to a commit without .gitattributes writes without the old rules' '
	git init -q attrdrop && (
		cd attrdrop && printf "*.txt eol=crlf\n" >.gitattributes && echo a >f.txt &&
		git add . && git commit -qm one && git checkout -q -b other && git rm -q .gitattributes &&
		echo b >f.txt && git commit -qam two && git checkout -q main
	) &&
	fuzz_case attrdrop "checkout other" other &&
	echo b >expect && test_cmp expect attrdrop.ours/f.txt &&
	fuzz_case attrdrop "checkout -f other" "-f other"
'

test_expect_success 'attributes: a paths checkout reads the edited work-tree .gitattributes first; so does --all' '
	git init -q attrwt && (
		cd attrwt && echo a >f.txt && git add . && git commit -qm one &&
		printf "*.txt eol=crlf\n" >.gitattributes && git add .gitattributes && git commit -qm attrs &&
		printf "*.txt -text\n" >.gitattributes && rm f.txt
	) &&
	fuzz_case attrwt "checkout -- f.txt" "-- f.txt" &&
	echo a >expect && test_cmp expect attrwt.ours/f.txt &&
	fuzz_case attrwt "checkout \$(git rev-parse HEAD~1) -- f.txt" "\$(git rev-parse HEAD~1) -- f.txt" &&
	fuzz_case attrwt "checkout-index -a -u" "--all -u"
'

test_expect_success 'a file whose size changed is modified without its content read, even if it cleans to the blob' '
	git init -q sized && (
		cd sized && printf "* text=auto\n" >.gitattributes && echo a >f && echo k >keep &&
		git add . && git commit -qm one && git checkout -q -b other && echo k2 >keep &&
		git commit -qam two && git checkout -q main && printf "a\r\n" >f
	) &&
	fuzz_case sized "checkout other" other &&
	echo "M	f" >expect && test_cmp expect df.ours
'

test_expect_success 'an encoding that fails: printed, content written unconverted, exit 0 at every -j, like git' '
	git init -q enc && (
		cd enc && printf "\377\376 bad\n" >f.u16 && git add . &&
		printf "*.u16 working-tree-encoding=UTF-16LE\n" >.gitattributes && git add .gitattributes &&
		git commit -qm one && rm f.u16
	) &&
	fuzz_case enc "checkout-index -a -f --prefix=out/" "--all -f --prefix=out/" &&
	fuzz_case enc "checkout -- f.u16" "-- f.u16" &&
	echo 0 >expect && test_cmp expect rc.ours &&
	test_line_count = 1 err.ours
'

test_expect_success 'a tracked .gitattributes that is rewritten is read from the index, as git unlinks it first' '
	git init -q attrdir && (
		cd attrdir && mkdir -p c/deep d &&
		printf "*.txt text eol=crlf\n" >.gitattributes && echo other >c/deep/z.txt &&
		printf "*.txt -text\n" >d/.gitattributes && echo x >"d/+a.txt" && echo y >d/y.txt &&
		git add . && git commit -qm one &&
		echo local >.gitattributes && echo local >d/.gitattributes && rm c/deep/z.txt d/y.txt "d/+a.txt"
	) &&
	fuzz_case attrdir "checkout-index -a -f -u" "--all -f -u" &&
	printf "other\r\n" >expect && test_cmp expect attrdir.ours/c/deep/z.txt &&
	printf "y\r\n" >expect && test_cmp expect attrdir.ours/d/y.txt &&
	fuzz_case attrdir "checkout -- ." "-- ." &&
	fuzz_case attrdir "checkout -- c d/.gitattributes d/y.txt" "-- c d/.gitattributes d/y.txt" &&
	fuzz_case attrdir "checkout-index -a" "--all"
'

test_expect_success 'the same with the coordinator'"'"'s unlinks in flight: a .gitattributes is still removed at its turn' '
	ours_git_opts="-c checkout.coordinatorThreads=4" &&
	fuzz_case attrdir "checkout-index -a -f -u" "--all -f -u" &&
	printf "other\r\n" >expect && test_cmp expect attrdir.ours/c/deep/z.txt &&
	fuzz_case attrdir "checkout -- ." "-- ." &&
	fuzz_case attrdir "checkout-index -a" "--all" &&
	ours_git_opts=
'

test_expect_success 'a file git cannot read back from its encoding while checking it is reported as git does' '
	git init -q encback && (
		cd encback && printf "a\r\nb\n" >f.u16 && printf "\377\376a\000" >g.u16 &&
		git add . && git commit -qm one &&
		# a future mtime: the refresh writes both entries racily clean
		# (smudged), so the checkout reads them back
		touch -d "+1 day" f.u16 g.u16 && git update-index -q --refresh &&
		printf "*.u16 working-tree-encoding=UTF-16LE\n" >.gitattributes
	) &&
	fuzz_case encback "checkout main" main &&
	test_grep "^error: failed to encode .f.u16. from UTF-16LE to UTF-8" err.ours &&
	test_grep "^error: BOM is prohibited in .g.u16. if encoded as UTF-16LE" err.ours &&
	test_grep "^hint: The file .g.u16. contains a byte order mark (BOM). Please use UTF-16 as" err.ours
'

test_expect_success 'a pathspec with a trailing slash names a gitlink, as ce_path_match has it' '
	git init -q slashlink && (
		cd slashlink && echo t >top && git add top &&
		git update-index --add --cacheinfo 160000,1111111111111111111111111111111111111111,sub &&
		git commit -qm one && git checkout -q -b other && git rm -q --cached sub &&
		git commit -qm two
	) &&
	fuzz_case slashlink "checkout main -- sub/" "main -- sub/" &&
	git -C slashlink.ours ls-files -s sub >actual && test_grep "^160000 1111" actual &&
	fuzz_case slashlink "checkout main -- sub/ ':!sub/'" "main -- sub/ ':!sub/'" &&
	test_cmp err.git err.ours &&
	fuzz_case slashlink "checkout -- nope ':!top'" "-- nope ':!top'" &&
	test_cmp err.git err.ours &&
	test_line_count = 2 err.ours
'

test_expect_success 'racily clean entries: smudged at the index write as git does (seconds, no USE_NSEC)' '
	git init -q racy && (
		cd racy && printf "c text eol=crlf\n" >.gitattributes && printf "caf\303\251\n" >c &&
		echo k >k && git add . && git commit -qm one && rm c && git checkout c &&
		git checkout -q -b other && git rm -q .gitattributes && git commit -qm two &&
		git checkout -q main && git update-index -q --refresh &&
		# c holds CRLF now; stat data that survive cp -a (mtime, size), and
		# the index read in the same second as the file: racy. That second
		# is 10 s back, so no index written later is in it too (git would
		# then read c again, as diff-files does, whoever wrote the index)
		git config core.checkStat minimal &&
		m=$(($(date +%s) - 10)) && touch -d @$m c && git update-index -q --refresh &&
		touch -d @$m.999999999 .git/index
	) &&
	fuzz_case racy "checkout -f other" "-f other" &&
	git -C racy.ours ls-files --debug c >debug && test_grep "size: 0" debug &&
	echo c >expect && git -C racy.ours diff-files --name-only >actual && test_cmp expect actual &&
	fuzz_case racy "checkout other" other &&
	git -C racy.ours diff-files --name-only >actual && test_must_be_empty actual
'

test_expect_success '--all: a racily clean file is judged with its check-in attributes; a prefix leaves .gitattributes be' '
	git init -q racyall && (
		cd racyall && mkdir src && printf "y eol=crlf\n" >src/.gitattributes && echo other >src/y &&
		printf "*.txt eol=crlf\n" >.gitattributes && echo hello >A.txt &&
		git add . && git commit -qm one && rm src/y && git checkout src/y &&
		git update-index -q --refresh && git config core.checkStat minimal &&
		# racy, in a second 10 s back (see the test before)
		m=$(($(date +%s) - 10)) && touch -d @$m src/y && git update-index -q --refresh &&
		touch -d @$m.999999999 .git/index
	) &&
	fuzz_case racyall "checkout-index -a" "--all" &&
	echo 0 >expect && test_cmp expect rc.ours &&
	fuzz_case racyall "checkout-index -a -u" "--all -u" &&
	echo "*.o eol=crlf" >racyall/.gitattributes &&
	fuzz_case racyall "checkout-index -a -f --prefix=out/" "--all -f --prefix=out/" &&
	echo hello >expect && test_cmp expect racyall.ours/out/A.txt
'

test_expect_success 'an untracked .gitattributes in a subdirectory counts (no tracked one anywhere)' '
	git init -q untrattr && (
		cd untrattr && mkdir src && echo x >src/x.o && echo t >top &&
		git add . && git commit -qm one && git checkout -q -b other &&
		echo y >src/y.o && git add src/y.o && git commit -qm two && git checkout -q main &&
		printf "*.o eol=crlf\n" >src/.gitattributes
	) &&
	fuzz_case untrattr "checkout-index -a -f -u --prefix=out/" "--all -f -u --prefix=out/" &&
	printf "x\r\n" >expect && test_cmp expect untrattr.ours/out/src/x.o &&
	fuzz_case untrattr "checkout other" other &&
	printf "y\r\n" >expect && test_cmp expect untrattr.ours/src/y.o
'

test_expect_success 'a symlink to a directory in place of a tracked one: a leaving file seen through it is a local change' '
	mkdir -p outside/util.c && echo u >outside/util.c/u &&
	git init -q linkdir && (
		cd linkdir && echo k >k && git add k && git commit -qm one && git checkout -q -b other &&
		mkdir build && echo one >build/util.c && git add build && git commit -qm two &&
		rm -rf build && ln -s "$TRASH_DIRECTORY/outside" build
	) &&
	fuzz_case linkdir "checkout main" main &&
	test_grep "^error: Your local changes to the following files would be overwritten by checkout:" err.ours &&
	echo u >expect && test_cmp expect outside/util.c/u
'

test_expect_success 'a file where a directory was, the target has a file below it: git lists only the file in the way' '
	git init -q leadfile && (
		cd leadfile && mkdir -p d/e && echo one >d/e/g && git add . && git commit -qm one &&
		git checkout -q -b other && git rm -q -r d && mkdir d && echo two >d/e && git add d &&
		git commit -qm two && git checkout -q main && rm -rf d && echo mine >d
	) &&
	fuzz_case leadfile "checkout other" other &&
	test_cmp err.git err.ours &&
	echo mine >expect && test_cmp expect leadfile.ours/d
'

test_expect_success 'local changes after a switch are listed from stat data: a file that no longer decodes is not read' '
	git init -q u16 && (
		cd u16 && printf "%0300d\n" 0 | tr 0 x >f.u16 && git add f.u16 && git commit -qm one &&
		git checkout -q -b b0 && echo "*.u16 working-tree-encoding=UTF-16LE" >.gitattributes &&
		git add .gitattributes && git commit -qm two && rm f.u16 && git checkout -q -f b0 &&
		{ printf "%0300d\n" 0 | tr 0 x && echo local; } >f.u16 &&
		# every time 10 s back, the file still newer than the index
		find . -exec sh -c "for p; do touch -h -r \"\$p\" -d \"-10 seconds\" \"\$p\"; done" - {} +
	) &&
	fuzz_case u16 "checkout main" main &&
	! grep "encode" err.ours
'

# dir_to_file <name> <setup>: a repository whose main has docs/util.c and
# whose branch "file" has a file docs where that directory was; <setup>
# (eval'ed in it, on main) makes the local state the switch starts from.
dir_to_file() {
	git init -q "$1" && (
		cd "$1" && mkdir docs && echo a >docs/util.c && echo k >keep &&
		git add . && git commit -qm one && git checkout -q --orphan file && git rm -rqf . &&
		echo f >docs && echo k >keep && git add . && git commit -qm two && git checkout -q main &&
		eval "$2"
	) &&
	fuzz_case "$1" "checkout file" file
}

test_expect_success 'a file replaces a directory: the index entries below are checked against their files, then go' '
	# (verify_clean_subdirectory: a staged change goes with its directory
	# without a word, and so does a file only the index has; the first
	# entry whose file has changed is refused, and nothing below it merged)
	dir_to_file staged "echo s >docs/util.c && git add docs/util.c" &&
	echo 0 >expect && test_cmp expect rc.ours && echo f >expect && test_cmp expect staged.ours/docs &&
	dir_to_file added "echo n >docs/new.c && git add docs/new.c" &&
	git -C added.ours ls-files >actual && printf "docs\nkeep\n" >expect && test_cmp expect actual &&
	dir_to_file added-changed "echo n >docs/new.c && git add docs/new.c && echo mine >docs/new.c" &&
	echo mine >expect && test_cmp expect added-changed.ours/docs/new.c &&
	test_grep "^	docs/new.c\$" err.ours && ! test_grep "docs/util.c" err.ours &&
	dir_to_file changed-first "echo n >docs/a.c && git add docs && echo mine >docs/a.c &&
		echo s >docs/util.c && git add docs/util.c" &&
	test_grep "^	docs/a.c\$" err.ours && ! test_grep "docs/util.c" err.ours &&
	dir_to_file staged-untracked "echo s >docs/util.c && git add docs/util.c && echo u >docs/u" &&
	test_grep "would lose untracked files" err.ours && ! test_grep "docs/util.c" err.ours &&
	dir_to_file unstaged "echo mine >docs/util.c" &&
	# the same on a split index and on index version 4
	dir_to_file added-split "git update-index --split-index && echo n >docs/new.c && git add docs/new.c" &&
	ls added-split.ours/.git/sharedindex.* >/dev/null &&
	git -C added-split.ours ls-files >actual && printf "docs\nkeep\n" >expect && test_cmp expect actual &&
	dir_to_file staged-v4 "git update-index --index-version 4 && echo s >docs/util.c && git add docs/util.c" &&
	head -c 12 staged-v4.git/.git/index >v.git && head -c 12 staged-v4.ours/.git/index >v.ours &&
	test_cmp v.git v.ours  # (signature, version 4 kept, entry count)
'

test_expect_success 'a file where an ignored or a missing directory is: an entry only the index has below it keeps its place' '
	# (check_ok_to_remove lets an excluded directory go unchecked, and a
	# missing one needs no check; the kept entry below then replaces the new
	# file in the index, which is not written)
	dir_to_file ignored-added "echo docs/ >.git/info/exclude && echo n >docs/new.c && git add -f docs/new.c" &&
	git -C ignored-added.ours ls-files >actual && printf "docs/new.c\nkeep\n" >expect && test_cmp expect actual &&
	dir_to_file gone-added "echo n >docs/new.c && git add docs/new.c && rm -rf docs" &&
	git -C gone-added.ours ls-files >actual && printf "docs/new.c\nkeep\n" >expect && test_cmp expect actual &&
	test_path_is_missing gone-added.ours/docs &&
	dir_to_file gone-staged "echo s >docs/util.c && git add docs/util.c && rm -rf docs" &&
	dir_to_file ignored-staged "echo docs/ >.git/info/exclude && echo s >docs/util.c && git add -f docs/util.c" &&
	dir_to_file ignored "echo docs/ >.git/info/exclude"
'

# vouched <name> <flag>: a repository whose file v is marked <flag>
# (--assume-unchanged or --skip-worktree) and then touched (stat data that
# no longer match: git's verify_uptodate looks at such a file anyway);
# branch "changed" changes v, "gone" deletes it, "same" changes only w.
vouched() {
	git init -q $1 && (
		cd $1 && echo v >v && echo w >w && git add . && git commit -qm one &&
		git checkout -q -b changed && echo v2 >v && git commit -qam two &&
		git checkout -q -b gone main && git rm -q v && git commit -qm three &&
		git checkout -q -b same main && echo w2 >w && git commit -qam four &&
		git checkout -q main && git update-index $2 v && touch -d "2030-01-01" v
	)
}

test_expect_success 'a file the user vouched for is still checked before a switch replaces or removes it' '
	for flag in --assume-unchanged --skip-worktree
	do
		rm -rf vouch* &&
		vouched vouch $flag &&
		fuzz_case vouch "checkout changed" changed &&
		echo 1 >expect && test_cmp expect rc.ours &&
		fuzz_case vouch "checkout gone" gone &&
		echo 1 >expect && test_cmp expect rc.ours &&
		fuzz_case vouch "checkout same" same &&
		echo 0 >expect && test_cmp expect rc.ours || return 1
	done
'

test_expect_success '-f stops at a vouched-for file it would replace or remove, as git: nothing touched' '
	for flag in --assume-unchanged --skip-worktree
	do
		rm -rf vouch* &&
		vouched vouch $flag &&
		fuzz_case vouch "checkout -f changed" "-f changed" &&
		echo 128 >expect && test_cmp expect rc.ours &&
		echo "error: Entry '"'"'v'"'"' not uptodate. Cannot merge." >expect && test_cmp expect first.ours &&
		fuzz_case vouch "checkout -f gone" "-f gone" &&
		echo 128 >expect && test_cmp expect rc.ours || return 1
	done
'

test_expect_success '-f keeps an assume-unchanged entry it rewrites, and a skip-worktree entry it keeps, flagged' '
	for flag in --assume-unchanged --skip-worktree
	do
		rm -rf vouch* &&
		vouched vouch $flag && rm vouch/v &&
		fuzz_case vouch "checkout -f same" "-f same" &&
		git -C vouch.ours ls-files -v v >actual &&
		case $flag in --skip-worktree) echo "S v" ;; *) echo "h v" ;; esac >expect &&
		test_cmp expect actual || return 1
	done
'

test_expect_success 'a skip-worktree entry the target changes stays skip-worktree (the file written), as in git' '
	rm -rf vouch* &&
	vouched vouch --skip-worktree && rm vouch/v &&
	fuzz_case vouch "checkout changed" changed &&
	git -C vouch.ours ls-files -v v >actual && echo "S v" >expect && test_cmp expect actual &&
	fuzz_case vouch "checkout -f changed" "-f changed"
'

test_expect_success 'feature.manyFiles: the checkout adds an untracked cache, as git does' '
	git init -q many && (
		cd many && echo a >a && git add . && git commit -qm one && git checkout -q -b other &&
		echo b >b && git add . && git commit -qm two && git checkout -q main &&
		git config feature.manyFiles true
	) &&
	fuzz_case many "checkout other" other &&
	grep -q UNTR many.git/.git/index && grep -q UNTR many.ours/.git/index
'

# outside <name>: an assume-unchanged file d/x the sparse-checkout patterns
# written since leave out (the index not yet reapplied), its stat data gone
# stale; branch "other" changes only a.txt, "more" adds d/new, "gone" deletes d/x.
outside() {
	git init -q $1 && (
		cd $1 && mkdir d && echo a >a.txt && echo x >d/x && git add . && git commit -qm one &&
		git checkout -q -b other && echo a2 >a.txt && git commit -qam two &&
		git checkout -q -b more main && echo n >d/new && git add d/new && git commit -qm three &&
		git checkout -q -b gone main && git rm -q d/x && git commit -qm four &&
		git checkout -q main && git config core.sparseCheckout true &&
		printf "/*\n!/d/\n" >.git/info/sparse-checkout &&
		git update-index --assume-unchanged d/x && touch -d "2030-01-01" d/x
	)
}

test_expect_success 'sparse checkout: a file leaving the patterns is kept when its stat data differ, as git' '
	outside sparse &&
	fuzz_case sparse "checkout other" other &&
	test_path_is_file sparse.ours/d/x &&
	test_grep "not up to date and were left despite sparse patterns" err.ours
'

test_expect_success '-f removing a stale file that leaves the patterns: git says so on an error line, exits 0' '
	rm -rf sparse* && outside sparse && git -C sparse update-index --no-assume-unchanged d/x &&
	fuzz_case sparse "checkout -f gone" "-f gone" &&
	echo "error: Path '"'"'d/x'"'"' not uptodate; will not remove from working tree." >expect &&
	test_cmp expect first.ours && echo 0 >expect && test_cmp expect rc.ours &&
	test_path_is_missing sparse.ours/d/x &&
	fuzz_case sparse "checkout -f other" "-f other"
'

test_expect_success 'sparse checkout: -f keeps the stat data of an entry it would rewrite but leaves outside, as git, split index or not' '
	for split in "" "git update-index --split-index"
	do
		rm -rf sparse* && outside sparse && git -C sparse update-index --no-assume-unchanged d/x &&
		(cd sparse && eval "$split") &&
		fuzz_case sparse "checkout -f other" "-f other" &&
		git -C sparse.git ls-files --debug d/x >expect &&
		git -C sparse.ours ls-files --debug d/x >actual &&
		test_cmp expect actual && ! test_grep "mtime: 0:0" actual &&
		index_count sparse.git >expect && index_count sparse.ours >actual && test_cmp expect actual || return 1
	done
'

test_expect_success 'a clean file that leaves, outside the patterns: git still says it is not up to date' '
	rm -rf sparse* && outside sparse &&
	git -C sparse update-index --no-assume-unchanged d/x && git -C sparse update-index -q --refresh &&
	fuzz_case sparse "checkout -f gone" "-f gone" &&
	echo "error: Path '"'"'d/x'"'"' not uptodate; will not remove from working tree." >expect &&
	test_cmp expect first.ours && test_path_is_missing sparse.ours/d/x &&
	fuzz_case sparse "checkout gone" gone &&
	test_grep "not up to date and were left despite sparse patterns" err.ours
'

test_expect_success 'a file leaving the patterns that is already gone: its emptied directory goes too' '
	rm -rf sparse* && outside sparse &&
	(cd sparse && git update-index --no-assume-unchanged d/x && rm d/x) &&
	fuzz_case sparse "checkout -f main" "-f main" &&
	test_path_is_missing sparse.ours/d &&
	fuzz_case sparse "checkout --detach main" "--detach main" &&
	test_path_is_missing sparse.ours/d
'

test_expect_success 'a file leaving the patterns below a user file where its directory was is not up to date' '
	rm -rf sparse* && outside sparse &&
	(cd sparse && git update-index --no-assume-unchanged d/x && rm -r d && echo mine >d) &&
	fuzz_case sparse "checkout main" main &&
	git -C sparse.ours ls-files -v d/x >actual && echo "H d/x" >expect && test_cmp expect actual &&
	echo mine >expect && test_cmp expect sparse.ours/d
'

test_expect_success 'an untracked file where a sparse checkout adds a path is refused, not overwritten (git overwrites it)' '
	git init -q sparseadd && (
		cd sparseadd && mkdir c && echo c >c/f && git add . && git commit -qm one &&
		git checkout -q -b other && echo new >top && git add top && git commit -qm two &&
		git checkout -q main && git sparse-checkout set c && echo mine >top
	) &&
	test_must_fail git -C sparseadd parallel-checkout -q other 2>err &&
	test_grep "untracked working tree files would be overwritten" err &&
	echo mine >expect && test_cmp expect sparseadd/top
'

test_expect_success 'a path coming into the patterns over a file that is there: a switch keeps the file, -f writes over it' '
	git init -q comein && (
		cd comein && mkdir d && echo a >a && echo x >d/x && git add . && git commit -qm one &&
		git sparse-checkout set --no-cone /a && git config sparse.expectFilesOutsideOfPatterns true &&
		printf "/*\n" >.git/info/sparse-checkout && mkdir d && echo mine >d/x
	) &&
	fuzz_case comein "checkout main" main &&
	echo mine >expect && test_cmp expect comein.ours/d/x &&
	test_grep "already present and thus not updated" err.ours &&
	fuzz_case comein "checkout -f main" "-f main" &&
	echo x >expect && test_cmp expect comein.ours/d/x && ! grep -q "already present" err.ours
'

test_expect_success 'cone mode: paths restored outside the cone take no attributes from the index' '
	git init -q coneattr && (
		cd coneattr && mkdir c && echo c >c/f && git add . && git commit -qm one &&
		git checkout -q -b other && mkdir src && printf "y eol=crlf\n" >src/.gitattributes &&
		echo hello >src/y && git add . && git commit -qm two && git checkout -q main &&
		git sparse-checkout set c
	) &&
	fuzz_case coneattr "checkout other -- src" "other -- src" &&
	echo hello >expect && test_cmp expect coneattr.ours/src/y
'

test_expect_success 'outside the patterns, only a skip-worktree entry escapes the check of its file' '
	rm -rf sparse* && outside sparse &&
	fuzz_case sparse "checkout -f gone" "-f gone" &&
	echo 128 >expect && test_cmp expect rc.ours &&
	fuzz_case sparse "checkout gone" gone &&
	echo 1 >expect && test_cmp expect rc.ours &&
	(cd sparse && git update-index --no-assume-unchanged d/x && git update-index -q --refresh &&
	 git sparse-checkout reapply && git config sparse.expectFilesOutsideOfPatterns true &&
	 mkdir d && echo mine >d/x && touch -d "2030-01-01" d/x) &&
	fuzz_case sparse "checkout -f gone" "-f gone" &&
	echo 0 >expect && test_cmp expect rc.ours && test_path_is_file sparse.ours/d/x &&
	# (a switch: git removes the file, which holds what no commit has; ours keeps it)
	git -C sparse parallel-checkout -q gone && echo mine >expect && test_cmp expect sparse/d/x
'

test_expect_success 'sparse checkout: a new path outside the patterns is not written, so nothing in its way is refused' '
	rm -rf sparse* && outside sparse && (
		cd sparse && git update-index --no-assume-unchanged d/x && git update-index -q --refresh &&
		git sparse-checkout reapply && ln -s nowhere d
	) &&
	fuzz_case sparse "checkout more" more &&
	echo 0 >expect && test_cmp expect rc.ours &&
	test -h sparse.ours/d
'

test_expect_success 'sparse checkout: a changed file outside the patterns is refused even when it holds the target'"'"'s bytes' '
	# (ours lets a file that already holds what a switch writes be overwritten;
	# outside the patterns nothing is written but the file removed, so git'"'"'s refusal stands)
	git init -q outbytes && (
		cd outbytes && : >c && chmod +x c && git add c && git commit -qm x && git branch exec &&
		chmod -x c && git commit -qam plain && git checkout -q exec &&
		git sparse-checkout set --no-cone "src/" "!/d/" && printf "" >c
	) &&
	fuzz_case outbytes "checkout --detach main" "--detach main" &&
	echo 1 >expect && test_cmp expect rc.ours && test_path_is_file outbytes.ours/c
'

test_expect_success 'an entry whose directory became a symlink: the file reached through it is not refreshed as the entry'"'"'s' '
	# (git'"'"'s refresh_cache_ent takes a path below a symlink for missing; the
	# switch then looks through the link, finds a file that differs, and refuses)
	git init -q linkeddir && (
		cd linkeddir && mkdir docs && : >docs/util.c && git add docs && git commit -qm docs &&
		git branch docs && git rm -rq docs && git commit -qm gone && git branch gone && git checkout -q docs &&
		rm -rf docs && ln -s .git docs && : >docs/util.c
	) &&
	fuzz_case linkeddir "checkout gone" gone &&
	echo 1 >expect && test_cmp expect rc.ours && test_path_is_file linkeddir.ours/.git/util.c
'

test_expect_success 'sparse checkout: a file outside the patterns that the target makes a gitlink stays, as git'"'"'s rmdir leaves it' '
	# (git removes a path leaving the patterns by its new entry'"'"'s mode: a
	# gitlink'"'"'s rmdir, which fails on the file there, with a warning)
	git init -q tolink && (
		cd tolink && mkdir src d && echo s >src/s && echo f >d/sub && git add . && git commit -qm file &&
		git branch file && c=$(git rev-parse HEAD) && git rm -q --cached d/sub &&
		git update-index --add --cacheinfo 160000,$c,d/sub && git commit -qm link && git branch link &&
		git checkout -q -f file && git sparse-checkout set src && mkdir d && echo f >d/sub
	) &&
	fuzz_case tolink "checkout link" link &&
	echo 0 >expect && test_cmp expect rc.ours && test_path_is_file tolink.ours/d/sub &&
	grep "^warning: unable to rmdir .d/sub.: Not a directory" err.ours &&
	fuzz_case tolink "checkout -f link" "-f link" && test_path_is_file tolink.ours/d/sub
'

# the REUC extension'"'"'s data of the index in <dir>, hex (empty: none)
reuc_of() {
	python3 -c "import sys; d=open(sys.argv[1], \"rb\").read(); i=d.find(b\"REUC\")
sys.stdout.write(d[i + 8:i + 8 + int.from_bytes(d[i + 4:i + 8], \"big\")].hex() if i > 0 else \"\")" "$1/.git/index"
}

test_expect_success 'sparse checkout: a new file over a directory of entries leaves the resolve-undo data git leaves' '
	# (the entries below are merged before the new path is checked, each removal
	# HEAD'"'"'s entry at stage 3, replaced by the check: add_index_entry records it)
	git init -q reuc && (
		cd reuc && mkdir build && printf x >build/util.c && echo k >build/keep && git add . &&
		git commit -qm dir && git branch dir && git rm -rq --cached build && rm -rf build &&
		echo file >build && git add build && git commit -qm file && git branch file &&
		git checkout -q --detach dir && git sparse-checkout set --no-cone "/*" "!*.o"
	) &&
	fuzz_case reuc "checkout file" file &&
	reuc_of reuc.git >reuc.expect && test -s reuc.expect && reuc_of reuc.ours >reuc.actual &&
	test_cmp reuc.expect reuc.actual &&
	# (-f: oneway_merge removes the index'"'"'s own entries, at stage 0: nothing recorded)
	fuzz_case reuc "checkout -f file" "-f file" &&
	reuc_of reuc.git >reuc.expect && test_must_be_empty reuc.expect &&
	reuc_of reuc.ours >reuc.actual && test_must_be_empty reuc.actual &&
	(cd reuc && git sparse-checkout disable) && fuzz_case reuc "checkout file" file &&
	reuc_of reuc.git >reuc.expect && test_must_be_empty reuc.expect &&
	reuc_of reuc.ours >reuc.actual && test_must_be_empty reuc.actual
'

test_expect_success 'sparse checkout: a merge refusal comes before any check of a new path, as git'"'"'s first pass makes no such check' '
	# (outside a sparse checkout git finds the user'"'"'s file where the new file goes
	# first; inside one, the entry below that path, whose directory the file replaced)
	git init -q dfsparse && (
		cd dfsparse && mkdir P && echo x >P/x && echo t >t && git add . && git commit -qm dir &&
		git branch dir && git rm -rq --cached P && rm -rf P && echo file >P && git add P &&
		git commit -qm file && git branch file && git checkout -q --detach dir &&
		git sparse-checkout set --no-cone "/*" "!*.o" && rm -rf P && echo mine >P
	) &&
	fuzz_case dfsparse "checkout file" file &&
	echo "error: Your local changes to the following files would be overwritten by checkout:" >expect &&
	test_cmp expect first.ours && test_path_is_file dfsparse.ours/P &&
	(cd dfsparse && git sparse-checkout disable && rm -rf P && echo mine >P) &&
	fuzz_case dfsparse "checkout file" file &&
	echo "error: The following untracked working tree files would be overwritten by checkout:" >expect &&
	test_cmp expect first.ours
'

test_expect_success 'a path restore leaves a gitlink whose directory is there alone, its entry in the shared index' '
	# (checkout_entry never touches a gitlink'"'"'s directory; a missing one it makes, and records)
	git init -q linksplit && (
		cd linksplit && c=$(git commit-tree -m x $(git mktree </dev/null)) &&
		git update-index --add --cacheinfo 160000,$c,sub && git commit -qm link &&
		mkdir -p sub && git update-index --split-index
	) &&
	fuzz_case linksplit "checkout -- ." "-- ." &&
	index_count linksplit.git >expect && echo 0 >zero && test_cmp zero expect &&
	index_count linksplit.ours >actual && test_cmp expect actual &&
	rmdir linksplit/sub && fuzz_case linksplit "checkout -- ." "-- ." &&
	index_count linksplit.git >expect && index_count linksplit.ours >actual && test_cmp expect actual &&
	test -d linksplit.ours/sub
'

test_expect_success 'core.ignoreCase: attributes, ignore rules and sparse patterns match whatever the case, as git'"'"'s' '
	git init -q icase && (
		cd icase && git commit -q --allow-empty -m empty && git branch empty &&
		printf "*.txt eol=crlf\n/Docs/*.MD ident\n" >.gitattributes && mkdir -p SRC DOCS &&
		printf "one\ntwo\n" >SRC/Z.TXT && printf "\$Id\$\n" >DOCS/a.Md && echo x >x.O &&
		git add .gitattributes SRC DOCS x.O && git commit -qm files && git tag files &&
		git checkout -q empty && git config core.ignoreCase true &&
		echo "*.o" >.git/info/exclude && echo mine >x.O
	) &&
	fuzz_case icase "checkout files" "files" &&
	printf "one\r\ntwo\r\n" >expect && test_cmp expect icase.ours/SRC/Z.TXT &&
	echo x >expect && test_cmp expect icase.ours/x.O &&
	! grep -q "^.Id.\$" icase.ours/DOCS/a.Md &&
	git -C icase config core.sparseCheckout true &&
	printf "/docs/\n" >icase/.git/info/sparse-checkout &&
	fuzz_case icase "checkout files" "files" &&
	test_path_is_file icase.ours/DOCS/a.Md && test_path_is_missing icase.ours/SRC
'

specs_cases() {
	git init -q specs && (
		cd specs && mkdir src "s p" && echo y >src/y && echo z >src/z.txt && echo n >"s p/n.txt" &&
		echo t >top.txt && git add . && git commit -qm one &&
		echo mine >src/y && echo mine >"s p/n.txt" && echo mine >top.txt && rm src/z.txt
	) &&
	fuzz_case specs "checkout HEAD -- src src/y" "HEAD -- src src/y" &&
	fuzz_case specs "checkout -- '*.txt' 's p'" "-- '*.txt' 's p'" &&
	fuzz_case specs "checkout HEAD -- '*/' src" "HEAD -- '*/' src" &&
	fuzz_case specs "checkout -- ':(glob)*.txt'" "-- ':(glob)*.txt'" &&
	fuzz_case specs "checkout -- src/ ':!src/y'" "-- src/ ':!src/y'" &&
	fuzz_case specs "checkout -- nope src nope2" "-- nope src nope2" &&
	fuzz_case specs "checkout -- ':(icase)SRC/Y' ':(icase)*.TXT'" "-- ':(icase)SRC/Y' ':(icase)*.TXT'" &&
	fuzz_case specs "checkout -- ':(icase)[S]rc/*' ':(icase)[a-z]OP.txt'" "-- ':(icase)[S]rc/*' ':(icase)[a-z]OP.txt'"
}

test_expect_success 'overlapping pathspecs, globs, magic and names with spaces restore like git' '
	specs_cases
'

test_done
