"""The open loop of `bench.aegra_load`: arrivals at a fixed rate, bounded in count and in time."""

import statistics

from bench.aegra_load import arrival_times


def test_poisson_arrivals_keep_the_rate_and_stop_at_the_count_or_the_time_limit():
    times = arrival_times(4.0, 2000, 10_000.0, "poisson", seed=1)
    gaps = [later - earlier for earlier, later in zip([0.0, *times], times)]
    assert len(times) == 2000 and all(gap > 0 for gap in gaps)
    assert abs(statistics.mean(gaps) - 0.25) < 0.02
    assert statistics.stdev(gaps) > 0.2, "exponential gaps vary about as much as their mean"
    assert arrival_times(4.0, 2000, 10_000.0, "poisson", seed=1) == times, "the seed fixes the schedule"
    bounded = arrival_times(4.0, 2000, 5.0, "poisson", seed=1)
    assert bounded == [at for at in times if at <= 5.0]


def test_even_arrivals_start_at_once_and_are_evenly_spaced():
    assert arrival_times(2.0, 5, 60.0, "even", seed=1) == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert arrival_times(2.0, 50, 1.2, "even", seed=1) == [0.0, 0.5, 1.0]
