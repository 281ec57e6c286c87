"""MemoryStore: ranking, persistence across reopen, both backends, concurrency, hostile queries."""

import gc
import os
import stat
import threading
from dataclasses import dataclass

import pytest

from reference_servers.middleware.memory import MemoryStore, SessionStores, fts5_available

BACKENDS = ["fts5", "bm25"] if fts5_available() else ["bm25"]


def seed(store):
    store.remember("The user prefers window seats on long flights", tags=["travel"])
    store.remember("The user's daughter is called Ada and turns 7 in May")
    store.remember("The user is vegetarian; book vegetarian meals", tags=["food", "travel"])
    store.remember("The user's manager is Ingrid")


def test_this_sqlite_has_fts5():
    assert fts5_available()  # the project's machines do; the fallback is tested below either way
    assert MemoryStore().backend == "fts5"


@pytest.mark.parametrize("backend", BACKENDS)
def test_ranking(backend):
    store = MemoryStore(":memory:", backend=backend)
    seed(store)
    hits = store.search("book me flights with a window seat")
    assert hits[0]["text"] == "The user prefers window seats on long flights"
    assert all(h["score"] > 0 for h in hits) and [h["score"] for h in hits] == sorted(
        (h["score"] for h in hits), reverse=True)
    assert set(hits[0]) == {"id", "text", "tags", "score", "createdAt"} and hits[0]["tags"] == ["travel"]
    assert hits[0]["createdAt"].endswith("Z")
    assert store.search("Ada's birthday")[0]["text"].startswith("The user's daughter")
    assert [h["text"] for h in store.search("food", limit=5)] == ["The user is vegetarian; book vegetarian meals"]
    assert len(store.search("user", limit=2)) == 2
    assert store.search("") == [] and store.search("the and of") == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_persistence_across_reopen_and_forget(tmp_path, backend):
    path = str(tmp_path / "memories.sqlite")
    with MemoryStore(path, backend=backend) as store:
        seed(store)
        ada = store.search("daughter")[0]["id"]
    with MemoryStore(path, backend=backend) as reopened:
        assert reopened.count() == 4
        assert reopened.search("daughter")[0]["id"] == ada
        assert reopened.forget(ada) and not reopened.forget(ada)
        assert reopened.search("daughter") == [] and reopened.get(ada) is None
        newer = reopened.remember("The user's son is called Ben")
        assert newer > ada  # ids are never reused
    with MemoryStore(path, backend=backend) as again:
        assert again.count() == 4 and again.search("son Ben")[0]["id"] == newer


@pytest.mark.skipif(not fts5_available(), reason="needs FTS5")
def test_a_file_written_without_fts_is_indexed_when_opened_with_it(tmp_path):
    path = str(tmp_path / "m.sqlite")
    with MemoryStore(path, backend="bm25") as store:
        seed(store)
    with MemoryStore(path, backend="fts5") as store:
        assert store.search("manager")[0]["text"] == "The user's manager is Ingrid"


@pytest.mark.parametrize("backend", BACKENDS)
def test_hostile_queries_are_plain_words(backend):
    store = MemoryStore(backend=backend)
    seed(store)
    for query in ['"); DROP TABLE memories; --', "NEAR(window seat)", "window* OR", '"unbalanced', "col:window",
                  "AND OR NOT", "ünïcödé Straße 日本"]:
        store.search(query)
    assert store.count() == 4
    assert store.search("window AND")[0]["text"].startswith("The user prefers window seats")


@pytest.mark.parametrize("backend", BACKENDS)
def test_concurrent_use_from_threads(tmp_path, backend):
    store = MemoryStore(str(tmp_path / "c.sqlite"), backend=backend)
    errors = []

    def work(n):
        try:
            for i in range(25):
                store.remember(f"thread {n} note {i} about topic{n}")
                store.search(f"topic{n}")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and store.count() == 200
    assert len(store.search("topic3", limit=50)) == 25


def test_bad_input():
    store = MemoryStore()
    with pytest.raises(ValueError):
        store.remember("   ")
    with pytest.raises(ValueError):
        store.remember("x", tags="travel")
    with pytest.raises(ValueError):
        store.search("x", limit=0)
    with pytest.raises(ValueError):
        MemoryStore(backend="elastic")


@pytest.mark.parametrize("backend", BACKENDS)
def test_database_files_are_private_to_their_owner(tmp_path, backend):
    old = os.umask(0o022)  # the usual umask, under which files are created world-readable
    try:
        path = tmp_path / "memories.sqlite"
        store = MemoryStore(str(path), backend=backend)
        store.remember("The user's bank PIN hint is their cat's name")
        files = [p for p in tmp_path.iterdir() if p.name.startswith("memories.sqlite")]
        assert {p.name for p in files} >= {"memories.sqlite", "memories.sqlite-wal"}
        modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
        assert set(modes.values()) == {"0o600"}, modes
        store.close()
    finally:
        os.umask(old)


@dataclass
class FakeSession:  # like reference_servers.core.Session: a dataclass, so not hashable
    gated_runs: int = 0


def test_session_stores_keep_each_sessions_memories_apart_and_free_them_with_it():
    stores, alice, bob = SessionStores(), FakeSession(), FakeSession()
    stores.for_owner(alice).remember("Alice's passport number is X1234567")
    assert stores.for_owner(alice) is stores.for_owner(alice)
    assert [h["text"] for h in stores.for_owner(alice).search("passport")] == ["Alice's passport number is X1234567"]
    assert stores.for_owner(bob).search("passport") == [] and stores.for_owner(bob).count() == 0
    assert len(stores) == 2
    del alice
    gc.collect()
    assert len(stores) == 1


# -- issue 32 item 3: caps per store, and the memory tools under the server's limits --------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from reference_servers.middleware.memory import MemoryFull  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=300).filter(str.strip),
                          st.lists(st.text(max_size=20), max_size=3)), max_size=25),
       st.integers(1, 8), st.integers(40, 2000))
def test_a_store_never_passes_its_caps_and_a_refused_memory_stores_nothing(memories, max_count, max_bytes):
    store = MemoryStore(":memory:", max_count=max_count, max_bytes=max_bytes)
    kept = 0
    for text, tags in memories:
        try:
            store.remember(text, tags)
            kept += 1
        except MemoryFull:
            pass
        assert store.count() == kept <= max_count
        used = store._db.execute("SELECT COALESCE(SUM(LENGTH(CAST(text AS BLOB)) + LENGTH(CAST(tags AS BLOB))), 0) "
                                 "FROM memories").fetchone()[0]
        assert used <= max_bytes


def _memory_app(limits: dict, **config):
    from reference_servers.everything.app import build_app

    return build_app({"profiles": ["preprocessor-tools"], "memoryScope": "session", "fixtures": False,
                      "limits": limits, **config})


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 4000), st.sampled_from(["remember", "RetrieveMemories"]))
def test_the_memory_tools_meet_the_same_input_limits_as_every_entry_point(extra, tool):
    import anyio

    from reference_servers.core import JsonRpcError

    app = _memory_app({"maxTextChars": 1000, "maxInputChars": 100_000})
    key = "text" if tool == "remember" else "query"
    try:
        anyio.run(app.call_tool, tool, {key: "w " * 500 + "x" * extra}, "s1")
    except JsonRpcError as exc:
        assert exc.code == -32602 and exc.data["limit"] == "maxTextChars"
    else:
        raise AssertionError(f"{tool} took more text than maxTextChars")


def test_retrieve_memories_output_is_held_to_max_output_chars_and_a_full_session_is_told():
    import anyio

    from reference_servers.core import JsonRpcError

    app = _memory_app({"maxOutputChars": 3000}, memoryMaxCount=3)
    for n in range(3):
        assert not anyio.run(app.call_tool, "remember", {"text": f"trip {n} " + "window seat " * 100}, "s1").get("isError")
    full = anyio.run(app.call_tool, "remember", {"text": "trip 4"}, "s1")
    assert full["isError"] and "limit" in full["content"][0]["text"]
    try:
        anyio.run(app.call_tool, "RetrieveMemories", {"query": "trip window seat"}, "s1")
    except JsonRpcError as exc:
        assert exc.code == -32000 and exc.data["limit"] == "maxOutputChars"
    else:
        raise AssertionError("RetrieveMemories answered more than maxOutputChars")
