"""Tools beside the checks: the SDK survival matrix and the working group's fixture replay."""
