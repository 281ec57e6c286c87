"""Moderation, retrieval, timestamp, tool filtering, the memory store and the augmentation forms."""

import datetime as dt

import pytest

from reference_servers.middleware import AUGMENTATIONS, MIDDLEWARE, augment, moderation, retrieval, timestamp, tool_filter
from reference_servers.middleware.memory import MemoryStore


def text(value):
    return [{"type": "text", "text": value}]


def test_every_schema_is_an_object_schema():
    for spec in MIDDLEWARE + AUGMENTATIONS:
        assert spec.input_schema["type"] == "object", spec.name


def test_moderation_matches_the_sep_example():
    out = moderation.content_moderation(text("How can I hurt someone's feelings?"),
                                        {"policies": ["violence", "harassment"]})
    assert out["metadata"]["flags"] == ["potential_harm_seeking"]
    assert out["metadata"]["severity"] == "medium" and out["metadata"]["allow"] is True
    assert out["content"][0]["text"].startswith("[MODERATION WARNING:")
    assert out["content"][1]["text"] == "How can I hurt someone's feelings?"


def test_moderation_is_deterministic_and_clean_text_passes():
    runs = {repr(moderation.content_moderation(text("I will kill you, idiot"), {})) for _ in range(5)}
    assert len(runs) == 1
    clean = moderation.content_moderation(text("What is on my calendar today?"), {})
    assert clean["metadata"] == {"flags": [], "severity": "none", "allow": True, "scores": clean["metadata"]["scores"]}
    assert len(clean["content"]) == 1


def test_self_harm_is_high_and_not_allowed():
    out = moderation.content_moderation(text("I want to end my life"), {"policies": ["self_harm"]})
    assert out["metadata"]["severity"] == "high" and out["metadata"]["allow"] is False


def test_retrieval_ranks_the_q4_notes_first_and_filters():
    out = retrieval.document_retrieval(text("What was discussed in the Q4 planning meeting?"), {"maxResults": 3})
    sources = out["metadata"]["sources"]
    assert sources[0]["title"] == "Q4 Planning Notes" and sources[0]["relevance"] == 1.0
    assert out["content"][0]["text"].startswith("[Retrieved Documents]") and len(out["content"]) == 2
    emails = retrieval.document_retrieval(text("Q4 priorities team assignments"), {"sources": ["email"]})
    assert all(s["source"] == "email" for s in emails["metadata"]["sources"])
    assert retrieval.document_retrieval(text("zebra quantum"), {})["metadata"]["sources"] == []
    few = retrieval.document_retrieval(text("Q4 planning meeting"), {"minRelevance": 0.9})
    assert all(s["relevance"] >= 0.9 for s in few["metadata"]["sources"])


def test_retrieval_rejects_a_missing_corpus():
    with pytest.raises(ValueError):
        retrieval.document_retrieval(text("x"), {"corpus": "/nonexistent/corpus.json"})


def test_timestamp_uses_the_zone(monkeypatch):
    monkeypatch.setattr(timestamp, "now", lambda: dt.datetime(2025, 10, 4, 15, 42, tzinfo=dt.timezone.utc))
    out = timestamp.timestamp_injector(text("What's on my calendar today?"), {})
    assert out["content"][0]["text"] == "[Current time: Saturday, October 4, 2025, 3:42 PM UTC]"
    cph = timestamp.timestamp_injector(text("x"), {"timezone": "Europe/Copenhagen"})
    assert "5:42 PM CEST" in cph["content"][0]["text"]
    with pytest.raises(ValueError):
        timestamp.timestamp_injector(text("x"), {"timezone": "Mars/Olympus"})


def test_tool_filter_matches_the_sep_example():
    out = tool_filter.tool_filter(text("Find my meeting notes from last week about the marketing campaign"),
                                  {"availableTools": ["search_email", "search_documents", "search_calendar",
                                                      "calculate", "send_email"]})
    assert out["metadata"]["suggestedToolSet"][0] == "search_documents"
    assert "calculate" not in out["metadata"]["suggestedToolSet"]
    assert out["content"] == text("Find my meeting notes from last week about the marketing campaign")


def test_memory_store_ranks_and_persists(tmp_path):
    path = str(tmp_path / "memories.sqlite")
    store = MemoryStore(path)
    store.remember("The user prefers window seats on flights")
    store.remember("The user's daughter is called Ada")
    store.remember("The user is vegetarian; book vegetarian meals on flights")
    store.close()
    reopened = MemoryStore(path)
    hits = reopened.search("book me flights with a window seat")
    assert hits[0]["text"] == "The user prefers window seats on flights"
    assert all(h["score"] > 0 for h in hits)
    assert reopened.search('"); DROP TABLE memories; --') == []
    assert reopened.forget(hits[0]["id"]) and reopened.count() == 2
    assert all(h["id"] != hits[0]["id"] for h in reopened.search("window seats"))


def test_augmentation_forms_carry_their_hints():
    retrieved = augment.augment_retrieval(text("Q4 planning meeting"), {})
    assert retrieved["hint"] == "prepend" and retrieved["content"][0]["properties"]["relevance"] == 1.0
    assert augment.augment_redaction(text("a@b.co"), {})["hint"] == "replace"
    assert augment.augment_tool_relevance(text("find meeting notes"), {"availableTools": ["search_documents"]})[
        "hint"] == "filter"
    assert augment.augment_moderation(text("hello"), {})["hint"] == "safe"
