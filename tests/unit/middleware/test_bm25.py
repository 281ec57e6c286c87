"""The reference servers' BM25 scores as rank_bm25's BM25Okapi does, with Lucene's IDF in place of its own."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from reference_servers.middleware.textutil import LuceneBM25

WORDS = st.sampled_from(["plan", "meet", "q4", "budget", "road", "map", "tax", "team", "offsit"])
CORPUS = st.lists(st.lists(WORDS, min_size=1, max_size=12), min_size=1, max_size=8)


class RankBM25WithLuceneIDF(BM25Okapi):
    def _calc_idf(self, nd):
        self.idf = {w: math.log(1.0 + (self.corpus_size - n + 0.5) / (n + 0.5)) for w, n in nd.items()}


@settings(max_examples=300, deadline=None)
@given(corpus=CORPUS, query=st.lists(WORDS | st.just("absent"), max_size=6))
def test_scores_are_rank_bm25s(corpus, query):
    ours = LuceneBM25(corpus).get_scores(query)
    theirs = RankBM25WithLuceneIDF(corpus).get_scores(query)
    assert len(ours) == len(theirs)
    assert all(math.isclose(a, float(b), rel_tol=1e-12, abs_tol=1e-12) for a, b in zip(ours, theirs))


def test_a_word_in_every_document_still_scores_above_zero():
    scores = LuceneBM25([["plan", "q4"], ["plan", "budget"]]).get_scores(["plan"])
    assert all(score > 0 for score in scores)


def test_the_memory_store_still_takes_the_old_backend_name(tmp_path):
    from reference_servers.middleware.memory import MemoryStore

    with MemoryStore(str(tmp_path / "m.sqlite"), backend="rank_bm25") as store:
        assert store.backend == "bm25"
