"""The repository's own contract pages stand alone: they cover what the code requires, and nothing in the
repository points at documents a clean clone does not have."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conformance.core.model import REGISTRY
from conformance.core.roles import load_all
from tests.helpers import ROOT

load_all()

FIXTURE_CONTRACT = (ROOT / "docs" / "fixture-contract.md").read_text(encoding="utf-8")
CHECK_MODEL = (ROOT / "docs" / "check-model.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("need", sorted({need for check in REGISTRY.values() for need in check.needs}))
def test_every_fixture_a_check_needs_is_in_the_fixture_contract(need):
    kind, _, name = need.split("@")[0].partition(":")
    assert f"`{name}`" in FIXTURE_CONTRACT, f"{need} is needed by a check but not described in docs/fixture-contract.md"


# Method names the contract writes in backticks, which look like check slugs.
METHODS = {"tools/call", "tools/list", "resources/read", "middleware/list", "middleware/invoke", "augmentation/list",
           "augmentation/augment", "interceptors/list", "interceptor/invoke"}


def test_checks_named_in_the_fixture_contract_exist():
    from conformance.core.model import PROFILES
    slugs = {check.id.rsplit("/", 1)[1] for check in REGISTRY.values()} | {check.id for check in REGISTRY.values()}
    named = {slug for section in re.split(r"\n## ", FIXTURE_CONTRACT)[2:]
             for slug in re.findall(r"`([a-z]+(?:[-/][a-z]+)+)`", section)} - set(PROFILES) - METHODS
    assert named and named <= slugs, sorted(named - slugs)


def test_check_model_names_every_outcome_and_level():
    from conformance.core.model import LEVELS, OUTCOMES
    for word in (*LEVELS, *OUTCOMES, "--profile", "--strict", "not observed", "quote_sha256", "MCPX_SPECS_DIR"):
        assert word in CHECK_MODEL, word


def _tracked_text_files():
    try:
        names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    for name in names:
        path = ROOT / name
        if path.suffix in {".py", ".md", ".yaml", ".yml", ".json", ".toml", ".txt", ".html", ".ini"} and path.is_file():
            yield name, path.read_text(encoding="utf-8", errors="replace")


# Built from pieces so that this file does not match itself.
OUTSIDE = re.compile("|".join([r"/wo" r"rk/", r"DESIGN\.m" "d", r"UPSTREAM-" "NOTES", r"specs/0\d\d", r"\(source 0\d\d"]))


def test_nothing_points_at_documents_outside_the_repository():
    found = [f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
             for name, text in _tracked_text_files() for m in OUTSIDE.finditer(text)]
    assert not found, found


# -- the README and docs/ as one set of pages ---------------------------------------------------------------

PAGES = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
         for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The page without its code blocks, whose links and paragraphs are examples."""
    return re.sub(r"```.*?```", "", text, flags=re.S)


def _anchors(text: str) -> set[str]:
    # GitHub's heading ids: lowercase, punctuation dropped (not `-` or `_`), spaces as `-`.
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
            for heading in re.findall(r"^#+ (.*)$", _prose(text), re.M)}


def test_every_link_between_the_pages_resolves():
    broken = []
    for name, text in PAGES.items():
        for target in LINK.findall(_prose(text)):
            if re.match(r"[a-z]+:", target):
                continue  # a public address
            path, _, anchor = target.partition("#")
            resolved = (ROOT / name).parent / path if path else ROOT / name
            if not resolved.exists():
                broken.append(f"{name}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved.read_text(encoding="utf-8")):
                broken.append(f"{name}: {target} (no such heading)")
    assert not broken, broken


def test_every_page_in_docs_is_listed_in_the_readme():
    listed = set(re.findall(r"\]\((docs/[\w.-]+\.md)\)", PAGES["README.md"]))
    assert listed >= {name for name in PAGES if name.startswith("docs/")}, sorted(set(PAGES) - listed - {"README.md"})


def test_no_paragraph_is_written_twice():
    # A page links to another instead of repeating it. Paragraphs and list items of some length, compared with
    # their whitespace collapsed; tables and code blocks are left out.
    seen: dict[str, str] = {}
    twice = []
    for name, text in PAGES.items():
        for block in re.split(r"\n\s*\n|\n(?=- )", _prose(text)):
            para = " ".join(block.split())
            if len(para) < 120 or para.startswith(("|", "<!--", "#")):
                continue
            if para in seen:
                twice.append(f"{seen[para]} and {name}: {para[:80]}…")
            seen.setdefault(para, name)
    assert not twice, twice


def test_the_options_the_server_page_lists_are_the_clis():
    # The page's option table against `server --help`: every option it names exists.
    table = PAGES["docs/server.md"].split("<!-- options:server -->")[1].split("\n\n")[0]
    listed = {flag for row in table.splitlines()[2:] for flag in re.findall(r"`(--?[\w-]+)", row.split("|")[1])}
    helptext = subprocess.run([sys.executable, "-m", "conformance", "server", "--help"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout
    offered = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", helptext))
    assert listed and listed <= offered, sorted(listed - offered)


@pytest.mark.parametrize("role", ["server", "host", "gateway"])
def test_the_role_page_names_every_option_of_the_role(role):
    """An option added to conformance/options.py is named on its role's page: a step of
    docs/contributing.md#add-an-option that cannot be forgotten."""
    from conformance.options import for_role

    text = PAGES[f"docs/{role}.md"]
    named = set(re.findall(r"(?<![\w-])--?([a-z][\w-]*)", text))
    missing = [f"--{o.name}" for o in for_role(role) if o.name not in named]
    assert missing == [], f"docs/{role}.md does not name {missing}"


def test_server_page_says_which_checks_judge_the_servers_own_tools():
    """docs/server.md's two tables: a check without fixtures judges the server's own tools and middleware, a
    check with fixtures only the fixtures; both tables hold exactly the server role's checks of each kind."""
    from conformance.core.model import REGISTRY
    from conformance.core.roles import SERVER

    text = (ROOT / "docs" / "server.md").read_text(encoding="utf-8")
    section = text.split("## What is checked on your own tools, and what only on the fixtures", 1)[1]
    section = section.split("\n## ", 1)[0]
    own, fixtures = section.split("On the fixtures only:", 1)

    def listed(part: str) -> set[str]:
        out = set()
        for line in part.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 2 and cells[0].startswith("`"):
                profile = cells[0].strip("`")
                out |= {f"{profile}/server/{slug.strip().strip('`')}" for slug in cells[1].split(",")}
        return out

    ids = SERVER.check_ids()
    assert listed(own) == {c for c in ids if not REGISTRY[c].needs}
    assert listed(fixtures) == {c for c in ids if REGISTRY[c].needs}


NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve")
NUMBER = r"(\d+|" + "|".join(NUMBER_WORDS) + r")"
# A number the pages state about the suite itself: "71 checks", "six profiles", "six proposed …".
COUNTED = re.compile(rf"\b{NUMBER}(?: [\w-]+)? (?:checks|profiles|extensions|proposed)\b")
COUNTED_PAGES = ("README.md", *(f"docs/{p.name}" for p in sorted((ROOT / "docs").glob("*.md"))), "pyproject.toml")


def number(text: str) -> int:
    return int(text) if text.isdigit() else NUMBER_WORDS.index(text)


def stated_counts() -> list[tuple[str, str, int]]:
    """(page, the pattern of the sentence, what the registry says the number is) for every count of checks,
    profiles or extensions a page states; a pattern's one group is the number."""
    from conformance.core.model import PROFILES
    from conformance.core.roles import ROLES

    live = {name: role.check_ids() for name, role in ROLES.items()}
    by_profile = {name: {p: [c for c in ids if REGISTRY[c].profile == p] for p in ROLES[name].profiles}
                  for name, ids in live.items()}
    pipeline = len(by_profile["gateway"]["sequential-pipeline"])
    own = [c for c in live["server"] if not REGISTRY[c].needs]
    return [
        ("README.md", rf"A conformance suite for {NUMBER} proposed", len(PROFILES)),
        *((("README.md", rf"\*\*{name}\*\* \([^)]*?{NUMBER} checks\)", len(live[name])) for name in ROLES)),
        ("docs/server.md", rf"judges every message it got back\. {NUMBER} checks\.", len(live["server"])),
        ("docs/server.md", rf"Of the {NUMBER} server checks", len(live["server"])),
        ("docs/server.md", rf"server checks, {NUMBER} judge what", len(own)),
        ("docs/server.md", rf"The other {NUMBER} judge", len(live["server"]) - len(own)),
        ("docs/host.md", rf"from both sides \({NUMBER} checks\)", len(live["host"])),
        ("docs/gateway.md", rf"together or apart \({NUMBER} checks\)", len(live["gateway"])),
        ("docs/gateway.md", rf"`interceptors`, {NUMBER} checks\)", len(live["gateway"]) - pipeline),
        ("docs/gateway.md", rf"\(`sequential-pipeline`, {NUMBER} checks\)", pipeline),
        ("docs/gateway.md", rf"{NUMBER} checks\): {NUMBER} JSON fixtures", None),  # the fixtures: below
        ("docs/reference-implementations.md", rf"It passes all {NUMBER} gateway checks", len(live["gateway"])),
        ("docs/ecosystem.md", rf"as a target of its own, with {NUMBER} checks", len(ROLES["server"].check_ids("wg-fixtures"))),
        ("docs/sources.md", rf"the source documents of its {NUMBER} profiles", len(PROFILES)),
        # a measurement on the reference server, which claims every server-role profile
        ("docs/reports.md", rf"with the {NUMBER} claimed profiles", len(ROLES["server"].profiles)),
    ]


def test_the_counts_the_pages_give_are_the_registrys():
    """Every number of checks, profiles or extensions the README, docs/*.md and pyproject state is the
    registry's (or, for the pipeline fixtures, the fixture directory's)."""
    from conformance.gateway.replay import FIXTURE_DIR

    for page, pattern, want in stated_counts():
        text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
        said = re.search(pattern, text)
        assert said, f"{page}: no sentence matches {pattern!r}"
        if want is None:
            assert number(said.group(2)) == len(list(FIXTURE_DIR.glob("*.json"))), (page, said.group(0))
            continue
        assert number(said.group(1)) == want, f"{page}: {said.group(0)!r}, the registry says {want}"


def test_every_count_a_page_states_is_held_to_the_registry():
    """A new "N checks" on a page is one the test above checks: every count of checks, profiles or extensions in
    the README, docs/*.md and pyproject is matched by one of its sentences."""
    held: dict[str, list[tuple[int, int]]] = {}
    for page, pattern, _ in stated_counts():
        text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
        held.setdefault(page, []).extend(m.span() for m in re.finditer(pattern, text))
    loose = []
    for page in COUNTED_PAGES:
        text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
        for m in COUNTED.finditer(text):
            if not any(start <= m.start() < end for start, end in held.get(page, ())):
                loose.append(f"{page}: {m.group(0)!r}")
    assert loose == [], "counts no test holds to the registry (add them to stated_counts)"


def test_the_package_description_names_every_profile():
    """pyproject's description lists the extensions by name, one per profile."""
    import tomllib

    from conformance.core.model import PROFILES

    description = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["description"]
    listed = description.rstrip(".").split(": ", 1)[1].split(", ")
    assert len(listed) == len(PROFILES), listed
