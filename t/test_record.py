"""record.py: the records that replaced msgspec.Struct, with the behaviour of
a Struct the package relied on (defaults, keyword-only and frozen classes,
equality, replace, JSON through msgspec's encoder)."""

from __future__ import annotations

import json

import msgspec
import pytest

from git_checkout_helper.record import Record, asdict, astuple, field, fields, json_bytes, replace

calls = []


def _factory() -> int:
    calls.append(1)
    return len(calls)


class Point(Record):
    x: int
    y: int = 2
    tags: list = []


class Options(Record, kw_only=True):
    name: str | None = None
    cpus: int = field(default_factory=_factory)


class Frozen(Record, frozen=True):
    a: bool = True
    b: bool = False


class Sparse(Record, omit_defaults=True):
    kind: str = "unknown"
    magic: str | None = None


class Holder(Record):
    inner: Sparse | None = None
    n: int = 0


def test_fields_defaults_and_positional_arguments():
    p = Point(1)
    assert (p.x, p.y, p.tags) == (1, 2, [])
    assert Point(1, 5, ["t"]).tags == ["t"]
    assert fields(Point) == ("x", "y", "tags") and astuple(Point(3, 4)) == (3, 4, [])
    with pytest.raises(TypeError):
        Point()
    with pytest.raises(AttributeError):
        p.z = 1  # slots only: a misspelt field is an error, not a new attribute
    p.y = 7
    assert p.y == 7


def test_an_empty_mutable_default_and_a_factory_are_made_per_record():
    a, b = Point(1), Point(2)
    a.tags.append("x")
    assert b.tags == [] and a.tags == ["x"]
    n = len(calls)
    assert Options().cpus == n + 1 and Options().cpus == n + 2
    assert Options(cpus=9).cpus == 9 and len(calls) == n + 2


def test_keyword_only_and_frozen():
    with pytest.raises(TypeError):
        Options("x")
    f = Frozen(False)
    with pytest.raises(AttributeError):
        f.a = True
    assert hash(f) == hash(Frozen(False)) and {f: 1}[Frozen(False, False)] == 1
    with pytest.raises(TypeError):
        hash(Point(1))  # a mutable record is not hashable, as a mutable Struct is not


def test_equality_repr_and_replace():
    assert Point(1) == Point(1) and Point(1) != Point(2)
    assert Point(1) != Holder()  # another class: never equal
    assert repr(Point(1)) == "Point(x=1, y=2, tags=[])"
    q = replace(Point(1, 3), y=4)
    assert q == Point(1, 4) and type(q) is Point
    assert replace(Frozen(), b=True) == Frozen(True, True)


def test_asdict_and_json_are_what_msgspec_gave_for_the_struct():
    class SparseStruct(msgspec.Struct, omit_defaults=True):
        kind: str = "unknown"
        magic: str | None = None

    class HolderStruct(msgspec.Struct):
        inner: SparseStruct | None = None
        n: int = 0

    for ours, theirs in ((Holder(Sparse("ext4")), HolderStruct(SparseStruct("ext4"))),
                         (Holder(Sparse(magic="0x1")), HolderStruct(SparseStruct(magic="0x1"))),
                         (Holder(), HolderStruct())):
        assert json_bytes(ours) == msgspec.json.encode(theirs)
    assert json.loads(json_bytes(Point(1, 2, ["é"]))) == {"x": 1, "y": 2, "tags": ["é"]}
    assert asdict(Sparse()) == {} and asdict(Sparse("nfs")) == {"kind": "nfs"}
    assert json_bytes({"k": [Sparse("x")]}) == b'{"k":[{"kind":"x"}]}'
