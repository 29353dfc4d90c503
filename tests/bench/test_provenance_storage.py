"""bench.provenance_storage's smoke test: a few turns through the real graph and SQLite store give a table whose
provenance rows are the sources and past facts the turns wrote."""

from bench.provenance_storage import measure, print_results


def test_a_few_turns_measure_what_provenance_adds(tmp_path, capsys):
    parts = measure(4, tmp_path)

    print_results(parts, 4)

    assert parts["writes"] == 4 and parts["sources"] > 0 and parts["past facts"] > 0
    table = capsys.readouterr().out
    added = parts["history provenance fields"] + parts["sources"] + parts["past facts"]
    assert f"| **provenance adds** (fields + sources + past facts) | {added:,} | {added / 4:,.0f} | {added / 4:,.0f} |" in table
