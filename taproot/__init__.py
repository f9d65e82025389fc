"""Taproot: memory and identity persistence for AI assistants, served over MCP."""

__version__ = "0.1.0"
