"""bench.history's smoke test: it imports (its helpers come from bench.run) and its table judges each target."""

from bench.history import LONG, SHORT, print_results


def test_the_table_says_which_targets_were_met(capsys):
    figures = {SHORT: {"page read": 10.0, "turn": 100.0, "export kB": 80.0},
               LONG: {"page read": 25.0, "turn": 120.0, "export kB": 800.0}}

    print_results({"sqlite": figures}, 20_000)

    table = capsys.readouterr().out
    assert "| page read | sqlite | 10.0 ms | 25.0 ms | 2.50x | ≤ 2.0x MISSED |" in table
    assert "| turn | sqlite | 100.0 ms | 120.0 ms | 1.20x | ≤ 1.5x met |" in table
    assert "| export kB | sqlite | 80.0 | 800.0 | 10.00x | — |" in table
