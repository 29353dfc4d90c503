"""The graph's nodes: the chat node, one module per update node, and the trustcall extraction they share."""
