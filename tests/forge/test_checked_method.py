"""The wrapper forge.bound_self puts on a library class's methods: it refuses a
`self` whose real class does not derive from the method's class, and otherwise
calls the method as it is. A method of `self` alone gets a wrapper that packs no
arguments (issue 26: `csv.DictReader.__next__` runs once a row of a CSV tool);
both kinds check the same and pass the same through."""

from __future__ import annotations

import csv
from typing import Any

import pytest

from forge.bound_self import checked_method

_VARARGS = 0x04 | 0x08


class Reader:
    """A library-like class."""

    def __init__(self) -> None:
        self.rows = iter([1, 2])

    def __next__(self) -> int:
        """The next row."""
        return next(self.rows)

    def scaled(self, factor: int, *, offset: int = 0) -> int:
        return next(self.rows) * factor + offset


class Sub(Reader):
    pass


def _wrapped(name: str) -> Any:
    return checked_method(Reader, Reader.__dict__[name])


def test_a_method_of_self_alone_packs_no_arguments_and_checks_the_same() -> None:
    nxt = _wrapped("__next__")
    assert not nxt.__code__.co_flags & _VARARGS  # no *args, **kwargs on every row
    assert (nxt.__qualname__, nxt.__doc__) == ("Reader.__next__", "The next row.")
    assert nxt(Reader()) == 1 and nxt(Sub()) == 1
    with pytest.raises(TypeError, match=r"Reader\.__next__\(\) was given a str object"):
        nxt("text")
    with pytest.raises(TypeError, match=r"was given the class Reader"):
        nxt(Reader)
    with pytest.raises(TypeError):
        nxt(Reader(), 2)  # as the method itself: it takes self alone
    with pytest.raises(TypeError):
        nxt(self=Reader())


def test_a_method_with_arguments_passes_them_as_given() -> None:
    scaled = _wrapped("scaled")
    assert scaled(Reader(), 10) == 10
    assert scaled(Sub(), factor=10, offset=3) == 13
    with pytest.raises(TypeError, match=r"Reader\.scaled\(\) was given a int object"):
        scaled(5, 10)


def test_the_sandbox_s_dict_reader_reads_as_before() -> None:
    wrapped = checked_method(csv.DictReader, csv.DictReader.__next__)
    reader = csv.DictReader(["a,b", "1,2", "3,4"])
    assert wrapped(reader) == {"a": "1", "b": "2"}
    assert wrapped(reader) == {"a": "3", "b": "4"}
    with pytest.raises(StopIteration):
        wrapped(reader)
    with pytest.raises(TypeError, match=r"DictReader\.__next__"):
        wrapped(csv.reader(["a"]))
