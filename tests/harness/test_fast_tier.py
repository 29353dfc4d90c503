"""The fast tier, `pytest -m "not slow"`: which tests tests/conftest.py marks slow, and the guard on the others."""

import importlib
import subprocess
import sys

import psycopg
import pytest

from tests.conftest import SLOW_TESTS, TESTS

RULES = """
import pytest


@pytest.fixture
def server_database(postgres_url):
    return postgres_url


def test_on_both_backends(agent):
    pass


def test_on_a_new_database(fresh_database):
    pass


def test_through_a_fixture_of_its_own(server_database):
    pass


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_on_a_backend(backend):
    pass


def test_in_a_directory(tmp_path):
    pass
"""


def test_postgresql_fixtures_and_parametrizations_are_slow_and_the_rest_is_not(pytester):
    pytester.makeconftest("from tests.conftest import *")
    pytester.makepyfile(test_rules=RULES)
    items, _ = pytester.inline_genitems()
    assert {item.name: item.get_closest_marker("slow") is not None for item in items} == {
        "test_on_both_backends[sqlite]": False,
        "test_on_both_backends[postgres]": True,
        "test_on_a_new_database": True,
        "test_through_a_fixture_of_its_own": True,
        "test_on_a_backend[sqlite]": False,
        "test_on_a_backend[postgres]": True,
        "test_in_a_directory": False,
    }


def test_every_test_named_slow_exists():
    for name in SLOW_TESTS:
        path, _, function = name.partition("::")
        assert (TESTS / path).exists(), name
        if function:
            module = importlib.import_module("tests." + path.removesuffix(".py").replace("/", "."))
            assert callable(getattr(module, function, None)), name


def test_a_test_not_marked_slow_cannot_start_a_process():
    with pytest.raises(pytest.fail.Exception, match="is not marked slow but starts a process"):
        subprocess.run([sys.executable, "-c", "pass"])


def test_a_test_not_marked_slow_cannot_open_a_postgresql_connection():
    with pytest.raises(pytest.fail.Exception, match="is not marked slow but opens a PostgreSQL connection"):
        psycopg.connect("postgresql://127.0.0.1:9/none")
