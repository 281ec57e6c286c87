"""Benchmark: pii_redaction and pii_restoration on generated adversarial shapes, as a ratio to typical text.

    python bench/bench_pii_adversarial.py [--sizes 10000,100000,1000000] [--runs N] [--seed S]

Not a fixed list: each shape family draws its candidates from a seeded generator (random digits in the
groupings a detector reads, separators, prefixes and labels, other scripts' digits, repetition of one value
against all-distinct values), so the figures cover what a detector's validity test costs on candidates no
cache has seen. For each family and size it prints the median CPU time of N runs, the ratio to typical text
(bench_middleware_functions.mixed_text) of the same size measured in the same run, and the deterministic
measure the tests guard: the library validations (phonenumbers, stdnum) the call charged to its budget, per
kilobyte (validation_budget says how many a call may make). The goal is a ratio of at most 10 at every
size, for every family, in standard and strict mode. Most families are read in pii's dense mode (0 validations);
tests/unit/middleware/test_pii_dense.py guards the number of candidates judged one by one per KiB.

pii_restoration is measured the same way on runs of handles (`"x" + "[EMAIL_1]" * N` and variants inside and
outside URLs) against the restoration of a typical redacted text of the same size.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import phonenumbers  # noqa: E402
from bench_middleware_functions import mixed_text  # noqa: E402
from stdnum.us import ssn as us_ssn  # noqa: E402

from reference_servers.middleware import pii  # noqa: E402
from reference_servers.middleware.pii.scan import _hyperscan  # noqa: E402
from reference_servers.middleware.pii.validity import CHARS_PER_VALIDATION, _valid_phone, _valid_ssn, validation_budget  # noqa: E402

SCRIPTS = {  # digits of other scripts, which detection reads as ASCII
    "arabic-indic": "٠١٢٣٤٥٦٧٨٩", "devanagari": "०१२३४५६७८९", "fullwidth": "０１２３４５６７８９",
}


def _digits(rng: random.Random, n: int, first: str = "0123456789") -> str:
    return rng.choice(first) + "".join(rng.choices("0123456789", k=n - 1))


def _groups(rng: random.Random, sizes: list[int], separators: str) -> str:
    sep = rng.choice(separators)
    return sep.join(_digits(rng, n) for n in sizes)


# Each family: rng -> one candidate (with what follows it). Candidates are distinct unless the family repeats.
FAMILIES: dict[str, Callable[[random.Random], str]] = {
    "nanp spaces": lambda r: f"{_digits(r, 3, '23456789')} {_digits(r, 3)} {_digits(r, 4)} ",
    "nanp dashes": lambda r: f"{_digits(r, 3, '23456789')}-{_digits(r, 3)}-{_digits(r, 4)} ",
    "nanp dots": lambda r: f"{_digits(r, 3)}.{_digits(r, 3)}.{_digits(r, 4)}, ",
    "nanp parentheses": lambda r: f"({_digits(r, 3)}) {_digits(r, 3)}-{_digits(r, 4)} ",
    "nanp leading 1": lambda r: f"1-{_digits(r, 3)}-{_digits(r, 3)}-{_digits(r, 4)} ",
    "intl +44 groups": lambda r: f"+44 {_digits(r, 2)} {_digits(r, 4)} {_digits(r, 4)} ",
    "intl random cc": lambda r: "+" + _groups(r, [r.randint(1, 3)] + [r.randint(1, 4) for _ in range(r.randint(2, 6))],
                                             " -.") + " ",
    "intl (0) trunk": lambda r: f"+{r.choice(['44', '49', '33', '39', '61'])} (0){_digits(r, 2)} {_digits(r, 8)} ",
    "intl one run": lambda r: f"+{_digits(r, r.randint(8, 15))} ",
    "trunk-0 national": lambda r: "0" + _groups(r, [r.randint(1, 4)] + [r.randint(2, 8) for _ in range(r.randint(1, 4))],
                                               " -.") + " ",
    "bare 10-15 digits": lambda r: _digits(r, r.randint(10, 15), "123456789") + " ",
    "ssn shapes": lambda r: f"{_digits(r, 3)}-{_digits(r, 2)}-{_digits(r, 4)} ",
    "ssn labelled": lambda r: f"SSN: {_digits(r, 9)}; ",
    "card 4-4-4-4": lambda r: _groups(r, [4, 4, 4, 4], " -") + " ",
    "card run": lambda r: _digits(r, r.randint(13, 19), "23456") + " ",
    "ipv4": lambda r: ".".join(str(r.randint(0, 255)) for _ in range(4)) + " ",
    "version ipv4": lambda r: "version " + ".".join(str(r.randint(0, 255)) for _ in range(4)) + " ",
    "prose + nanp": lambda r: f"call {_digits(r, 3, '23456789')}-{_digits(r, 3)}-{_digits(r, 4)} today. ",
    **{f"nanp {name}": (lambda table: lambda r: f"{_digits(r, 3)}-{_digits(r, 3)}-{_digits(r, 4)} ".translate(
        str.maketrans("0123456789", table)))(table) for name, table in SCRIPTS.items()},
    **{f"intl {name}": (lambda table: lambda r: ("+" + _groups(r, [2, 3, 3, 4], " ")).translate(
        str.maketrans("0123456789", table)) + " ")(table) for name, table in SCRIPTS.items()},
}
REPEATED = "repeated one nanp"  # one value over and over: the caches' best case, for contrast


# Runs of restoration handles (`make(n)`: n handles), each a way a token can hold many of them; the cost test
# (tests/unit/middleware/test_pii_restoration_cost.py) counts the characters read on the same shapes.
HANDLE_RUNS: dict[str, Callable[[int], str]] = {
    "handles glued to a word": lambda n: "x" + "[EMAIL_1]" * n,
    "handles alone": lambda n: "[EMAIL_1]" * n,
    "handles in a url": lambda n: "https://e.example/?q=" + "[EMAIL_1]" * n,
    "handles in an open link": lambda n: "[a](" + "[EMAIL_1]" * n,
    "handles behind slashes": lambda n: "x/[EMAIL_1]" * n,
    "handles and words": lambda n: "[EMAIL_1] x" * n,
    "unknown handles": lambda n: "x" + "[PHONE_1]" * n,
}


def shape_text(family: str, size: int, seed: int) -> str:
    rng = random.Random(f"{family}/{seed}")
    if family == REPEATED:
        return ("415-555-2671 " * (size // 13 + 1))[:size]
    make = FAMILIES[family]
    parts, total = [], 0
    while total < size:
        part = make(rng)
        parts.append(part)
        total += len(part)
    return "".join(parts)[:size]


def library_validations(fn) -> int:
    """How many times `fn` asks phonenumbers or stdnum whether a candidate is valid (parse calls for phones,
    validate calls for SSNs): the cost the adversarial shapes aimed at, independent of machine speed."""
    calls = 0
    _valid_phone.cache_clear()  # answers an earlier call left behind would hide the cost
    _valid_ssn.cache_clear()
    real_parse, real_validate = phonenumbers.parse, us_ssn.validate

    def parse(*args, **kwargs):
        nonlocal calls
        calls += 1
        return real_parse(*args, **kwargs)

    def validate(*args, **kwargs):
        nonlocal calls
        calls += 1
        return real_validate(*args, **kwargs)

    phonenumbers.parse, us_ssn.validate = parse, validate
    try:
        fn()
    finally:
        phonenumbers.parse, us_ssn.validate = real_parse, real_validate
    return calls


def median_seconds(fn, runs: int) -> float:
    """The median CPU time of `fn` over `runs` runs: CPU time rather than wall time, so that other work on a
    shared machine does not count (what is compared is the work a call makes)."""
    times = []
    for _ in range(runs):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def bench_redaction(sizes: list[int], runs: int, seed: int) -> float:
    worst = 0.0
    for mode, args in (("standard", {}), ("strict", {"aggressiveness": "strict"}),
                       ("strict GB", {"aggressiveness": "strict", "defaultRegion": "GB"})):
        print(f"\npii_redaction, {mode}: median CPU ms of {runs} runs, ratio to typical text, validations per KB")
        print(f"{'family':<22}" + "".join(f"{size // 1000:>8} KB {'x':>6} {'v/KB':>5}" for size in sizes))
        typical = {}
        for size in sizes:
            context = [{"type": "text", "text": mixed_text(size)}]
            pii.pii_redaction(context, args)  # warm, as a running server is
            typical[size] = median_seconds(lambda: pii.pii_redaction(context, args), runs)
        print(f"{'typical text':<22}" + "".join(f"{typical[s] * 1000:>11.2f} {1:>6.1f} {'':>5}" for s in sizes))
        for family in [*FAMILIES, REPEATED]:
            row = f"{family:<22}"
            for size in sizes:
                # A new text per run, from the same generator: no run is helped by the previous one's caches.
                texts = iter([shape_text(family, size, seed + i) for i in range(runs + 1)])
                spent = library_validations(lambda: pii.pii_redaction([{"type": "text", "text": next(texts)}], args))
                elapsed = median_seconds(lambda: pii.pii_redaction([{"type": "text", "text": next(texts)}], args),
                                         runs)
                ratio = elapsed / typical[size]
                worst = max(worst, ratio)
                row += f"{elapsed * 1000:>11.2f} {ratio:>6.1f} {spent / (size / 1024):>5.1f}"
            print(row)
    return worst


def bench_restoration(sizes: list[int], runs: int) -> float:
    worst = 0.0
    print(f"\npii_restoration: median CPU ms of {runs} runs, ratio to restoring typical redacted text of the same size")
    print(f"{'shape':<24}" + "".join(f"{size // 1000:>8} KB {'x':>6}" for size in sizes))
    typical = {}
    for size in sizes:
        redacted = pii.pii_redaction([{"type": "text", "text": mixed_text(size)}], {})
        content, redactions = redacted["content"], {"redactions": redacted["metadata"]["redactions"]}
        typical[size] = median_seconds(lambda: pii.pii_restoration(content, redactions), runs)
    print(f"{'typical text':<24}" + "".join(f"{typical[s] * 1000:>11.2f} {1:>6.1f}" for s in sizes))
    for name, make in HANDLE_RUNS.items():
        row = f"{name:<24}"
        for size in sizes:
            context = [{"type": "text", "text": make(size // 9)[:size]}]
            arguments = {"redactions": {"EMAIL_1": "jane@example.com"}}
            elapsed = median_seconds(lambda: pii.pii_restoration(context, arguments), runs)
            worst = max(worst, elapsed / typical[size])
            row += f"{elapsed * 1000:>11.2f} {elapsed / typical[size]:>6.1f}"
        print(row)
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000,1000000",
                        help="comma-separated text sizes in characters (default 1000,10000,100000,1000000)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per measurement (default 3)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", choices=("redaction", "restoration"), help="one of the two benchmarks")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    hyperscan = _hyperscan()
    print("long texts: " + (f"prefiltered with hyperscan {hyperscan.__version__}" if hyperscan else "regex scan alone"))
    if hasattr(pii, "validation_budget"):
        print(f"validation budget: {validation_budget(0)} + one per {CHARS_PER_VALIDATION} characters")
    if args.only != "restoration":
        print(f"\nworst pii_redaction ratio: {bench_redaction(sizes, args.runs, args.seed):.1f}")
    if args.only != "redaction":
        print(f"\nworst pii_restoration ratio: {bench_restoration(sizes, args.runs):.1f}")


if __name__ == "__main__":
    main()
