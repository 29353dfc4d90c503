"""The ecosystem's own suites run on the project's storage: checkpoint conformance, LangGraph's store tests."""
