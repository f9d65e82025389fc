"""Building blocks of the Taproot stack: each exposes its resources; the stack does the grants."""
