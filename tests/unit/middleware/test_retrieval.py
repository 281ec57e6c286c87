"""document_retrieval: BM25 ranking on the bundled corpus, relevance, filters, other corpora, the block format."""

import json

import pytest

from reference_servers.middleware import retrieval


def text(value):
    return [{"type": "text", "text": value}]


def titles(out):
    return [s["title"] for s in out["metadata"]["sources"]]


def test_the_seps_example_four():
    question = text("What was discussed in the Q4 planning meeting?")
    out = retrieval.document_retrieval(question, {"maxResults": 3, "sources": ["internal_docs", "email"]})
    assert titles(out)[:2] == ["Q4 Planning Notes", "Email from Sarah"]
    assert out["metadata"]["sources"][0]["relevance"] == 1.0
    assert all(s["source"] in ("internal_docs", "email") for s in out["metadata"]["sources"])
    block = out["content"][0]["text"]
    assert block.startswith("[Retrieved Documents]\n\n# Q4 Planning Notes (Oct 1, 2025)\n- Focus on EMEA expansion")
    assert "\n\n# Email from Sarah (Oct 3, 2025)\nRe: Q4 priorities" in block and block.endswith("\n\n---")
    assert out["content"][1:] == question


@pytest.mark.parametrize("query, expected", [
    ("How do I set up the VPN? The connection keeps dropping", "VPN Setup Guide"),
    ("how much parental leave do new parents get", "Parental Leave Policy"),
    ("why was telemetry down, the certificate expired?", "Incident Postmortem: Telemetry Ingest Outage"),
    ("meeting notes about the marketing campaign", "Marketing Sync Meeting Notes"),
    ("what is the meal allowance when travelling for business", "Expense Policy"),
    ("new Starter plan price per vehicle", "Email from Tomas: Pricing change"),
])
def test_ranking_sanity(query, expected):
    assert titles(retrieval.document_retrieval(text(query), {}))[0] == expected


def test_relevance_is_relative_to_the_best_match_and_filters_do_not_change_it():
    query = text("Q4 planning EMEA budget")
    everything = retrieval.document_retrieval(query, {"maxResults": 20})["metadata"]["sources"]
    relevances = [s["relevance"] for s in everything]
    assert relevances[0] == 1.0 and relevances == sorted(relevances, reverse=True) and relevances[-1] > 0
    by_id = {s["id"]: s["relevance"] for s in everything}
    emails = retrieval.document_retrieval(query, {"maxResults": 20, "sources": ["email"]})["metadata"]["sources"]
    assert emails and all(by_id[s["id"]] == s["relevance"] for s in emails)
    strong = retrieval.document_retrieval(query, {"maxResults": 20, "minRelevance": 0.5})["metadata"]["sources"]
    assert strong == [s for s in everything if s["relevance"] >= 0.5]
    assert len(retrieval.document_retrieval(query, {"maxResults": 2})["metadata"]["sources"]) == 2


def test_no_match_leaves_the_context_alone():
    image = {"type": "image", "data": "QUJD", "mimeType": "image/png"}
    out = retrieval.document_retrieval([image, *text("zebra quasar")], {})
    assert out == {"content": [image, *text("zebra quasar")], "metadata": {"sources": []}}
    assert retrieval.document_retrieval([image], {})["metadata"]["sources"] == []


def test_another_corpus_and_a_tiny_one(tmp_path):
    path = tmp_path / "corpus.json"
    path.write_text(json.dumps([
        {"id": "a", "title": "Boiler manual", "source": "manuals", "text": "Bleed the radiators every autumn."},
        {"id": "b", "title": "Garden notes", "source": "notes", "text": "Prune the roses in March."}]))
    with pytest.raises(ValueError, match="not one this server offers"):  # a caller cannot name any file
        retrieval.document_retrieval(text("roses"), {"corpus": str(path)})
    retrieval.allow_corpus(path)
    out = retrieval.document_retrieval(text("when should I prune roses?"), {"corpus": str(path)})
    assert titles(out) == ["Garden notes"]  # a two-document corpus still ranks (Lucene IDF stays positive)
    assert "# Garden notes (undated)" in out["content"][0]["text"]
    with pytest.raises(ValueError, match="unknown source"):
        retrieval.document_retrieval(text("roses"), {"corpus": str(path), "sources": ["wiki"]})


@pytest.mark.parametrize("content, match", [
    ("not json", "not valid JSON"),
    ('{"id": "a"}', "list"),
    ('[{"id": "a", "title": "t", "source": "s"}]', "text"),
    ('[{"id": "a", "title": "t", "source": "s", "text": "x"}, {"id": "a", "title": "u", "source": "s", "text": "y"}]',
     "twice"),
])
def test_bad_corpora(tmp_path, content, match):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=match):
        retrieval.allow_corpus(path)


def test_missing_corpus_and_bad_arguments():
    with pytest.raises(ValueError, match="not one this server offers"):
        retrieval.document_retrieval(text("x"), {"corpus": "/etc/passwd"})
    with pytest.raises(ValueError, match="cannot read corpus"):
        retrieval.allow_corpus("/nonexistent/corpus.json")
    with pytest.raises(ValueError, match="maxResults"):
        retrieval.document_retrieval(text("x"), {"maxResults": 0})
    with pytest.raises(ValueError, match="unknown source"):
        retrieval.document_retrieval(text("x"), {"sources": ["slack"]})


def test_bundled_corpus_shape():
    documents = json.loads(retrieval.DEFAULT_CORPUS.read_text(encoding="utf-8"))
    assert 28 <= len(documents) <= 40
    assert {d["source"] for d in documents} == set(retrieval.BUNDLED_SOURCES)
    assert {"Q4 Planning Notes", "Email from Sarah"} <= {d["title"] for d in documents}
