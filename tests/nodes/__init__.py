"""The graph's nodes: routing, memory updates, reply timing, bad input, the tutorial's conversation."""
