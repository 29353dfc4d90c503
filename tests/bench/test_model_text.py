"""`python -m bench.model_text`: its table, a row per shape of reply, on small sizes."""

from bench.model_text import SHAPES, measure, table


def test_the_reading_benchmark_prints_a_row_per_shape():
    sizes = (2_000, 4_000)

    lines = table(measure(sizes), sizes)

    assert lines[0].split() == ["reply", "2,000", "4,000", "growth"] and len(lines) == 2 + len(SHAPES)
    assert [line.split("  ")[0] for line in lines[2:]] == list(SHAPES)
