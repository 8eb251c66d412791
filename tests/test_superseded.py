"""A cached read keyed by a batch's stamp keeps one entry per batch and view: a newer stamp replaces the older."""

from __future__ import annotations

import pytest
import streamlit as st

from components.superseded import superseding

computed: list[tuple] = []


@st.cache_data(show_spinner=False, max_entries=100)
def _read(batch_id: int, view: str, stamp: str, _big: object) -> tuple:
    computed.append((batch_id, view, stamp))
    return (batch_id, view, stamp)


read = superseding(_read, stamps=("stamp",))


@pytest.fixture(autouse=True)
def _empty():
    _read.clear()
    computed.clear()


def test_a_newer_stamp_replaces_the_entry_of_the_same_batch_and_view_only():
    big = object()  # not part of the key: any object will do
    assert read(1, "a", "s1", big) == (1, "a", "s1")
    assert read(1, "a", "s1", None) == (1, "a", "s1")
    assert computed == [(1, "a", "s1")], "the same stamp is read from the cache"
    read(1, "b", "s1", big)  # another view of the same batch
    read(2, "a", "s1", big)  # another batch
    read(1, "a", "s2", big)  # batch 1's view a moves on
    assert len(computed) == 4
    read(1, "b", "s1", big)
    read(2, "a", "s1", big)
    assert len(computed) == 4, "the other view's and the other batch's entries stay"
    read(1, "a", "s1", big)
    assert computed[-1] == (1, "a", "s1"), "the older stamp's entry was cleared: it is computed again"


def test_a_stamp_that_is_not_a_parameter_is_refused():
    with pytest.raises(ValueError, match="no parameter when"):
        superseding(_read, stamps=("when",))


def test_arguments_without_a_hash_are_cached_as_streamlit_caches_them():
    assert read([1, 2], "a", "s1", None) == ([1, 2], "a", "s1")
    assert read([1, 2], "a", "s1", None) == ([1, 2], "a", "s1")
    assert computed == [([1, 2], "a", "s1")]
