"""Trust: precision and recall of the secret filter on the labelled corpus (`python -m bench.trust`).

The corpus is `testing.secret_corpus`: ToDo-like texts with secrets in every format the filter covers
(English, Chinese, German, Spanish, French, Japanese and Korean; spelled with invisible or look-alike
characters), and ordinary texts that hold none (UUIDs, history ids, Luhn-valid order and tracking numbers,
dates, phone numbers, texts about 密码, Passwort or パスワード …). Counted per text: a secret text is caught when the filter's output is
exactly the expected one (every secret redacted, nothing else touched); an ordinary text is a false
positive when the filter changes it at all. Precision = caught / (caught + ordinary texts changed); recall =
caught / secret texts. Targets: recall ≥ 0.98, no ordinary text changed.
"""

import time
from collections import defaultdict
from dataclasses import dataclass

from graph.memory.redaction import redact_text
from graph.server.limits import MAX_RUN_INPUT_BYTES, MAX_STORE_VALUE_BYTES
from testing.secret_corpus import ORDINARY_CASES, SECRET_CASES

RECALL_TARGET = 0.98


@dataclass
class TrustFigures:
    """The secret filter's figures on the corpus."""

    secret_texts: int
    caught: int
    ordinary_texts: int
    ordinary_changed: int
    precision: float
    recall: float
    recall_by_format: dict[str, tuple[int, int]]
    microseconds_per_text: float
    first_call_milliseconds: float  # loading detect-secrets' patterns and Unicode's confusables, once a process


def measure() -> TrustFigures:
    """Run the filter over the corpus and count."""
    by_format: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    started = time.perf_counter()
    redact_text("pаssword: " + "x" * 20)  # the first call loads the libraries' data
    first_call = time.perf_counter() - started
    started = time.perf_counter()
    outputs = [(case, redact_text(case.text)[0]) for case in (*SECRET_CASES, *ORDINARY_CASES)]
    elapsed = time.perf_counter() - started
    caught = changed = 0
    for case, output in outputs:
        if case.is_secret:
            hit = output == case.expected
            caught += hit
            by_format[case.label][0] += hit
            by_format[case.label][1] += 1
        else:
            changed += output != case.text
    return TrustFigures(
        secret_texts=len(SECRET_CASES),
        caught=caught,
        ordinary_texts=len(ORDINARY_CASES),
        ordinary_changed=changed,
        precision=caught / (caught + changed) if caught + changed else 1.0,
        recall=caught / len(SECRET_CASES),
        recall_by_format={label: (hits, total) for label, (hits, total) in sorted(by_format.items())},
        microseconds_per_text=elapsed / len(outputs) * 1e6,
        first_call_milliseconds=first_call * 1e3,
    )


def print_trust() -> TrustFigures:
    """Print the secret filter's precision, recall (overall and by format) and targets; returns the figures."""
    figures = measure()
    print(f"Secret filter on {figures.secret_texts} secret and {figures.ordinary_texts} ordinary ToDo-like texts")
    print("| format | texts | caught | recall |")
    print("|---|---|---|---|")
    for label, (hits, total) in figures.recall_by_format.items():
        print(f"| {label} | {total} | {hits} | {hits / total:.2f} |")
    print(f"| all secrets | {figures.secret_texts} | {figures.caught} | {figures.recall:.3f} |")
    print(f"ordinary texts changed: {figures.ordinary_changed} of {figures.ordinary_texts}")
    print(f"precision {figures.precision:.3f}, recall {figures.recall:.3f}, "
          f"{figures.microseconds_per_text:.0f} µs per text (the process's first call: {figures.first_call_milliseconds:.0f} ms)")
    met = figures.recall >= RECALL_TARGET
    print(f"{'met' if met else 'MISSED'}: recall {figures.recall:.3f} (target >= {RECALL_TARGET})")
    no_change = figures.ordinary_changed == 0
    print(f"{'met' if no_change else 'MISSED'}: ordinary texts changed {figures.ordinary_changed} (target 0)")
    print(
        f"largest store value accepted: {MAX_STORE_VALUE_BYTES:,} bytes of JSON, largest run input "
        f"{MAX_RUN_INPUT_BYTES:,} (HTTP 413 above; tests/server/test_hardening.py checks both on a real server)"
    )
    return figures


if __name__ == "__main__":
    print_trust()
