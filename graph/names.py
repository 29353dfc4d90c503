"""The agent's name, spelled once, in a module that imports nothing, so that reading it costs nothing.

`AGENT_NAME` is its graph's id in langgraph.json and aegra.json, the name the graph is compiled under (the API server
names the assistant of a graph factory after its id, Aegra after the graph, and MCP clients see it as the tool's
name), and the name of its chat node, as in the tutorial. The JSON files spell it too.
"""

AGENT_NAME = "task_maistro"
