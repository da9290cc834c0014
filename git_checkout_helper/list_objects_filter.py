"""Object filters, as upload-pack applies them (``list-objects-filter.c``,
``list-objects-filter-options.c``): which objects a fetch or clone with
``--filter`` sends, for the sources this project reads directly (a
``file://`` remote or a path, whose dulwich client ignores filters).
"""

from __future__ import annotations

__all__ = ["parse_filter", "select_objects"]

OBJ_COMMIT, OBJ_TREE, OBJ_BLOB, OBJ_TAG = 1, 2, 3, 4
S_IFGITLINK = 0o160000
S_IFDIR = 0o040000



def parse_filter(spec: str) -> tuple[str, int]:
    """``list-objects-filter-options.c``: ("blob:none"|"blob:limit"|"tree", n).

    Only the forms a partial clone of ours supports; anything else raises
    :class:`ValueError` with git's wording."""
    s = spec.strip()
    if s == "blob:none":
        return "blob:limit", 0
    if s.startswith("blob:limit="):
        n = _size(s[len("blob:limit="):])
        if n is None:
            raise ValueError(f"invalid filter-spec '{spec}'")
        return "blob:limit", n
    if s.startswith("tree:"):
        try:
            depth = int(s[len("tree:"):])
        except ValueError:
            raise ValueError("expected 'tree:<depth>'") from None
        if depth < 0:
            raise ValueError("expected 'tree:<depth>'")
        return "tree", depth
    raise ValueError(f"invalid filter-spec '{spec}'")


def _size(text: str) -> int | None:
    """``git_parse_ulong``: a number with an optional k, m or g."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    t = text.strip().lower()
    mult = units.get(t[-1:], 1)
    if t[-1:] in units:
        t = t[:-1]
    return int(t) * mult if t.isdigit() else None


def select_objects(store, wants: list[bytes], haves: set[bytes], filter_spec: str | None) -> list[bytes]:
    """What ``upload-pack`` sends for ``wants`` (hex ids) under a filter
    (``list-objects.c`` with ``list-objects-filter.c``): commits and tags
    reachable from the wants, their trees unless ``tree:0``, blobs under
    ``blob:limit`` (``blob:none`` is a limit of 0: blobs smaller than the
    limit are sent). Objects named in a want are always sent. ``haves``:
    objects not to send (and not to walk below). Hex ids, in walk order."""
    kind, n = parse_filter(filter_spec) if filter_spec else ("", 0)
    out: list[bytes] = []
    seen: set[bytes] = set(haves)
    commits: list[bytes] = []
    explicit = set(wants)

    def blob_ok(oid: bytes) -> bool:
        if oid in explicit or kind == "":
            return True
        if kind == "tree":
            return False
        _t, raw = store.get_raw(oid)
        return len(raw) < n

    def add_tree(tree: bytes, depth: int) -> None:
        from dulwich.objects import parse_tree

        stack = [(tree, depth)]
        while stack:
            t, d = stack.pop()
            if t in seen:
                continue
            if kind == "tree" and d >= n and t not in explicit:
                continue
            seen.add(t)
            out.append(t)
            _type, raw = store.get_raw(t)
            for _name, mode, sha in parse_tree(raw, store.object_format.oid_length):
                if mode & 0o170000 == S_IFDIR:
                    stack.append((sha, d + 1))
                elif mode & 0o170000 != S_IFGITLINK and sha not in seen and blob_ok(sha):
                    seen.add(sha)
                    out.append(sha)

    for w in wants:
        if w in seen:
            continue
        obj_type, _raw = store.get_raw(w)
        obj = w
        while obj_type == OBJ_TAG:
            seen.add(obj)
            out.append(obj)
            obj = store[obj].object[1]
            obj_type, _raw = store.get_raw(obj)
        if obj_type == OBJ_COMMIT:
            commits.append(obj)
        elif obj_type == OBJ_TREE:
            add_tree(obj, 0)
        elif obj not in seen:
            seen.add(obj)
            out.append(obj)
    trees: list[bytes] = []
    while commits:
        c = commits.pop()
        if c in seen:
            continue
        seen.add(c)
        out.append(c)
        commit = store[c]
        trees.append(commit.tree)
        commits.extend(p for p in commit.parents if p not in seen)
    for t in trees:
        add_tree(t, 0)
    return out


