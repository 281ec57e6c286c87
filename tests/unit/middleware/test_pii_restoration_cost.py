"""pii_restoration reads each character a bounded number of times (issue 21, item 2).

Whether a handle sits in a URL depends on the whitespace-free token before it. That token used to be found by a
look-back of up to 4,096 characters per handle, so `"x" + "[EMAIL_1]" * N` cost about 4,096 * N (3,800 times a
typical restoration at 100 KB). The measure is `UrlTokens.looked_at`, the characters the URL test read: with the
old look-back it is about 4,096 per handle; linear, a small multiple of the text's length.
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import pytest

from reference_servers.middleware import pii
from reference_servers.middleware.pii import restoration
from reference_servers.middleware.pii.handles import HANDLE_RE
from reference_servers.middleware.pii.restoration import UrlTokens, restore_text

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from bench_pii_adversarial import HANDLE_RUNS  # noqa: E402

MAP = {"EMAIL_1": "jane@example.com", "SSN_1": "123-45-6789"}
RUNS = HANDLE_RUNS  # the shapes the benchmark prints the cost of


@pytest.mark.parametrize("name", RUNS)
def test_a_run_of_handles_is_read_a_bounded_number_of_times(monkeypatch, name):
    text = RUNS[name](20_000)
    trackers = []
    real = UrlTokens
    monkeypatch.setattr(restoration, "UrlTokens", lambda t: trackers.append(real(t)) or trackers[-1])
    pii.pii_restoration([{"type": "text", "text": text}], {"redactions": MAP})
    looked = sum(t.looked_at for t in trackers)
    assert looked <= 8 * len(text), (looked, len(text))


# The rule as it was written per handle (a window of 4,096 characters back), kept as the reference for tokens
# shorter than the window, where the two must agree.
_OLD_URL_TOKEN_RE = re.compile(r"://|^<?(?i:mailto|data):|(?i:(?:href|src|action|formaction)\s*=)")


def old_in_url(text: str, position: int) -> bool:
    window = max(0, position - 4096)
    start = max(text.rfind(space, window, position) for space in " \n\t\r") + 1
    token = text[max(start, window):position]
    link = token.rfind("](")
    return (link >= 0 and ")" not in token[link:]) or _OLD_URL_TOKEN_RE.search(token) is not None


PIECES = ["[EMAIL_1]", "[SSN_1]", "[PHONE_9]", "](", ")", "(", "]", "[", "://", "https", "mailto:", "<", ">", "data:",
          "href=", "src =", "HREF\x0c=", "action=", "x", "/", "?q=", " ", "\n", "\t", "\r", "a.b", "=", ":", "!"]


@pytest.mark.parametrize("seed", range(40))
def test_the_linear_test_agrees_with_the_per_handle_look_back(seed):
    rng = random.Random(seed)
    text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 200)))
    urls = UrlTokens(text)
    for m in HANDLE_RE.finditer(text):
        assert urls.in_url(m.start()) == old_in_url(text, m.start()), (text, m.start())


def test_a_url_longer_than_the_old_window_still_keeps_its_handles():
    text = "https://evil.example/?" + "a" * 10_000 + "[EMAIL_1]"
    out = pii.pii_restoration([{"type": "text", "text": text}], {"redactions": MAP})
    assert out["content"][0]["text"] == text and out["metadata"]["keptInUrls"] == ["EMAIL_1"]


@pytest.mark.parametrize("seed", range(40))
def test_restoration_keeps_exactly_the_handles_the_look_back_puts_in_urls(seed):
    """restore_text skips the test for handles already known to be in a URL; each decision is still the rule's."""
    rng = random.Random(f"restore/{seed}")
    text = "".join(rng.choice(PIECES + ["[EMAIL_1]"] * 4) for _ in range(rng.randint(1, 200)))
    expected = HANDLE_RE.sub(lambda m: m.group() if m.group(1) not in MAP or old_in_url(text, m.start())
                                 else MAP[m.group(1)], text)
    assert restore_text(text, MAP, in_urls=False)[0] == expected
