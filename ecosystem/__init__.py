"""Other implementations beside the reference ones: naive servers and clients on each SDK, the probe that
measures which extension fields survive them, and the dashboard snapshot (see docs/ecosystem.md and
docs/reports.md, "Comparing implementations")."""
