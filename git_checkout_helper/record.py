"""Records: classes of named fields (an index entry, a helper's result, the
checkout's options), declared like a ``struct`` with annotations and
defaults.

They were ``msgspec.Struct`` classes. Importing msgspec costs about 13 ms of
every start-up on these machines (its C core imports ``typing``, ``uuid``
with ``platform``, ``datetime`` and ``decimal`` at once), a twentieth of a
switch of git.git between nearby releases, for features these classes do
not use: they are never decoded, and the few that are encoded to JSON
(``-v``'s report, trace2's data) go through :func:`asdict` and msgspec's
encoder then, imported where that output is asked for. A record is a
``__slots__`` class with a generated ``__init__``: creating one costs about
100 ns more than a Struct (10 ms for 100,000 index entries, against 13 ms
saved on every run), its size is the same plus the collector's header,
which the coordinator does not use (:func:`cli.start_program`).

What a declaration may say, as msgspec spelled it::

    class Item(Record, kw_only=True, frozen=True, omit_defaults=True):
        name: bytes
        flags: int = 0
        seen: list = []                      # a fresh empty list per record
        cpus: int = field(default_factory=f)  # f() per record

``kw_only``: every field by keyword; ``frozen``: no assignment after
``__init__``, and hashable; ``omit_defaults``: :func:`asdict` leaves out
fields that hold their default. Records compare equal when of one class
with equal fields, and print as ``Item(name=b'x', flags=0, seen=[])``.
"""

from __future__ import annotations

__all__ = ["Record", "field", "fields", "replace", "astuple", "asdict", "json_bytes"]

_MISSING = object()


class _Factory:
    __slots__ = ("factory",)

    def __init__(self, factory) -> None:
        self.factory = factory


def field(*, default_factory):
    """A field whose default is made by calling ``default_factory`` for each record."""
    return _Factory(default_factory)


class _RecordMeta(type):
    """Turns the annotations of a class body into ``__slots__`` and its
    defaults into those of a generated ``__init__`` (class attributes of the
    same names cannot live beside the slots)."""

    def __new__(mcls, name, bases, ns, kw_only=False, frozen=False, omit_defaults=False, **kw):
        own = [f for f in ns.get("__annotations__", {}) if not f.startswith("_")]
        defaults = {f: ns.pop(f) for f in own if f in ns}
        ns["__slots__"] = tuple(own)
        cls = super().__new__(mcls, name, bases, ns, **kw)
        inherited = getattr(cls, "__record_fields__", ())
        cls.__record_fields__ = (*inherited, *own)
        cls.__record_defaults__ = {**getattr(cls, "__record_defaults__", {}), **defaults}
        cls.__record_omit_defaults__ = omit_defaults
        cls.__record_frozen__ = frozen or getattr(cls, "__record_frozen__", False)
        if cls.__record_fields__:
            cls.__init__ = _make_init(cls, kw_only)
        if cls.__record_frozen__:
            cls.__hash__ = _frozen_hash
            cls.__setattr__ = _frozen_setattr
        return cls


def _frozen_hash(self) -> int:
    return hash(astuple(self))


def _frozen_setattr(self, name, value):
    raise AttributeError(f"immutable type: '{type(self).__name__}'")


def _make_init(cls, kw_only: bool):
    """The ``__init__`` of ``cls``: one assignment per field, the defaults
    bound as the function's own (no lookup per call); mutable empty defaults
    and factories made per record."""
    params, body, env = [], [], {"_MISSING": _MISSING, "_set": object.__setattr__}
    for f in cls.__record_fields__:
        d = cls.__record_defaults__.get(f, _MISSING)
        value = f
        if d is _MISSING:
            params.append(f)
        elif isinstance(d, _Factory) or (type(d) in (list, dict, set) and not d):
            env[f"_make_{f}"] = d.factory if isinstance(d, _Factory) else type(d)
            params.append(f"{f}=_MISSING")
            value = f"_make_{f}() if {f} is _MISSING else {f}"
        else:
            env[f"_default_{f}"] = d
            params.append(f"{f}=_default_{f}")
        body.append(f"_set(self, {f!r}, {value})" if cls.__record_frozen__ else f"self.{f} = {value}")
    if kw_only and params:
        params.insert(0, "*")
    src = f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body or ["pass"])
    exec(src, env)  # noqa: S102 (field names are the class's own annotations: identifiers)
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


class Record(metaclass=_RecordMeta):
    """The base of a record (see the module's docstring)."""

    __slots__ = ()

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return astuple(self) == astuple(other)

    __hash__ = None  # as a mutable record is; a frozen one hashes its fields

    def __repr__(self) -> str:
        inner = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.__record_fields__)
        return f"{type(self).__name__}({inner})"


def fields(record_or_class) -> tuple[str, ...]:
    """The field names, in declaration order (base classes' first)."""
    return record_or_class.__record_fields__


def astuple(record: Record) -> tuple:
    """The field values, in declaration order."""
    return tuple([getattr(record, f) for f in record.__record_fields__])


def replace(record: Record, **changes) -> Record:
    """A copy of ``record`` with ``changes``."""
    values = {f: getattr(record, f) for f in record.__record_fields__}
    values.update(changes)
    return type(record)(**values)


def asdict(record: Record) -> dict:
    """The fields as a dict, without those holding their defaults when the
    class says ``omit_defaults`` (records within stay records: the JSON
    encoder turns each into a dict of its own, :func:`json_bytes`)."""
    values = {f: getattr(record, f) for f in record.__record_fields__}
    if record.__record_omit_defaults__:
        defaults = record.__record_defaults__
        values = {f: v for f, v in values.items() if f not in defaults or v != defaults[f]}
    return values


_encoder = None


def json_bytes(value) -> bytes:
    """``value`` (a record, or dicts, lists and scalars holding records) as
    compact UTF-8 JSON, by msgspec's encoder: imported on the first call, by
    the runs that print JSON (``-v``, trace2) and only by them."""
    global _encoder
    if _encoder is None:
        import msgspec

        _encoder = msgspec.json.Encoder(enc_hook=_enc_hook)
    return _encoder.encode(value)


def _enc_hook(obj):
    if isinstance(obj, Record):
        return asdict(obj)
    raise NotImplementedError(f"cannot encode {type(obj).__name__} as JSON")
