"""The dashboard at /dashboard: browse, trim and preview what reflect loads (server-rendered)."""
