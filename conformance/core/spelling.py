"""How the user spells an option, and a number of seconds. An option is named in the form in use, for the
reasons and advice a run prints: `--profile` under the command line, `--mcp-profile` under the pytest plugin (`--mcp-server-command` for a role-scoped one).

No imports: the check model, the recorders and the reports name options, and the option table
(conformance/options.py) sits above them all. The table's `Option.plugin` spells plugin flags with
`plugin_flag` below, so the rule is written once; an option with its own plugin flag (`Option.plugin_flag`)
is named by the table only.
"""

from __future__ import annotations

_FORM = {"cli": False}  # whether the command line is in use (it sets this before it runs pytest)


def use_cli_flags() -> None:
    _FORM["cli"] = True


def plugin_flag(name: str, role: str | None = None) -> str:
    """The plugin's flag for option `name`: `--mcp-ROLE-NAME` for a role-scoped option (give its role),
    `--mcp-NAME` otherwise."""
    return f"--mcp-{role}-{name}" if role else f"--mcp-{name}"


def flag(name: str, role: str | None = None) -> str:
    """The flag of option `name` as the user spells it in the form in use (`role` for a role-scoped option)."""
    return f"--{name}" if _FORM["cli"] else plugin_flag(name, role)


def seconds(text: str) -> float:
    """A positive, finite number of seconds from the user's text, or ValueError with the sentence they read
    (the option table's checker; a front end below the table, the pipeline replay's, uses it too)."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"{text!r}: give a positive number of seconds")
    return value
