"""`python -m bench.model_faults`: its table, a row per fault, from one fault played through the real graph."""

from bench.model_faults import print_table, row, run_fault


def test_the_benchmark_prints_a_row_per_fault(capsys):
    outcome = run_fault("hermes_text_call", streamed=False)
    print_table([row(outcome)])

    header, rule, line = capsys.readouterr().out.splitlines()
    assert header.split() == [
        "fault", "exception?", "wedged?", "lost", "untold?", "removed?", "doubled?", "invented", "kept?", "model", "calls",
        "outcome",
    ]
    assert line.split()[:8] == ["hermes_text_call", "no", "no", "no", "no", "no", "no", "3"]
