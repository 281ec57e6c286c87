"""pii_redaction finds an email address whose "@" is percent-encoded (`%40`) or an HTML character reference
(`&#64;`, `&#x40;`, `&commat;`), in prose and inside URIs (issue 32, item 7); the handle keeps the text as written,
so restoration gives back every byte."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from reference_servers.middleware import pii

AT_SIGNS = ["%40", "&#64;", "&#064;", "&#x40;", "&#X40;", "&#x0040;", "&commat;"]
LOCAL = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._+", min_size=1, max_size=12).filter(
    lambda s: s[0].isalnum() and s[-1].isalnum() and ".." not in s)
LABEL = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10)
FRAMES = ["write to {}", "{}", "mailto:{}", "https://example.org/contact?to={}&x=1", "<a href=\"mailto:{}\">me</a>",
          "[me](mailto:{})", "x\u200b {} \u00a0415\u00a0555\u00a02671"]


@settings(max_examples=300, deadline=None)
@example("0", "e", "org", "%40", "https://example.org/contact?to={}&x=1")  # the domain "e.org" is in the frame too
@given(LOCAL, LABEL, st.sampled_from(["com", "org", "co.uk", "example"]), st.sampled_from(AT_SIGNS),
       st.sampled_from(FRAMES))
def test_an_encoded_email_is_redacted_and_restored_exactly(local, label, tld, at, frame):
    address = f"{local}{at}{label}.{tld}"
    text = frame.format(address)
    out = pii.pii_redaction([{"type": "text", "text": text}], {})
    redacted = out["content"][0]["text"]
    # The domain may occur in the frame itself (label "e", tld "org": example.org), never more often than there.
    domain = f"{label}.{tld}"
    assert address not in redacted and redacted.count(domain) == frame.replace("{}", "").count(domain), redacted
    assert "EMAIL" in " ".join(out["metadata"]["redactions"]), out["metadata"]
    restored = pii.pii_restoration(out["content"], {"redactions": out["metadata"]["redactions"],
                                                    "restoreInUrls": True})
    assert restored["content"][0]["text"] == text


def test_percent_signs_and_entities_that_are_not_an_at_sign_stay():
    text = "100%40 off, a &amp; b, &#64; alone, 50% 40 ml"
    assert pii.pii_redaction([{"type": "text", "text": text}], {})["content"][0]["text"] == text
