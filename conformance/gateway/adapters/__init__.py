"""Pipeline adapters for third-party gateways (one module per gateway)."""
