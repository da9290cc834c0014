"""The template files of a new repository, as ``init-db.c`` ``copy_templates`` copies them.

A clone made by git starts from its template directory: ``hooks/*.sample``,
``info/exclude``, ``description``, ``branches/``. The directory is, in git's
order, the one the caller names (``GIT_TEMPLATE_DIR``), ``init.templateDir``,
else the one git was built with; an empty name means none. git's built-in
default is a compile-time path that only git knows, so we look where every
packaging of git puts it (:data:`DEFAULT_GIT_TEMPLATE_DIRS`) and take the
first that exists.

``copy_templates_1``: entries whose names start with ``.`` are skipped, an
entry that already exists in the repository is kept, directories are made
and walked, symbolic links copied as links, files copied with their mode.
We copy after the repository was made (git copies into the empty
directory first), so what a repository made by dulwich has of its own (a
partial clone's: ``description``, ``info/exclude``, empty ``branches/``,
``hooks/`` and ``info/``; git makes none of them, nor does
:func:`init_db.init_db`) goes first, and a template ``config`` is merged
(:func:`_merge_config`) rather than copied.
"""

from __future__ import annotations

import os

from .wrapper import write_in_full

__all__ = ["DEFAULT_GIT_TEMPLATE_DIRS", "copy_templates", "template_dir"]

#: ``DEFAULT_GIT_TEMPLATE_DIR`` as distributions and source builds install it.
DEFAULT_GIT_TEMPLATE_DIRS = ("/usr/share/git-core/templates", "/usr/local/share/git-core/templates",
                             "/opt/homebrew/share/git-core/templates")

#: Made with defaults of their own when dulwich creates a repository.
_INIT_FILES = ("description", os.path.join("info", "exclude"))
_INIT_DIRS = ("branches", "hooks", "info")


def template_dir(given: str | None, config) -> str | None:
    """The template directory: ``given`` (``GIT_TEMPLATE_DIR``), else
    ``init.templateDir`` (``~`` expanded), else the first default that exists."""
    if given is None and config is not None:
        try:
            value = config.get((b"init",), b"templatedir")
        except KeyError:
            value = None
        if value is not None:
            given = os.path.expanduser(os.fsdecode(value))
    if given is not None:
        return given or None
    return next((d for d in DEFAULT_GIT_TEMPLATE_DIRS if os.path.isdir(d)), None)


def copy_templates(gitdir: str, source: str | None) -> None:
    """``copy_templates`` from ``source`` into ``gitdir`` (none when None or
    missing), after what the repository's creation made of its own goes."""
    for rel in _INIT_FILES:
        if os.path.isfile(os.path.join(gitdir, rel)):
            os.unlink(os.path.join(gitdir, rel))
    for rel in _INIT_DIRS:
        try:
            os.rmdir(os.path.join(gitdir, rel))
        except OSError:
            pass  # not there, or not empty
    if source is not None and os.path.isdir(source):
        template_config = os.path.join(source, "config")
        if os.path.isfile(template_config):
            _merge_config(template_config, os.path.join(gitdir, "config"))
        _copy_dir(source, gitdir)


def _merge_config(template: str, config: str) -> None:
    """The clone's ``config`` as git leaves it: the template's copied first,
    then ``create_default_files`` and clone set their values in it
    (``git_config_set``: a key of a section the template has goes there, in
    place of the template's value; a new section goes at the end). The
    template's ``core.logAllRefUpdates`` stays: git sets its default only
    when the template says nothing. The file is written by dulwich, so the
    template's comments and layout are not kept (``git config -l`` is)."""
    from dulwich.config import ConfigFile

    merged, ours = ConfigFile.from_path(template), ConfigFile.from_path(config)
    for section in ours.sections():
        for key, value in ours.items(section):
            if section == (b"core",) and key.lower() == b"logallrefupdates" and _has(merged, section, key):
                continue
            merged.set(section, key, value)
    merged.write_to_path(config)


def _has(cfg, section: tuple[bytes, ...], key: bytes) -> bool:
    try:
        cfg.get(section, key)
    except KeyError:
        return False
    return True


def _copy_dir(src: str, dst: str) -> None:
    for name in sorted(os.listdir(src)):
        if name.startswith("."):
            continue
        s, d = os.path.join(src, name), os.path.join(dst, name)
        if os.path.islink(s):
            if not os.path.lexists(d):
                os.symlink(os.readlink(s), d)
        elif os.path.isdir(s):
            if not os.path.lexists(d):
                os.mkdir(d)
            if os.path.isdir(d) and not os.path.islink(d):
                _copy_dir(s, d)
        elif not os.path.lexists(d):
            _copy_file(s, d)


def _copy_file(src: str, dst: str) -> None:
    """``copy.c``'s ``copy_file``: the template's bytes in a new file made
    0777 when the template has an executable bit, else 0666 (the umask then
    applies, as to git's ``open``)."""
    with open(src, "rb") as f:
        data = f.read()
        executable = os.fstat(f.fileno()).st_mode & 0o111
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o777 if executable else 0o666)
    try:
        write_in_full(fd, data)
    finally:
        os.close(fd)
