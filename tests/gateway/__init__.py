"""Tests and mutants for the gateway role."""
