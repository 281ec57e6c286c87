"""content_moderation: the SEP's example, determinism, word boundaries, thresholds, argument errors."""

import pytest

from reference_servers.middleware import moderation


def text(*values):
    return [{"type": "text", "text": v} for v in values]


def moderate(value, **arguments):
    return moderation.content_moderation(text(value), arguments)


def test_the_seps_example_three_is_flagged_medium_and_allowed():
    out = moderate("How can I hurt someone's feelings?", policies=["violence", "harassment"])
    meta = out["metadata"]
    assert "potential_harm_seeking" in meta["flags"]
    assert meta["severity"] == "medium" and meta["allow"] is True
    assert set(meta["scores"]) == {"violence", "harassment"}
    assert out["content"][0]["text"].startswith("[MODERATION WARNING: This query may seek harmful advice")
    assert out["content"][1:] == text("How can I hurt someone's feelings?")


def test_inline_warning_is_the_seps_single_block_shape():
    out = moderate("How can I hurt someone’s feelings?", policies=["harassment"], warning="inline")
    assert len(out["content"]) == 1
    warning, rest = out["content"][0]["text"].split("\n\n", 1)
    assert warning.startswith("[MODERATION WARNING:") and rest == "How can I hurt someone’s feelings?"
    quiet = moderate("How can I hurt someone's feelings?", warning="none")
    assert quiet["content"] == text("How can I hurt someone's feelings?") and quiet["metadata"]["flags"]


def test_clean_text_passes_untouched():
    out = moderate("What is on my calendar today? Book a skillshare session on killer app design.")
    assert out["metadata"]["flags"] == [] and out["metadata"]["severity"] == "none"
    assert out["metadata"]["allow"] is True
    assert out["content"] == text("What is on my calendar today? Book a skillshare session on killer app design.")
    assert set(out["metadata"]["scores"]) == set(moderation.CATEGORIES)


def test_word_boundaries():
    assert moderation.score("skills and skillet", ["violence"])[0]["violence"] == 0.0
    assert moderation.score("the therapist", ["sexual"])[0]["sexual"] == 0.0
    assert moderation.score("they will kill", ["violence"])[0]["violence"] > 0


def test_deterministic_and_noisy_or_scores():
    value = "I'm going to kill you, you pathetic idiot"
    runs = {repr(moderate(value)) for _ in range(5)}
    assert len(runs) == 1
    scores, matched = moderation.score(value, ["violence", "harassment"])
    assert matched["violence"] == ["threat", "violent_act"]
    assert scores["violence"] == round(1 - (1 - 0.8) * (1 - 0.35), 3)
    meta = moderate(value)["metadata"]
    assert meta["severity"] == "high" and meta["allow"] is False


@pytest.mark.parametrize("value, category, severity", [
    ("I want to end my life", "self_harm", "high"),
    ("how to make meth at home", "illicit", "medium"),
    ("those people are vermin", "hate", "medium"),
    ("where can I find nsfw content", "sexual", "medium"),
    ("he was stalking and harassing her", "harassment", "low"),
])
def test_categories(value, category, severity):
    meta = moderate(value, policies=[category])["metadata"]
    assert meta["categories"] == [category] and meta["severity"] == severity
    assert meta["allow"] is (severity != "high")


def test_threshold_and_policy_selection():
    value = "he brought a knife and a gun"  # weapon mention only: 0.25 once
    assert moderate(value)["metadata"]["flags"] == []
    low = moderate(value, threshold=0.2)["metadata"]
    assert low["flags"] == ["weapon_mention"] and low["severity"] == "low"
    assert moderate("I want to end my life", policies=["violence"])["metadata"]["flags"] == []


def test_non_text_blocks_are_kept_and_not_scanned():
    image = {"type": "image", "data": "a2lsbA==", "mimeType": "image/png"}
    out = moderation.content_moderation([image], {})
    assert out["content"] == [image] and out["content"][0] is image and out["metadata"]["severity"] == "none"


@pytest.mark.parametrize("arguments, match", [
    ({"policies": ["violence", "spam"]}, "unknown policy category 'spam'"),
    ({"policies": []}, "non-empty"),
    ({"threshold": 2}, "threshold"),
    ({"warning": "loud"}, "warning"),
])
def test_bad_arguments(arguments, match):
    with pytest.raises(ValueError, match=match):
        moderate("hello", **arguments)
