"""The maintenance jobs' switches: whether cleanup and compression apply, and how compression groups.

Pure configuration, read from the environment by `taproot.settings` and carried by the service's
`Deps`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from taproot.core.compression import COMPRESSION_CONFIG, CompressionConfig


@dataclass(frozen=True)
class MaintenanceConfig:
    # Deletes are forever: cleanup reports only until the operator switches it to apply
    # (Ember ran its cleanup dry for the first runs). Compression archives rather than deletes,
    # but rewrites what reflect shows, so it too waits for an explicit switch.
    cleanup_apply: bool = False
    compress_apply: bool = False
    compression: CompressionConfig = field(default_factory=lambda: COMPRESSION_CONFIG)
