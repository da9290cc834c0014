"""One peer checkout as its own process: ``python peers.py TOOL OP [ARG...]``.

Run by the bench by file path (not ``-m``), so that a timed run imports only
the peer library, as a user's script would: the figure is the whole process,
interpreter start-up included, like every other row.

* ``dulwich clone``: ``dulwich.index.build_index_from_tree`` of HEAD's tree into
  the current (``git clone --no-checkout``) repository: what ``dulwich clone``
  itself does after fetching (and what baselines.md measured).
* ``dulwich switch REV``: ``dulwich.porcelain.checkout(".", REV)``.
* ``dulwich whole SOURCE TARGET``: ``dulwich.porcelain.clone`` (checkout included).
* ``pygit2 clone``: ``Repository.checkout_head(strategy=FORCE)``: libgit2's
  own clone ends in the same call.
* ``pygit2 switch REV``: ``Repository.checkout(refname)`` (SAFE, then HEAD moves).
* ``pygit2 whole SOURCE TARGET``: ``pygit2.clone_repository``.
"""

import sys


def dulwich_clone() -> None:
    from dulwich.index import build_index_from_tree
    from dulwich.repo import Repo

    r = Repo(".")
    build_index_from_tree(r.path, r.index_path(), r.object_store, r[r.head()].tree, honor_filemode=True)


def dulwich_switch(rev: str) -> None:
    from dulwich import porcelain

    porcelain.checkout(".", rev)


def dulwich_whole(source: str, target: str) -> None:
    from dulwich import porcelain

    porcelain.clone(source, target, checkout=True).close()


def pygit2_clone() -> None:
    import pygit2

    pygit2.Repository(".").checkout_head(strategy=pygit2.enums.CheckoutStrategy.FORCE)


def pygit2_switch(rev: str) -> None:
    import pygit2

    repo = pygit2.Repository(".")
    try:
        ref = repo.lookup_reference_dwim(rev)
    except (KeyError, ValueError, pygit2.GitError):
        ref = None
    if ref is not None and ref.name.startswith("refs/heads/"):
        repo.checkout(ref)
        return
    # a tag, a remote branch or a commit id: detach, as git checkout does
    commit = (ref.peel(pygit2.Commit) if ref is not None else repo.revparse_single(rev).peel(pygit2.Commit))
    repo.checkout_tree(commit)
    repo.set_head(commit.id)


def pygit2_whole(source: str, target: str) -> None:
    import pygit2

    pygit2.clone_repository(source, target)


def main(argv: list[str]) -> int:
    fn = globals().get(f"{argv[0]}_{argv[1]}") if len(argv) >= 2 else None
    if fn is None:
        sys.stderr.write("usage: peers.py dulwich|pygit2 clone|switch|whole [ARG...]\n")
        return 129
    fn(*argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
