"""The official MCP conformance suite's result shape, written beside ours: `official/<dir>/checks.json`.

The official suite (`@modelcontextprotocol/conformance`, version core/provenance.OFFICIAL_SUITE_VERSION)
writes one `checks.json` per scenario: a JSON array of checks, each `id`, `name`, `description`, `status`
(SUCCESS, FAILURE, WARNING, SKIPPED, INFO), `timestamp`, `specReferences` (`id`, `url`), and optionally
`errorMessage` and `details`. Tools built for its output (its tier check among them) find every
`**/checks.json` under a results directory and take the scenario from the directory's name, with the mode
prefix (`server-`) and a trailing timestamp stripped.

Here a scenario is one profile in one role, named `<role>-<profile>` (as the official server scenarios are
named `server-<what>`), and carries the profile's extension identifier (core/provenance.EXTENSION_IDS) the
way an official extension scenario does (`source.extensionId`), in `official/scenarios.json`. Directories
follow the official runner's: `server-<scenario>` for the server role (its server mode), `<scenario>` for the
host role (its client mode: a host is the MCP client) and for the gateway role, which it has no mode for.
No timestamp: a run's report directory is its own.

Outcomes: pass -> SUCCESS, fail and stale -> FAILURE, warn -> WARNING, skip -> SKIPPED, info -> INFO. An
expected failure (xfail) is FAILURE with `details.expectedFailure`: the official suite writes a baselined
failure as a failure and applies its baseline only to the exit code, so a reader of checks.json sees the
same verdict from either suite. A check's `id` is its slug (unique within its scenario, so `scenario:id` is
an official baseline entry naming it); its `name` is the full check id.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..core import provenance
from ..core.model import PROFILES

STATUS = {"pass": "SUCCESS", "fail": "FAILURE", "stale": "FAILURE", "xfail": "FAILURE", "warn": "WARNING",
          "skip": "SKIPPED", "info": "INFO"}
STATUSES = ("SUCCESS", "FAILURE", "WARNING", "SKIPPED", "INFO")
MODES = {"server": "server", "host": "client", "gateway": "gateway"}  # the official runner's mode of each role


def scenario_name(role: str, profile: str) -> str:
    return f"{role}-{profile}"


def directory_name(role: str, profile: str) -> str:
    scenario = scenario_name(role, profile)
    return f"server-{scenario}" if role == "server" else scenario


def spec_references(check: dict) -> list[dict]:
    """The catalog citations of the check's rows, each once: `id` the source and section, `url` the source's."""
    from ..core import catalog

    refs: dict[str, dict] = {}
    for rid in check.get("rows", ()):
        row = catalog.load().get(rid)
        if row is None:
            continue
        src, _ = catalog.cite(row)
        ref = {"id": row.source}
        where = (src.url or src.doc) if src is not None else None
        if where:
            ref["url"] = where
        refs.setdefault(row.source, ref)
    return list(refs.values())


def official_check(check: dict, timestamp: str) -> dict:
    """One of our verdicts (results.json's form) in the official check shape."""
    status = STATUS[check["outcome"]]
    out = {"id": check["slug"], "name": check["id"], "description": check["requirement"], "status": status,
           "timestamp": timestamp}
    if status in ("FAILURE", "WARNING", "SKIPPED") and check.get("reason"):
        out["errorMessage"] = check["reason"]
    out["specReferences"] = spec_references(check)
    details = {"checkId": check["id"], "profile": check["profile"], "role": check["role"],
               "extensionId": provenance.EXTENSION_IDS.get(check["profile"]), "level": check["level"],
               "outcome": check["outcome"], "rows": check["rows"], "suiteDoes": check["description"]}
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


def scenarios(doc: dict) -> list[dict]:
    """Per profile with checks in the run: its scenario's metadata and its checks in the official shape."""
    role = doc["role"]
    by_profile: dict[str, list[dict]] = {}
    for check in doc["checks"]:
        by_profile.setdefault(check["profile"], []).append(check)
    revisions = (doc.get("judgedAgainst") or {}).get("profiles", {})
    out = []
    for profile, checks in by_profile.items():
        claim = doc["profiles"].get(profile) or {}
        out.append({
            "name": scenario_name(role, profile), "mode": MODES.get(role, role), "role": role, "profile": profile,
            "directory": directory_name(role, profile),
            "description": f"{profile} profile, {role} role"
                           + ("" if claim.get("claimed") else " (not claimed: only the unclaimed-profile checks)"),
            "source": {"extensionId": provenance.EXTENSION_IDS.get(profile)},
            "catalogRevision": (revisions.get(profile) or {}).get("catalogRevision"),
            "checks": [official_check(c, doc["finishedAt"]) for c in sorted(checks, key=lambda c: c["id"])],
        })
    return out


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
        path.write_text(json.dumps(checks, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
        written.append(path)
        index.append({**scenario, "checks": len(checks)})
    meta = {"shape": {"package": provenance.OFFICIAL_SUITE_PACKAGE, "version": provenance.OFFICIAL_SUITE_VERSION},
            "suite": doc["suite"], "role": doc["role"], "scenarios": index}
    (base / "scenarios.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (base / "expected-failures.yml").write_text(baseline_yaml(doc), encoding="utf-8")
    return written


def baseline_yaml(doc: dict) -> str:
    """The run's failures as an expected-failures file in the official form, one `scenario:check` entry a
    failing check (what the official suite's per-check entries are for), with the catalog revisions judged
    against (report/baseline.py reads it back, and warns when used with other revisions)."""
    import yaml

    from .baseline import CATALOG_KEY

    role = doc["role"]
    failing = [c for c in doc["checks"] if c["outcome"] in ("fail", "xfail")
               or (doc.get("strict") and c["outcome"] == "warn")]
    entries = sorted(f"{scenario_name(role, c['profile'])}:{c['slug']}" for c in failing)
    profiles = sorted({c["profile"] for c in doc["checks"]}, key=lambda p: (p not in PROFILES, PROFILES.index(p) if p in PROFILES else 0, p))
    revisions = (doc.get("judgedAgainst") or {}).get("profiles", {})
    data = {MODES[role]: entries,
            CATALOG_KEY: {p: (revisions.get(p) or {}).get("catalogRevision") or provenance.catalog_revision(p)
                          for p in profiles}}
    head = (f"# Expected failures of this {role} run in the official MCP conformance suite's form\n"
            f"# ({provenance.OFFICIAL_SUITE_PACKAGE} {provenance.OFFICIAL_SUITE_VERSION}); `catalog`: the catalog "
            f"revisions judged against.\n# Use: mcp-ext-conformance {role} ... --expected-failures this-file\n")
    return head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
