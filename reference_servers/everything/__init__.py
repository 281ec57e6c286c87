"""The reference server: every server-role profile, its fixtures, and real middleware."""
