"""PostgreSQL round trips: an ordinary turn (one ToDo added, by a user who never finished anything) sends at most
15 statements, counted by the client, as before the done log: its counts and stale record ride in the turn's one
memory read, and a list the read finds without a closed ToDo is not searched for done ones.

The server's own count of transactions (pg_stat_database) is checked too, one above: besides the statements it
counts a transaction for each statement psycopg prepares on a connection of the new process's pool (a Parse of
its own) and for the autovacuum's visits to the fresh database, which vary from run to run (14.4-15.4 a turn,
as before the done log)."""

from langchain_core.messages import HumanMessage

from graph import build_graph, close_graph
from testing.postgres_counts import counting_statements, server_transactions
from testing.scripted_session import task_keeper

WARM_UP = 3
MEASURED = 5
MOST_STATEMENTS = 15
MOST_TRANSACTIONS = MOST_STATEMENTS + 1


def play(database_url: str, messages: list[str], count: list[int] | None = None) -> None:
    model = task_keeper()
    agent = build_graph(database_url=database_url, chat_model=lambda _settings: model)
    try:
        for text in messages:
            agent.invoke({"messages": [HumanMessage(text)]}, {"configurable": {"thread_id": "t", "user_id": "Ann"}})
    finally:
        close_graph(agent)


def test_an_ordinary_turn_costs_at_most_fifteen_statements(postgres_url, fresh_database):
    database = fresh_database.rsplit("/", 1)[1]
    messages = [f"Remind me: task {n}" for n in range(WARM_UP + MEASURED)]
    play(fresh_database, messages[:WARM_UP])
    before = server_transactions(postgres_url, database)
    with counting_statements() as count:
        play(fresh_database, messages[WARM_UP:])
    after_turns = server_transactions(postgres_url, database)
    play(fresh_database, [])
    opening = server_transactions(postgres_url, database) - after_turns

    transactions = (after_turns - before - opening) / MEASURED
    assert 5 <= transactions <= MOST_TRANSACTIONS, transactions  # a turn saves 5 checkpoints
    # The client's count includes opening the storage (its setup and pruning) once.
    with counting_statements() as opening_statements:
        play(fresh_database, [])
    statements = (count[0] - opening_statements[0]) / MEASURED
    assert 5 <= statements <= MOST_STATEMENTS, statements
