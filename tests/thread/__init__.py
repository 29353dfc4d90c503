"""Short-term memory: the thread's messages, the model's reply entering it, the summary, checkpoints."""
