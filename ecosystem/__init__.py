"""Other implementations beside the reference ones: naive servers and clients on each SDK, the probe that
measures which extension fields survive them, agent frameworks as hosts (hosts/), third-party gateways with
their launchers, pipeline adapters and findings (gateways/), and the dashboard snapshot (see docs/ecosystem.md
and docs/reports.md, "Comparing implementations"). None of it ships in the package."""
