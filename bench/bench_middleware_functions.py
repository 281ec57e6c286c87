"""Benchmark: the middleware functions themselves, in process (no server, no JSON-RPC).

    python bench/bench_middleware_functions.py [--runs N]

Runs from a fresh clone with the reference extra installed (`pip install -e '.[reference]'`); no third parties
beyond it.

pii_redaction on 10 KB, 100 KB and 1 MB of mixed text (prose with emails,
phone numbers in several formats, SSNs, card numbers and IPv4 addresses, and
look-alikes that must stay: dates, versions, order numbers): the median and
best of N timed runs, throughput, how many values were redacted, and the peak
memory Python allocated during one more run (tracemalloc, measured apart from
the timed runs because tracing slows them); then pii_restoration on the
redacted 1 MB; then adversarial inputs of 100 KB (shapes that made the
candidate patterns quadratic, issue 11) as a ratio to typical text of the same
size measured in the same run (the goal is at most 2x); then
document_retrieval's latency on the bundled corpus and on a generated corpus
of 2,000 documents (index build and query separately).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reference_servers.middleware import pii, retrieval  # noqa: E402
from reference_servers.middleware.pii.scan import PREFILTER_MIN_CHARS, _hyperscan  # noqa: E402

PROSE = [
    "The quarterly review covered routing, pricing and the partner programme.",
    "Nothing in this paragraph is personal; it is here to make the text realistic.",
    "Version 3.11.7 shipped on 2025-10-04 and the next review is on 10/04/2025.",
    "Order 1234567890123 is on its way; invoice INV-2025-000123 is attached.",
    "Revenue was $6,400,000 in 2025, up 18% on 2024, with margins at 74%.",
    "Please keep the meeting to 45 minutes, room 415, floor 3.",
    "The depot in Leeds dispatched 1,280 vehicles last week.",
]
PII_VALUES = [
    "jane.doe@example.com", "ops@bramblewood.com", "+44 20 7946 0958", "+1 (415) 555-2671", "415-555-2671",
    "+49 30 123456", "(212) 555-0199", "123-45-6789", "SSN: 987-65-4321", "4111 1111 1111 1111",
    "5555-5555-5555-4444", "192.168.1.10", "10.20.30.40", "[EMAIL_1]",
]


def mixed_text(size: int, seed: int = 7) -> str:
    """About `size` characters: sentences of prose, one in four carrying a PII value (or a handle-like string)."""
    rng = random.Random(seed)
    parts, total = [], 0
    while total < size:
        sentence = rng.choice(PROSE)
        if rng.random() < 0.25:
            sentence = f"{sentence[:-1]}, contact {rng.choice(PII_VALUES)} for details."
        parts.append(sentence)
        total += len(sentence) + 1
    return " ".join(parts)[:size]


def adversarial_texts(size: int) -> dict[str, str]:
    """Inputs shaped to make candidate patterns backtrack or rescan (each cut to `size` characters)."""
    shapes = {
        "+1 1 1 1 ... (phone groups)": "+1 " + "1 " * size,
        "+1-1-1 ... (phone dashes)": "+1" + "-1" * size,
        "+1(1)(1) ... (parentheses)": "+1" + "(1)" * size,
        "1 1 1 ... (card groups)": "1 " * size,
        "2222 2222 ... (4-digit groups)": "2222 " * (size // 5 + 1),
        "1234 5678 ... (4-digit groups)": "1234 5678 " * (size // 10 + 1),
        "01 11 11 ... (trunk 0)": "01 " + "11 " * size,
        "'a'a...@bbb (email local)": ("'a" * 127 + "@" + "b" * 255 + " ") * (size // 512 + 1),
        "a@a@a@ ... (at signs)": "a@" * size,
        "a@b.b.b ... (domain)": "a@" + "b." * size,
        "1111... (digit run)": "1" * size,
        "version 1.2.3.4 ...": "version 1.2.3.4 " * (size // 16 + 1),
    }
    return {name: text[:size] for name, text in shapes.items()}


def pii_prefilter() -> str:
    """Which scan pii_redaction's long texts get here (the figures depend on it)."""
    hyperscan = _hyperscan()
    if hyperscan is None:
        return "long texts: the regex scan alone (no hyperscan wheel)"
    return f"long texts (>= {PREFILTER_MIN_CHARS} characters): prefiltered with hyperscan {hyperscan.__version__}"


def timed(fn, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def peak_bytes(fn) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def generated_corpus(n: int, seed: int = 11) -> list[dict]:
    rng = random.Random(seed)
    vocabulary = sorted({w.strip(".,;:$%()") for s in PROSE for w in s.split()} |
                        set("budget campaign vpn laptop policy travel expense partner release incident certificate "
                            "onboarding hiring pricing roadmap telemetry support escalation leave office".split()))
    return [{"id": f"g{i}", "title": " ".join(rng.choices(vocabulary, k=3)).title(),
             "source": rng.choice(retrieval.BUNDLED_SOURCES), "date": f"2025-{rng.randint(1, 12):02d}-01",
             "text": " ".join(rng.choices(vocabulary, k=rng.randint(30, 120)))} for i in range(n)]


def main(runs: int) -> None:
    print(pii_prefilter())
    print(f"pii_redaction (function level, median of {runs} runs; peak = tracemalloc peak of one more run)")
    print(f"{'size':>8} {'median ms':>10} {'best ms':>9} {'MB/s':>7} {'redacted':>9} {'peak KiB':>9}")
    big_redacted = big_map = None
    for label, size in (("10 KB", 10_000), ("100 KB", 100_000), ("1 MB", 1_000_000)):
        text = mixed_text(size)
        context = [{"type": "text", "text": text}]
        pii.pii_redaction(context, {})  # warm caches (phone validation, regexes) as a running server would have
        times = timed(lambda: pii.pii_redaction(context, {}), runs)
        result = pii.pii_redaction(context, {})
        peak = peak_bytes(lambda: pii.pii_redaction(context, {}))
        median = statistics.median(times)
        print(f"{label:>8} {median * 1000:>10.1f} {min(times) * 1000:>9.1f} {size / median / 1e6:>7.2f} "
              f"{sum(result['metadata']['counts'].values()):>9} {peak / 1024:>9.0f}")
        big_redacted, big_map = result["content"], result["metadata"]["redactions"]

    times = timed(lambda: pii.pii_restoration(big_redacted, {"redactions": big_map}), runs)
    print(f"\npii_restoration of the redacted 1 MB: median {statistics.median(times) * 1000:.1f} ms")

    size = 100_000
    typical = [{"type": "text", "text": mixed_text(size)}]
    strict = {"aggressiveness": "strict"}  # every detector runs, for the typical text as for the adversarial ones
    typical_ms = statistics.median(timed(lambda: pii.pii_redaction(typical, strict), runs)) * 1000
    print(f"\npii_redaction on adversarial 100 KB inputs (strict mode, median of {runs}); typical text: "
          f"{typical_ms:.1f} ms")
    print(f"{'input':<28} {'median ms':>10} {'x typical':>10}")
    worst = 0.0
    for name, text in adversarial_texts(size).items():
        context = [{"type": "text", "text": text}]
        median = statistics.median(timed(lambda: pii.pii_redaction(context, strict), runs))
        worst = max(worst, median * 1000 / typical_ms)
        print(f"{name:<28} {median * 1000:>10.1f} {median * 1000 / typical_ms:>10.2f}")
    print(f"{'worst case / typical':<28} {'':>10} {worst:>10.2f}")

    print(f"\ndocument_retrieval (median of {max(runs, 20)} queries each)")
    print(f"{'corpus':<22} {'docs':>5} {'index ms':>9} {'query ms':>9}")
    queries = ["What was discussed in the Q4 planning meeting?", "How do I set up the VPN?",
               "meal allowance on business travel", "why was telemetry down last month?"]
    bundled = json.loads(retrieval.DEFAULT_CORPUS.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        for name, documents in (("bundled corpus.json", bundled), ("generated", generated_corpus(2000))):
            path = Path(tmp) / f"{name.split()[0]}.json"
            path.write_text(json.dumps(documents))
            retrieval.allow_corpus(path)  # a call may name only corpora the deployment offers
            start = time.perf_counter()
            index = retrieval.Index(retrieval.load_documents(path))
            build = time.perf_counter() - start
            retrieval.index_for(path)  # cached from here on, as in a running server
            times = []
            for i in range(max(runs, 20)):
                context = [{"type": "text", "text": queries[i % len(queries)]}]
                start = time.perf_counter()
                retrieval.document_retrieval(context, {"corpus": str(path), "maxResults": 3})
                times.append(time.perf_counter() - start)
            del index
            print(f"{name:<22} {len(documents):>5} {build * 1000:>9.1f} {statistics.median(times) * 1000:>9.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per measurement (default 7)")
    main(parser.parse_args().runs)
