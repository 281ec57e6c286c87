"""Tools beside the checks: the SDK survival matrix."""
