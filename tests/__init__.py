"""The tests, in folders by layer (thread, memory, storage, models, nodes, settings, cli, server, eval, ...); what
they run against is the top-level `testing` package."""
