"""Gatekit 0.3.0: its launcher (a config file naming the upstream) and its pipeline adapter."""
