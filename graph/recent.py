"""A bounded, thread-safe record of what was used lately: the caches a built graph keeps (`graph.runtime`)."""

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)
Value = TypeVar("Value")


class Recent(Generic[Key, Value]):
    """At most `size` entries, the least recently used dropped first; safe to share between threads."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[Key, Value] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Key) -> Value | None:
        """The value kept under `key` (now the most recently used), or None."""
        with self._lock:
            value = self._entries.get(key)
            if key in self._entries:
                self._entries.move_to_end(key)
            return value

    def put(self, key: Key, value: Value) -> None:
        """Keep `value` under `key`, dropping the least recently used entries past `size`."""
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def pop(self, key: Key) -> Value | None:
        """Forget `key`; the value it had, or None."""
        with self._lock:
            return self._entries.pop(key, None)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._entries.clear()
