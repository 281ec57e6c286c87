"""The official MCP conformance suite's result shape, written beside ours: `official/<dir>/checks.json`.

The official suite (`@modelcontextprotocol/conformance`, version core/provenance.OFFICIAL_SUITE_VERSION)
writes one `checks.json` per scenario: a JSON array of checks, each `id`, `name`, `description`, `status`
(SUCCESS, FAILURE, WARNING, SKIPPED, INFO), `timestamp`, `specReferences` (`id`, optional `url`), and
optionally `errorMessage` and `details` (its `ConformanceCheck` type). Its `traceability --results DIR`
reads every `**/checks.json` under a folder and collects the `sep-<N>-*` check ids; its `tier-check` reads no
folder it is given: it runs the suite itself against a live server (`--conformance-server-url`), with
`--repo` and a GitHub token for its repository checks, and scores the checks.json files of that run.

Here a scenario is one claimed profile in one role, named `<role>-<profile>` (as the official server
scenarios are named `server-<what>`). An unclaimed profile is left out: its refusal checks would read as a
passed scenario. Directories follow the official runner's: `server-<scenario>` for the server role (its
server mode), `<scenario>` for the host role (its client mode: a host is the MCP client) and for the gateway
role, which it has no mode for. No timestamp: a run's report directory is its own.

Every scenario here is an extension scenario. The official suite keeps its own extension scenarios out of a
tier score by its scenario registry (`source.extensionId`) and its requirement sets (`not_scored`), not by
anything in checks.json, so checks.json has no place to say so: `official/scenarios.json` carries each
profile's extension identifier for other readers, and the console warns when these files sit among an
official run's results (`mixing_warning`).

Outcomes: pass -> SUCCESS, fail and stale -> FAILURE, warn -> WARNING, info -> INFO, skip -> SKIPPED where
the check does not apply, and WARNING marked untestable (`details.untestable`, "Not testable: ...", the
official suite's form for a missing prerequisite) where it could not run for a fixture the target does not
expose (results.json's `untestable`). An expected
failure (xfail) is FAILURE with `details.expectedFailure`: the official suite writes a baselined failure as a
failure and applies its baseline only to the exit code. A check's `id` is its slug, `sep-<N>-<slug>` for a
profile whose proposal is SEP-N (core/provenance.SEP_NUMBERS), unique within its scenario, so `scenario:id`
is an official baseline entry naming it; its `name` is the full check id; its `timestamp` is when its
verdict was reached.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

from ..core import provenance
from ..core.model import PROFILES
from ..core.roles import ROLES
from .pretty import pretty_json

STATUS = {"pass": "SUCCESS", "fail": "FAILURE", "stale": "FAILURE", "xfail": "FAILURE", "warn": "WARNING",
          "skip": "SKIPPED", "info": "INFO"}
STATUSES = ("SUCCESS", "FAILURE", "WARNING", "SKIPPED", "INFO")
MODES = {name: role.official_mode for name, role in ROLES.items()}  # the official runner's mode of each role
# The key of an expected-failures file in the official form that holds the catalog revisions judged against
# (written by baseline_yaml below, read back by report/baseline.py).
CATALOG_KEY = "catalog"
# How the official runner names a scenario's results folder: `<mode>-<scenario>-<ISO time with dashes>Z`.
TIMESTAMPED = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def scenario_name(role: str, profile: str) -> str:
    return f"{role}-{profile}"


def directory_name(role: str, profile: str) -> str:
    scenario = scenario_name(role, profile)
    return f"server-{scenario}" if role == "server" else scenario


def check_id(profile: str, slug: str) -> str:
    """A check's official `id`: its slug, with the official `sep-<N>-` prefix for a profile of SEP-N."""
    number = provenance.SEP_NUMBERS.get(profile)
    return f"sep-{number}-{slug}" if number else slug


def slug_of(profile: str, official_id: str) -> str:
    """The slug an official check `id` names (check_id's inverse; a bare slug is accepted too)."""
    prefix = f"sep-{provenance.SEP_NUMBERS.get(profile)}-"
    return official_id[len(prefix):] if profile in provenance.SEP_NUMBERS and official_id.startswith(prefix) \
        else official_id


def spec_references(check: dict) -> list[dict]:
    """The catalog citations of the check's rows, each once: `id` the source and section, `url` the source's
    public address. A source that is a page of this repository (the fixture contract, the harness and adapter
    contracts) has no public address: its `id` names the page and it has no `url` (optional in the official
    type), so every `url` is absolute."""
    from ..core import catalog

    refs: dict[str, dict] = {}
    for rid in check.get("rows", ()):
        row = catalog.load().get(rid)
        if row is None:
            continue
        src, _ = catalog.cite(row)
        ref = {"id": row.source}
        if src is not None and src.url and urlsplit(src.url).scheme in ("http", "https"):
            ref["url"] = src.url
        elif src is not None and src.doc:
            ref["id"] = f"{row.source} ({provenance.SUITE} {src.doc})"
        refs.setdefault(row.source, ref)
    return list(refs.values())


def official_check(check: dict, timestamp: str) -> dict:
    """One of our verdicts (results.json's form) in the official check shape; `timestamp` is used where the
    verdict carries no time of its own (results written before checks carried `judgedAt`)."""
    status = STATUS[check["outcome"]]
    untestable = status == "SKIPPED" and bool(check.get("untestable"))
    if untestable:  # a check whose prerequisite is missing: the official untestable WARNING
        status = "WARNING"
    out = {"id": check_id(check["profile"], check["slug"]), "name": check["id"], "description": check["requirement"],
           "status": status, "timestamp": check.get("judgedAt") or timestamp}
    if status in ("FAILURE", "WARNING", "SKIPPED") and check.get("reason"):
        out["errorMessage"] = f"Not testable: {check['reason']}" if untestable else check["reason"]
    out["specReferences"] = spec_references(check)
    details = {"checkId": check["id"], "profile": check["profile"], "role": check["role"],
               "extensionId": provenance.EXTENSION_IDS.get(check["profile"]), "level": check["level"],
               "outcome": check["outcome"], "rows": check["rows"], "suiteDoes": check["description"]}
    if untestable:
        details["untestable"] = True
        details["reason"] = check.get("reason")
    if check.get("sources"):
        details["sources"] = check["sources"]
    if status in ("SUCCESS", "INFO") and check.get("reason"):
        details["note"] = check["reason"]
    for key in ("expected", "actual"):
        if key in check:
            details[key] = check[key]
    if check.get("expectedFailure") or check["outcome"] == "xfail":
        details["expectedFailure"] = True
    out["details"] = details
    return out


def claimed(doc: dict, profile: str) -> bool:
    return bool((doc["profiles"].get(profile) or {}).get("claimed"))


def scenarios(doc: dict) -> list[dict]:
    """Per claimed profile with checks in the run: its scenario's metadata and its checks in the official shape."""
    role = doc["role"]
    by_profile: dict[str, list[dict]] = {}
    for check in doc["checks"]:
        if claimed(doc, check["profile"]):
            by_profile.setdefault(check["profile"], []).append(check)
    revisions = (doc.get("judgedAgainst") or {}).get("profiles", {})
    out = []
    for profile, checks in by_profile.items():
        out.append({
            "name": scenario_name(role, profile), "mode": MODES.get(role, role), "role": role, "profile": profile,
            "directory": directory_name(role, profile),
            "description": f"{profile} profile, {role} role",
            "source": {"extensionId": provenance.EXTENSION_IDS.get(profile)},
            "catalogRevision": (revisions.get(profile) or {}).get("catalogRevision"),
            "checks": [official_check(c, doc["finishedAt"]) for c in sorted(checks, key=lambda c: c["id"])],
        })
    return out


def left_out(doc: dict) -> list[dict]:
    """The profiles the run recorded but did not write a scenario for (unclaimed), each with why."""
    recorded = sorted({c["profile"] for c in doc["checks"]} - {p for p in doc["profiles"] if claimed(doc, p)})
    return [{"profile": p, "reason": "not claimed: its refusal checks passing would read as a passed scenario"}
            for p in recorded]


SCORING_NOTE = ("Extension scenarios. The official suite's checks.json has no way to mark a scenario as an "
                "extension: its tier-check scores every scenario folder it finds by name, and a name it does not "
                "know counts as a core scenario unless --requirements names the scored set. Keep these folders "
                "out of an official results folder that is scored.")


def mixing_warning(directory: str | Path) -> str | None:
    """One sentence when the report directory is inside, or holds, an official run's results: folders named
    `<scenario>-<timestamp>` holding a checks.json, which is how the official runner names them."""
    base = Path(directory)
    places = [base, base.parent]
    for place in places:
        try:
            found = [d for d in place.iterdir() if d.is_dir() and TIMESTAMPED.search(d.name)
                     and (d / "checks.json").is_file()]
        except OSError:
            continue
        if found:
            return (f"{base / 'official'} sits beside the official suite's results in {place} ({found[0].name}, ...): "
                    f"an official tier score of that folder without --requirements would count these extension "
                    f"scenarios as core ones (docs/reports.md, \"The official suite's result shape\")")
    return None


def write(directory: Path, doc: dict) -> list[Path]:
    """`official/<dir>/checks.json` per scenario, `official/scenarios.json` naming them all, and
    `official/expected-failures.yml`, the run's failures as a baseline in the official form."""
    base = directory / "official"
    base.mkdir(parents=True, exist_ok=True)
    written, index = [], []
    for scenario in scenarios(doc):
        checks = scenario.pop("checks")
        path = base / scenario["directory"] / "checks.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(pretty_json(checks) + "\n", encoding="utf-8")
        written.append(path)
        index.append({**scenario, "checks": len(checks)})
    meta = {"shape": {"package": provenance.OFFICIAL_SUITE_PACKAGE, "version": provenance.OFFICIAL_SUITE_VERSION},
            "suite": doc["suite"], "role": doc["role"], "scoring": SCORING_NOTE, "scenarios": index,
            "leftOut": left_out(doc)}
    (base / "scenarios.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (base / "expected-failures.yml").write_text(baseline_yaml(doc), encoding="utf-8")
    return written


def baseline_yaml(doc: dict) -> str:
    """The run's failures and warnings as an expected-failures file in the official form, one `scenario:check`
    entry a check the official runner would count as failing (FAILURE or WARNING, an untestable one included),
    with the catalog revisions judged against (report/baseline.py reads it back, and warns when used with other
    revisions). An unclaimed profile has no scenario in official/, but its failures are listed for this suite's
    own runs (the official runner ignores a scenario it does not run)."""
    import yaml

    role = doc["role"]
    def counted(c: dict) -> bool:  # what the official runner counts as failing; a stale entry passes now
        if not claimed(doc, c["profile"]):
            return c["outcome"] in ("fail", "xfail", "warn")
        return c["outcome"] != "stale" and official_check(c, doc["finishedAt"])["status"] in ("FAILURE", "WARNING")

    failing = [c for c in doc["checks"] if counted(c)]
    entries = sorted(f"{scenario_name(role, c['profile'])}:{check_id(c['profile'], c['slug'])}" for c in failing)
    profiles = sorted({c["profile"] for c in doc["checks"]}, key=lambda p: (p not in PROFILES, PROFILES.index(p) if p in PROFILES else 0, p))
    revisions = (doc.get("judgedAgainst") or {}).get("profiles", {})
    data = {MODES[role]: entries,
            CATALOG_KEY: {p: (revisions.get(p) or {}).get("catalogRevision") or provenance.catalog_revision(p)
                          for p in profiles}}
    head = (f"# Expected failures of this {role} run in the official MCP conformance suite's form\n"
            f"# ({provenance.OFFICIAL_SUITE_PACKAGE} {provenance.OFFICIAL_SUITE_VERSION}); `catalog`: the catalog "
            f"revisions judged against.\n# Use: mcp-ext-conformance {role} ... --expected-failures this-file\n")
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter where PyYAML was built with it
    return head + yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True)
