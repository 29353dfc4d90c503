"""Tests against a real `langgraph dev` server, driven through `langgraph_sdk`."""
