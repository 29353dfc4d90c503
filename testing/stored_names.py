"""The names the default memory kinds are stored under, as saved data and clients know them.

Tests name the store's namespaces and keys with these literals, so that they notice if a default kind's
stored name or key ever changes (`graph.memory.kinds.DEFAULT_MEMORY_KINDS` must keep them).
"""

PROFILE = "profile"
TODO = "todo"
INSTRUCTIONS = "instructions"
PROFILE_KEY = "user_profile"
INSTRUCTIONS_KEY = "user_instructions"
