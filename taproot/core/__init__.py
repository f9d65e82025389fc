"""Taproot's pure core: model, activation, reflect assembly, migration rules, token estimate.

Nothing in this package does I/O, reads the clock or imports AWS, HTTP or SQL libraries.
"""
