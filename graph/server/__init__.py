"""What `langgraph.json` wires into the LangGraph API server besides the graph: auth."""
