"""IBM ContextForge 1.0.7: its launcher (the gateway on SQLite behind a stdio bridge) and its pipeline adapter."""
