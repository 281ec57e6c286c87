"""The user's secrets never reach a report or the console.

A secret is a `--header` value (after `${VAR}` is read) or a `--secret-env KEY=VALUE` value. A target may echo
one back (into a tool result, an error message, its serverInfo), and what the target says is evidence the
reports keep. So every value of at least MIN_LENGTH characters is replaced by a fixed marker,
`[redacted:header NAME]` or `[redacted:env KEY]`, wherever it appears, inside strings too, in each of the
forms a report may write it (as is, JSON-escaped, `\\uXXXX`, an HTML or XML character reference):

- as a verdict enters the results (plugin.py: the payload of every check, the target's serverInfo, the
  diagnosis of a target not reached), structurally, so the JSON keeps its shape;
- in the results document before any report is rendered from it (collector.py);
- in every line the console or pytest's terminal prints;
- and, last, in every file of the report directory and pytest's own JUnit and JSON reports, after they are
  written (a JSON file is redacted value by value and written again, so it stays valid JSON).

Shorter values are left alone: redacting a 3-character token would rewrite every word that holds it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterable

MIN_LENGTH = 4
_NAMED_REFERENCES = {'"': ("quot",), "&": ("amp",), "<": ("lt",), ">": ("gt",), "'": ("apos",)}
_JSON_SHORT = {'"': '\\\\"', "\\": "\\\\\\\\", "/": "\\\\/", "\b": "\\\\b", "\f": "\\\\f", "\n": "\\\\n",
               "\r": "\\\\r", "\t": "\\\\t"}


def _char_forms(char: str) -> str:
    """A pattern for `char` in any form a report writes it: as is, JSON-escaped, an HTML/XML reference."""
    if char.isalnum() and char.isascii():  # no report escapes a letter or digit: as is (see _core)
        return re.escape(char)
    code = ord(char)
    forms = [f"(?i:\\\\u{code:04x})", f"&#0*{code};", f"(?i:&#x0*{code:x};)"]
    if char in _JSON_SHORT:
        forms.append(_JSON_SHORT[char])
    if char == '"':  # JSON-escaped, then HTML-escaped (a JSON value shown in a page)
        forms.append(r"\\(?:&quot;|&#0*34;|(?i:&#x0*22;))")
    forms += [f"&{name};" for name in _NAMED_REFERENCES.get(char, ())]
    forms.append(re.escape(char))  # last: an encoded form is tried first, so it is replaced whole
    return "(?:" + "|".join(forms) + ")"


def _core(value: str) -> str:
    return max(re.findall(r"[A-Za-z0-9]+", value) or [""], key=len)


def _label(kind: str, name: str) -> str:
    return f"[redacted:{kind} {re.sub(r'[^A-Za-z0-9._-]', '_', name)}]"


class Secrets:
    """The run's secret values and their markers; redacts text and JSON values."""

    def __init__(self, values: dict[str, str] | None = None) -> None:
        # value -> marker; longest first so that a secret holding another is replaced whole
        self.markers = {v: m for v, m in sorted((values or {}).items(), key=lambda kv: -len(kv[0]))
                        if len(v) >= MIN_LENGTH}
        # One pattern a secret: one that starts with a letter or digit starts with a literal, which the regex
        # engine finds by a fast scan (an alternation of all of them would be tried at every position).
        # Every form of a secret holds its longest run of letters and digits as is; where that run is not in a
        # text, a substring search (C speed) has ruled the secret out without the pattern.
        self._patterns = [(_core(value), re.compile("".join(_char_forms(c) for c in value)), marker)
                          for value, marker in self.markers.items()]

    @classmethod
    def of(cls, headers: dict[str, str] | None = None, env: Iterable[str] = ()) -> "Secrets":
        """From the --header values (name -> value) and the --secret-env items (KEY=VALUE)."""
        values: dict[str, str] = {}
        for item in env:
            key, _, value = item.partition("=")
            values.setdefault(value, _label("env", key))
        for name, value in (headers or {}).items():
            values.setdefault(value.strip(), _label("header", name))
            scheme, _, credentials = value.strip().partition(" ")  # `Bearer TOKEN`: the token echoed alone too
            if credentials.strip() and scheme.isalpha():
                values.setdefault(credentials.strip(), _label("header", name))
        return cls(values)

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def text(self, text: str) -> str:
        if not isinstance(text, str):
            return text
        for core, pattern, marker in self._patterns:  # longest first: a secret holding another goes whole
            if core in text:
                text = pattern.sub(marker, text)
        return text

    def _holds(self, text: str) -> bool:
        return any(core in text and pattern.search(text) for core, pattern, _ in self._patterns)

    def value(self, value: Any) -> Any:
        """A JSON value with every string (keys too) redacted; same shape."""
        if not self._patterns:
            return value
        if isinstance(value, (dict, list, tuple)) and all(core for core, _, _ in self._patterns):
            # Mostly nothing to find: one encoding (C speed) and a substring search per secret say so.
            encoded = json.dumps(value, ensure_ascii=False, default=str)
            if not any(core in encoded for core, _, _ in self._patterns):
                return value
        return self._walk(value)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self._walk(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._walk(v) for v in value]
        return value

    def head(self, text: str, limit: int) -> str:
        """The first `limit` characters of `text`, redacted: a secret across the cut is redacted whole first
        (only the start is read, whatever the text's length: an oversized probe is 16 MiB)."""
        longest = max((len(value) for value in self.markers), default=0)
        return self.text(text[:limit + 10 * longest])[:limit]  # 10: the longest form of a character

    def file(self, path: Path) -> bool:
        """Redact one written file in place; whether it changed."""
        if not self._patterns:
            return False
        try:
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):  # not text: the suite writes no binary file a secret could be in
            return False
        if not self._holds(raw):
            return False
        out = None
        if path.suffix == ".json":
            try:
                data = json.loads(raw)
            except ValueError:
                data = None
            if data is not None:
                indent = 2 if raw.lstrip().startswith(("{\n", "[\n")) else None
                out = json.dumps(self.value(data), indent=indent, ensure_ascii=False) + ("\n" if raw.endswith("\n") else "")
        if out is None:
            out = self.text(raw)
        path.write_text(out, encoding="utf-8")
        return True

    def files(self, paths: Iterable[str | os.PathLike | None]) -> None:
        """Redact every file under each of `paths` (a file or a directory)."""
        if not self._patterns:
            return
        for given in paths:
            if not given:
                continue
            path = Path(given)
            if path.is_dir():
                for file in sorted(p for p in path.rglob("*") if p.is_file()):
                    self.file(file)
            elif path.is_file():
                self.file(path)


NONE = Secrets()
_current = NONE


def use(secrets: Secrets) -> None:
    """The run's secrets, for every later redaction in this process."""
    global _current
    _current = secrets


def current() -> Secrets:
    return _current


def text(value: str) -> str:
    return _current.text(value)


def value(data: Any) -> Any:
    return _current.value(data)


def head(text: str, limit: int) -> str:
    return _current.head(text, limit)
