"""The done-log benchmark, run small: every figure is measured for both users on SQLite, the long-time user's list
holds only the open ToDos and those finished within MAISTRO_DONE_LOG_AFTER_DAYS, and the table prints."""

import math

from bench.done_log import OPEN, print_table, run


def test_the_benchmark_measures_both_users_and_leaves_only_the_active_list(capsys):
    results = run(postgres="off", per_year=100, repeats=1)

    figures = results["sqlite"]
    assert figures["moved"] == 100 * 3 - figures["active_long"] + OPEN
    assert OPEN < figures["active_long"] < OPEN + 10, "about 4 of 100 a year were finished in the last 14 days"
    for name in ("turn", "tokens", "cli", "page"):
        assert figures[f"{name}_fresh"] > 0 and math.isfinite(figures[f"{name}_ratio"])
    assert figures["tokens_ratio"] < 1.3, "the log's counts cost the prompt a line"
    print_table(results)
    printed = capsys.readouterr().out
    assert "| chat prompt of that turn (tokens) | sqlite |" in printed and "one-time move of" in printed
