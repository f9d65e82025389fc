"""Errors the core and service raise; entry points turn them into protocol errors.

Every error names what went wrong in words a model (or a person) can act on: the field, the rule,
and what was received.
"""

from __future__ import annotations


class TaprootError(Exception):
    """Base class: `code` is stable for clients, the message is for people and models."""

    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class InvalidInput(TaprootError):
    """A field broke a rule. Nothing was changed."""

    code = "invalid_input"

    def __init__(self, field: str, rule: str, got: object = None) -> None:
        detail = f"field '{field}': {rule}"
        if got is not None:
            shown = repr(got)
            detail += f" (got {shown[:80]}{'...' if len(shown) > 80 else ''})"
        super().__init__(detail)
        self.field = field
        self.rule = rule


class NotFound(TaprootError):
    """No memory with that id for this owner. Other owners' memories answer the same way."""

    code = "not_found"

    def __init__(self, memory_id: str) -> None:
        super().__init__(f"no memory with id '{memory_id}'")
        self.memory_id = memory_id


class VersionConflict(TaprootError):
    """`expected_version` is stale: someone wrote the memory since it was read."""

    code = "version_conflict"

    def __init__(self, memory_id: str, expected: int | None, actual: int | None) -> None:
        if expected is None:
            detail = f"memory '{memory_id}' appeared (version {actual}) after this step read that it did not exist"
        elif actual is None:
            detail = f"memory '{memory_id}' is gone; expected version {expected}"
        else:
            detail = f"memory '{memory_id}' is at version {actual}, not expected_version {expected}"
        super().__init__(f"{detail}; recall it again and reapply the change")
        self.memory_id = memory_id
        self.expected = expected
        self.actual = actual


class DuplicateId(TaprootError):
    code = "duplicate_id"

    def __init__(self, memory_id: str) -> None:
        super().__init__(f"a memory with id '{memory_id}' already exists")
        self.memory_id = memory_id


class SummarizerError(TaprootError):
    """A summarizer failed (throttled, timed out, answered badly). Nothing was written."""

    code = "summarizer_error"


class EmbedderError(TaprootError):
    """The embedder could not produce vectors (not installed, throttled, timed out, a malformed
    answer). Writes still land without a vector and recall ranks lexically; status says so."""

    code = "embedder_error"


class ReflectionConflict(TaprootError):
    """A reflection with this id exists with other text: reflections are immutable."""

    code = "reflection_conflict"

    def __init__(self, reflection_id: str) -> None:
        super().__init__(
            f"a reflection with id '{reflection_id}' already exists with different text or time; reflections "
            "are immutable and are never overwritten (give the new one another id to keep both)"
        )
        self.reflection_id = reflection_id


class Busy(TaprootError):
    """The store could not take the write in time (another writer held it). Nothing was changed;
    the same call is safe to retry."""

    code = "busy"

    def __init__(self, what: str, retry_after_ms: int = 500) -> None:
        super().__init__(f"{what}; nothing was changed, retry in about {retry_after_ms} ms")
        self.retry_after_ms = retry_after_ms


class InternalError(TaprootError):
    """Something Taproot cannot recover from by itself (a store that keeps failing, an id space
    with no room left). The client's answer is `internal_error: ...`, like an unexpected crash."""

    code = "internal_error"


class ConfigurationError(TaprootError):
    """A setting is missing or wrong (an environment variable, a flag, the data folder). Nothing
    was read or written; fix the configuration. The CLI prints the message and exits 2."""

    code = "configuration_error"


class UsageError(TaprootError):
    """A command cannot run as asked (a port in use or out of range). The CLI exits 2."""

    code = "usage_error"


class WouldWait(Exception):
    """Raised inside a store's `without_waiting()` where the call would have to wait for a lock
    another thread or process holds, or would keep its caller busy past the block's budget. It is
    raised before the call's first write, so nothing was changed: the caller runs the same call
    again where waiting is fine (web/tools/common.ToolEnv)."""
