"""index.html: one self-contained page a person opens to see what was tested, what failed and why.

The page, top to bottom: who the target says it is (its `serverInfo`) and how it was run; what the run
did not test (nothing claimed, fields where no proposal puts them); the checks not passing, linked; the
role's profiles, each claimed or not with the reason and how to claim it; a legend of every outcome and
claim kind; then one section a profile, in the table's order, each check with its requirement (the
catalog's Markdown, rendered), the sources its catalog rows cite, the verdict with its whole reason,
expected against actual, and the exchanges it judged, with the element at fault marked. No scripts, no
external assets: the page works from a CI artifact or an email attachment.

Built from Jinja2 templates (conformance/report/templates/) with autoescaping on, so whatever the target
sent (tool names, error texts, its serverInfo) is escaped wherever it lands; the two things marked safe are
the catalog's Markdown, rendered by markdown-it-py with raw HTML disabled, and the JSON markup below, which
escapes every string it emits.

The element at fault: a reason or `actual` that says "at <JSON pointer>" (schema violations say so), with
the item it belongs to when it names one ("tool 'x': at /preprocessor"), is resolved in each exchange's
request and response; what resolves is marked in the pretty-printed JSON, and shown above it within its
nearest enclosing item (the tool, the result), so it is seen without scrolling. The suite's judges say
where as text; a failure whose reason names no pointer (a wrong value of a fixture) is not marked.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections import defaultdict
from typing import Any

from markupsafe import Markup, escape

from ..core.model import OUTCOMES
from ..core.spelling import flag as _flag
from . import results as reports
from .counts import outcome_counts
from .inert import html_text
from .pretty import pretty_json

COLOURS = {"pass": "#1a7f37", "fail": "#cf222e", "warn": "#9a6700", "info": "#0969da", "skip": "#6e7781",
           "xfail": "#8250df", "stale": "#bc4c00"}
LEGEND_OUTCOMES = (
    ("pass", "the implementation did what the requirement asks, observed on the wire"),
    ("fail", "a MUST was violated, or a claimed behaviour was never observed: the run exits 1"),
    ("warn", "a SHOULD was violated: the run still passes, unless run with --strict"),
    ("info", "a MAY or a described behaviour: what the implementation chose, never a failure"),
    ("skip", "the check did not run; its reason says why and what would make it run"),
    ("xfail", "failed, and listed in the expected-failures file: not counted against the run"),
    ("stale", "listed as an expected failure but passes now: remove it from the list (the run exits 1)"),
)
LEGEND_CLAIMS = (
    ("advertisement", "the target showed the profile (a capability, a tool field): its checks ran"),
    ("option", "claimed with --profile: every check ran, and a missing fixture fails instead of skipping"),
    ("default", "a host claims its core profiles unless --profile narrows them"),
    ("not claimed", "the target showed nothing of the profile where its proposal puts it: only the checks "
                    "that an unclaimed profile's methods are refused ran; the reason says what was seen instead"),
    ("not run", "the run did not record the profile (--profile or -k left it out, or the role needs another "
                "option for it)"),
)
# The items a reason may name before "at <pointer>", and the list of the result that holds them.
_NAMED_LISTS = {"tool": "tools", "middleware": "middleware", "augmentation": "augmentations",
                "interceptor": "interceptors", "prompt": "prompts", "resource": "resources"}
_AT = re.compile(r"(?:\b(" + "|".join(_NAMED_LISTS) + r") '([^']*)': )?at (/[^\s:,;]*)")
# What a reason says before ": at <pointer>": often the label of the exchange the pointer is in.
_BEFORE_AT = re.compile(r"([^:;]+): at (/[^\s:,;]*)")
_SEVERITY = {"fail": 0, "stale": 1, "warn": 2, "xfail": 3, "info": 4, "pass": 5, "skip": 6}


@functools.cache
def environment():
    from jinja2 import Environment, PackageLoader

    # finalize: every value a template prints that is not already markup has its control characters shown
    # (a bidi override from a target would reorder what the reader sees); autoescaping then escapes it.
    options = {"autoescape": True, "keep_trailing_newline": True, "finalize": _inert}
    env = Environment(loader=PackageLoader("conformance.report", "templates"), bytecode_cache=_bytecode_cache(options),
                      **options)
    env.filters["markdown"] = markdown
    env.filters["seconds"] = seconds
    env.filters["pretty"] = lambda value: pretty_json(value, sort_keys=True)
    env.filters["link_docs"] = link_docs
    env.filters["rate"] = lambda passed_judged: reports.rate(list(passed_judged))
    env.globals["COLOURS"] = COLOURS
    return env


def _bytecode_cache(options: dict):
    """The templates compiled once, kept in the suite's cache directory: compiling the page's templates took
    40-50 ms of every run. Jinja checks each entry against its template's text and its own bytecode format;
    the folder's name holds what else the compiled code depends on (the suite's and Jinja's versions, the
    environment's options), so an entry is only ever read by a run that would compile the same code. A folder
    that cannot be written leaves every run compiling, as before."""
    import hashlib

    import jinja2
    from jinja2 import FileSystemBytecodeCache

    from .. import __version__
    from ..core.catalog import cache_dir

    class Cache(FileSystemBytecodeCache):
        def load_bytecode(self, bucket) -> None:
            try:
                super().load_bytecode(bucket)
            except OSError:  # e.g. a file where the folder should be: compile, as without a cache
                pass

        def dump_bytecode(self, bucket) -> None:
            try:
                os.makedirs(self.directory, exist_ok=True)
                super().dump_bytecode(bucket)
            except OSError:
                pass

    key = repr((__version__, jinja2.__version__, sorted((k, getattr(v, "__name__", v)) for k, v in options.items())))
    return Cache(str(cache_dir() / f"templates-{hashlib.sha256(key.encode()).hexdigest()[:12]}"))


def _inert(value: Any) -> Any:
    return html_text(value) if isinstance(value, str) and not isinstance(value, Markup) else value


_MARKDOWN_OPTIONS = {"html": False, "linkify": False, "typographer": False}


@functools.cache
def _markdown_renderer():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", _MARKDOWN_OPTIONS)


@functools.cache
def markdown_memo():
    """The catalog's texts as rendered before (core/memo.py): markdown-it-py is imported only for a new text."""
    from ..core.memo import Memo, library_stamp

    return Memo("markdown", library_stamp("markdown_it"), repr(sorted(_MARKDOWN_OPTIONS.items())))


def warm() -> None:
    """Import Jinja2, compile the page's templates and read the Markdown memo (0.7 s cold), off the critical
    path: the pytest layer calls this while the recording waits on the target."""
    environment().get_template("report.html.j2")
    if not markdown_memo().load():
        _markdown_renderer()


def markdown(text: str | None) -> Markup:
    """The catalog's inline Markdown (`code`, *emphasis*, links) as HTML; raw HTML in it is escaped."""
    return Markup(markdown_memo().get(text or "", lambda source: _markdown_renderer().renderInline(source)))


def seconds(value: float | None) -> str:
    """Every duration on the page in one format: seconds, three decimals."""
    return "—" if value is None else f"{float(value):.3f} s"


def link_docs(sentence: str) -> Markup:
    """A headline sentence, its docs link made a link (the sentence is escaped first)."""
    text = str(escape(sentence))
    return Markup(text.replace(reports.SDK_SURVIVAL, f'<a href="{reports.SDK_SURVIVAL}">{reports.SDK_SURVIVAL}</a>'))


# -- the element at fault ---------------------------------------------------------------------------------------

def _parse_pointer(pointer: str) -> list[str]:
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer.split("/")[1:]]


def _format_pointer(parts) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _resolve(document: Any, parts: list[str]) -> tuple[bool, Any, list]:
    """(found, value, the path with list indexes as ints) of `parts` in `document`."""
    here = document
    path: list[str | int] = []
    for part in parts:
        if isinstance(here, dict) and part in here:
            here = here[part]
            path.append(part)
        elif isinstance(here, list) and part.isdigit() and int(part) < len(here):
            here = here[int(part)]
            path.append(int(part))
        else:
            return False, None, []
    return True, here, path


def fault_paths(check: dict, exchange: dict) -> list[tuple[str, list]]:
    """(side, path) of each element of `exchange` that the check's reason or `actual` points at.

    A pointer is tried at the message, its `result` (or `params`), and, when the reason names an item
    ("tool 'x': at /preprocessor"), at that item of the result's list; the first place it resolves wins.
    """
    said = [check.get("reason") or ""]
    actual = check.get("actual")
    said += [a for a in actual if isinstance(a, str)] if isinstance(actual, list) else [actual] if isinstance(
        actual, str) else []
    labels = {ex.get("label") for ex in check.get("exchanges", ())}
    found: list[tuple[str, list]] = []
    for text in said:
        # A pointer said of another exchange ("invoke real stamp: at /metadata") is not this one's.
        elsewhere = {pointer for before, pointer in _BEFORE_AT.findall(text)
                     if _label_in(before, labels) not in (None, exchange.get("label"))}
        for kind, name, pointer in _AT.findall(text):
            if pointer in elsewhere:
                continue
            parts = _parse_pointer(pointer)
            for side in ("response", "request"):
                message = exchange.get(side)
                if not isinstance(message, dict):
                    continue
                bases: list[list] = []
                if kind:
                    items = (message.get("result") or {}).get(_NAMED_LISTS[kind]) if isinstance(
                        message.get("result"), dict) else None
                    bases += [["result", _NAMED_LISTS[kind], i] for i, item in enumerate(items or ())
                              if isinstance(item, dict) and item.get("name") == name]
                else:
                    bases += [[], ["result"], ["params"]]
                for base in bases:
                    ok, _, path = _resolve(message, [str(b) for b in base] + parts)
                    if ok and path and (side, path) not in found:
                        found.append((side, path))
                        break
                else:
                    continue
                break
    return found


def _label_in(text: str, labels) -> str | None:
    """The exchange label `text` ends with ("first: invoke real stamp" -> "invoke real stamp"), if any."""
    text = text.strip()
    hits = [label for label in labels if label and (text == label or text.endswith(" " + label)
                                                    or text.startswith(label + " "))]
    return max(hits, key=len) if hits else None


def json_html(value: Any, marked: list[list], path: tuple = ()) -> Markup:
    """`value` pretty-printed as JSON (sorted keys, indent 2), each subtree at a path in `marked` in <mark>."""
    if not marked:  # the common case, a tenth of the time: the encoder's own output, escaped
        return Markup(html_text(str(escape(pretty_json(value, sort_keys=True)))))
    return Markup(html_text(_json_html(value, {tuple(m) for m in marked}, path, 0)))


def _json_html(value: Any, marked: set, path: tuple, depth: int) -> str:
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(value, dict) and value:
        body = ",\n".join(f"{inner}{escape(json.dumps(str(k), ensure_ascii=False))}: "
                          f"{_json_html(value[k], marked, path + (k,), depth + 1)}" for k in sorted(value, key=str))
        text = "{\n" + body + "\n" + pad + "}"
    elif isinstance(value, list) and value:
        body = ",\n".join(f"{inner}{_json_html(v, marked, path + (i,), depth + 1)}" for i, v in enumerate(value))
        text = "[\n" + body + "\n" + pad + "]"
    else:
        text = str(escape(json.dumps(value, ensure_ascii=False)))
    return f"<mark>{text}</mark>" if path in marked else text


# -- the page ---------------------------------------------------------------------------------------------------

def _sources(row_ids) -> list[tuple[str, str | None]]:
    """Where the rows come from: each cited source by name and section, with its public URL."""
    from ..core import catalog

    cited: dict[str, str | None] = {}
    for rid in row_ids:
        row = catalog.load().get(rid)
        if row is None:  # a report written by another version of the catalog
            continue
        src, _ = catalog.cite(row)
        cited.setdefault(row.source, src.url if src and src.url else None)
    return list(cited.items())


def _exchange(check: dict, ex: dict) -> dict:
    paths = fault_paths(check, ex) if check["outcome"] in ("fail", "warn", "stale", "xfail") else []
    marks = []
    for side, path in paths:
        # The element in its nearest enclosing object (a tool, an error), so it shows without scrolling.
        if path and isinstance(path[-1], int):  # an item of a list: the item itself, marked whole
            cut = len(path)
        else:
            cut = max((i for i in range(len(path)) if isinstance(path[i - 1] if i else None, int)), default=0)
            cut = cut if cut else max(len(path) - 1, 0)
        _, around, _ = _resolve(ex[side], [str(p) for p in path[:cut]])
        name = around.get("name") if isinstance(around, dict) and isinstance(around.get("name"), str) else None
        marks.append({"where": side + " ", "pointer": _format_pointer(path),
                      "within": f"{_format_pointer(path[:cut])}" + (f" ({name})" if name else "") if cut else "",
                      "excerpt": json_html(around, [list(path[cut:])])})
    return {"label": ex.get("label", "?"), "failure": ex.get("failure"), "elapsed": ex.get("elapsedSeconds"),
            "marks": marks,
            "request_html": json_html(ex.get("request"), [p for s, p in paths if s == "request"]),
            "response_html": json_html(ex.get("response"), [p for s, p in paths if s == "response"])}


def _check(check: dict) -> dict:
    return {**check, "sources": _sources(check.get("rows", ())), "has_expected": "expected" in check,
            "has_actual": "actual" in check, "expected": check.get("expected"), "actual": check.get("actual"),
            "exchanges": [_exchange(check, ex) for ex in check.get("exchanges", ())]}


def context(doc: dict) -> dict:
    """Everything the template shows, computed here so the template only lays it out."""
    from ..core import roles

    role = doc["role"]
    target = doc["target"]
    by_profile: dict[str, list[dict]] = defaultdict(list)
    for check in doc["checks"]:
        by_profile[check["profile"]].append(check)
    recorded_claims = {p: c for p, c in doc["profiles"].items() if p in by_profile}
    gaps = reports.untested(role, recorded_claims)
    order = list(reports.role_profiles(role)) + sorted(p for p in by_profile if p not in reports.role_profiles(role))
    rows: list[dict[str, Any]] = []
    sections: list[dict[str, Any]] = []
    for profile in order:
        claim = doc["profiles"].get(profile) or {"claimed": False, "claimedBy": None, "reason": "not recorded"}
        checks = by_profile.get(profile, [])
        counts = outcome_counts(checks)
        rows.append({"profile": profile, "claim": claim, "recorded": bool(checks), "counts": counts,
                     "advice": reports.claim_advice(profile, claim)})
        if checks:
            summary = ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o])
            sections.append({"profile": profile, "summary": summary,
                             "checks": [_check(c) for c in sorted(checks, key=lambda c: (_SEVERITY.get(
                                 c["outcome"], 9), c["id"]))]})
    counts = outcome_counts(doc["checks"])
    known = roles.ROLES.get(role)
    return {
        "doc": doc, "gaps": gaps,
        "identity": {k: (doc.get("targetInfo") or {}).get(k) for k in ("name", "title", "version")}
        if doc.get("targetInfo") else None, "speaks": reports.speaks_for_itself(doc),
        "where": target.get("command") or target.get("url") or target.get("image") or target.get("adapter") or "?",
        "plays": known.suite_plays if known else "the other parts",
        "headline": [] if doc.get("interrupted") else reports.headline(role, gaps, counts["pass"]),
        "interrupted": reports.interrupted_sentence(len(doc["checks"])) if doc.get("interrupted") else "",
        "counts": [(o, counts[o]) for o in OUTCOMES if counts[o]], "outcomes": OUTCOMES,
        "profile_rows": rows, "sections": sections,
        "not_passing": [c for section in sections for c in section["checks"]
                        if c["outcome"] in ("fail", "stale", "warn")],
        "legend": {"outcomes": LEGEND_OUTCOMES, "claims": LEGEND_CLAIMS},
        "proposals": reports.proposal_rates([(c["id"], c["level"], c["outcome"]) for c in doc["checks"]],
                                            gaps["unclaimed"]),
        "judged": doc.get("judgedAgainst"), "profile_flag": _flag("profile"),
        "judged_profiles": [(p, info) for p, info in (doc.get("judgedAgainst") or {}).get("profiles", {}).items()
                            if p in by_profile],
    }


def render(doc: dict) -> str:
    page = environment().get_template("report.html.j2").render(context(doc))
    markdown_memo().save()
    return page
