"""tool_filter: the SEP's example 6, descriptions, limits, argument errors."""

import pytest

from reference_servers.middleware import tool_filter

SEP_TOOLS = ["search_email", "search_documents", "search_calendar", "calculate", "send_email"]


def text(value):
    return [{"type": "text", "text": value}]


def test_the_seps_example_six():
    context = text("Find my meeting notes from last week about the marketing campaign")
    out = tool_filter.tool_filter(context, {"availableTools": SEP_TOOLS})
    meta = out["metadata"]
    assert out["content"] == context
    assert meta["relevantTools"][0]["name"] == "search_documents"
    assert meta["suggestedToolSet"] == [t["name"] for t in meta["relevantTools"]]
    assert {"search_documents", "search_calendar", "search_email"} == set(meta["suggestedToolSet"])
    scores = [t["score"] for t in meta["relevantTools"]]
    assert scores == sorted(scores, reverse=True) and all(0.2 <= s <= 1 for s in scores)


def test_descriptions_and_camel_case_names_count():
    tools = [{"name": "getStockData", "description": "Fetch stock market performance data for a portfolio"},
             {"name": "search_news", "description": "Search recent news articles", "inputSchema": {"type": "object"}},
             {"name": "weather_forecast", "description": "Get weather forecast for a location"}]
    # PR #142's example 3
    out = tool_filter.tool_filter(
        text("Can you help me figure out why the performance of my investment portfolio has suddenly changed?"),
        {"availableTools": tools})
    assert [t["name"] for t in out["metadata"]["relevantTools"]] == ["getStockData"]
    news = tool_filter.tool_filter(text("Any recent news on the stocks in my portfolio?"), {"availableTools": tools})
    assert {t["name"] for t in news["metadata"]["relevantTools"]} == {"getStockData", "search_news"}


def test_limits_and_nothing_relevant():
    out = tool_filter.tool_filter(text("calculate the total and email it"), {"availableTools": SEP_TOOLS,
                                                                             "maxTools": 1})
    assert out["metadata"]["suggestedToolSet"] == ["calculate"]
    assert len(out["metadata"]["relevantTools"]) >= 2
    none = tool_filter.tool_filter(text("tell me a joke"), {"availableTools": SEP_TOOLS})
    assert none["metadata"] == {"relevantTools": [], "suggestedToolSet": []}
    strict = tool_filter.tool_filter(text("Find my meeting notes"), {"availableTools": SEP_TOOLS, "minScore": 0.7})
    assert all(t["score"] >= 0.7 for t in strict["metadata"]["relevantTools"])


def test_scores_are_absolute_not_relative():
    alone = tool_filter.score_tools("tell me a joke", ["calculate"])
    assert alone == [{"name": "calculate", "score": 0.0}]
    exact = tool_filter.score_tools("calculate", ["calculate"])
    assert exact == [{"name": "calculate", "score": 1.0}]


@pytest.mark.parametrize("tools, match", [
    (["a", "a"], "twice"), ([""], "empty"), ([{"description": "x"}], "name"), ("search_email", "list")])
def test_bad_tool_lists(tools, match):
    with pytest.raises(ValueError, match=match):
        tool_filter.tool_filter(text("x"), {"availableTools": tools})


def test_available_tools_is_required():
    with pytest.raises(ValueError, match="availableTools"):
        tool_filter.tool_filter(text("x"), {})
