"""The run loop around the checks: what a run does in the background while pytest collects, and the one
diagnosis of a run that reached no target. The plugin drives it; the check model (conformance/core/) knows
nothing of it."""
