"""What a run leaves behind: results.json, summary.md, JUnit properties, the HTML page, badges, the
expected-failure baseline, and the dashboard that compares many runs."""
