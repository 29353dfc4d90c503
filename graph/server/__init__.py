"""What `langgraph.json` wires into the LangGraph API server besides the graph: auth, and the custom HTTP app
(`/info` and the memory page at `/memories`)."""
