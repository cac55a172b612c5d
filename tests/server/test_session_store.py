"""The bounded session store: LRU by count, idle TTL, statistics, thread safety, memory helper."""

from __future__ import annotations

import threading

import pytest

from officegym.server.sessions import SessionStore, measure_session_memory


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_lru_evicts_the_least_recently_used():
    store = SessionStore(max_sessions=3, idle_ttl_s=None)
    for k in "abc":
        store.put(k, k.upper())
    assert store.get("a") == "A"  # a becomes the most recent
    store.put("d", "D")
    assert "b" not in store and [store.get(k) for k in "acd"] == ["A", "C", "D"]
    s = store.stats()
    assert s.live == 3 and s.evicted_lru == 1 and s.created == 4


def test_put_replaces_without_growing():
    store = SessionStore(max_sessions=2, idle_ttl_s=None)
    store.put("a", 1)
    store.put("b", 2)
    store.put("a", 3)  # re-seeding a session: replaced, and now the most recent
    store.put("c", 4)
    assert store.get("a") == 3 and store.get("b") is None and len(store) == 2


def test_idle_ttl_expires_on_access_put_and_sweep():
    clock = Clock()
    store = SessionStore(max_sessions=100, idle_ttl_s=10, clock=clock)
    store.put("old", 1)
    clock.t = 5
    store.put("mid", 2)
    clock.t = 10
    assert store.get("old") == 1  # touched at 10: alive until 20
    clock.t = 16
    assert "mid" not in store and store.get("mid") is None
    clock.t = 25
    store.put("new", 3)  # a put drops what expired in front of it
    assert len(store) == 1
    clock.t = 40
    assert store.sweep() == 1 and len(store) == 0
    assert store.stats().expired == 3


def test_pop_and_misses():
    store = SessionStore(max_sessions=5)
    store.put("a", 1)
    assert store.pop("a") == 1 and store.pop("a") is None
    assert store.get("a") is None
    s = store.stats()
    assert s.closed == 1 and s.misses == 1


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError):
        SessionStore(max_sessions=0)
    with pytest.raises(ValueError):
        SessionStore(idle_ttl_s=0)


def test_threads_never_break_the_bound_or_lose_their_own_session():
    store = SessionStore(max_sessions=64, idle_ttl_s=None)
    errors = []

    def worker(w: int):
        for i in range(2000):
            key = f"{w}-{i % 8}"
            store.put(key, (w, i))
            got = store.get(key)
            if got is not None and got[0] != w:
                errors.append((key, got))
            if len(store) > 64:
                errors.append(("size", len(store)))

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(store) <= 64


def test_measure_session_memory(tiny_world):
    m = measure_session_memory(tiny_world.new_session, n=100,
                               exercise=lambda s: s.call("email_delete_email", {"email_id": "00000001"}))
    assert 0 < m.bytes_fresh < m.bytes_exercised < 50_000
    assert m.to_dict()["sessions"] == 100


def test_refuse_mode_turns_new_sessions_away_instead_of_evicting():
    clock = Clock()
    store = SessionStore(max_sessions=2, idle_ttl_s=10, clock=clock, when_full="refuse")
    assert store.put("a", 1) and store.put("b", 2)
    clock.t = 5
    assert store.put("c", 3) is False and "c" not in store  # full of live sessions: refused
    assert store.put("a", 4) and store.get("a") == 4  # re-seeding an existing session needs no slot
    clock.t = 12  # b (last used at 0) idled past the TTL; a (at 5) did not
    assert store.put("c", 3) and "b" not in store and store.get("a") == 4  # an expired session's slot is free
    s = store.stats()
    assert s.refused == 1 and s.evicted_lru == 0 and s.expired == 1
    with pytest.raises(ValueError):
        SessionStore(when_full="drop")


def test_a_full_store_evicts_its_least_recently_used_idle_session_before_refusing():
    clock = Clock()
    store = SessionStore(max_sessions=2, idle_ttl_s=3600, clock=clock, when_full="refuse", evict_idle_s=60)
    assert store.put("a", 1) and store.put("b", 2)
    clock.t = 30
    assert store.put("c", 3) is False  # both used in the last 60 s: in active use, refused
    store.get("a")  # a is used at 30; b still at 0
    clock.t = 61
    assert store.put("c", 3) and "b" not in store and store.get("a") == 1  # b idled 61 s: evicted, LRU first
    assert store.put("d", 4) is False  # a (used at 61) and c (61) are in use
    s = store.stats()
    assert s.evicted_idle == 1 and s.refused == 2 and s.live == 2 and store.evicted_idle() == 1
    with pytest.raises(ValueError):
        SessionStore(evict_idle_s=-1)
