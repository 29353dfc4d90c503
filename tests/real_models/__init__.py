"""The agent driven by a real model (SmolLM2-135M on llama-server): its invariants, not the model's quality."""
