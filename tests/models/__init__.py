"""The models users bring: the model factory, the call modes, their faults, the real client."""
