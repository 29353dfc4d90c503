"""What `langgraph.json` wires into the LangGraph API server besides the graph: auth, and the custom HTTP app
(`/info` and the memory page at `/memories`).

Public modules, the two `langgraph.json` names: `auth` (its `auth` object: bearer tokens stand for users) and
`app` (the custom routes). The guard, limits, memory page and its JSON API serve `app`.
"""

__all__ = ["app", "auth"]
