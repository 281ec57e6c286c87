"""What recording a server keeps beyond what every client connection keeps (client/recording.py): how a
profile is claimed, the fixture contract the run requires, and the SDK the server is built on."""

from __future__ import annotations

from dataclasses import dataclass

from ..client.recording import Recording


@dataclass
class ServerRecording(Recording):
    """A server connection's recording: the client's, plus what the server role's reports name."""

    how_to_claim: str = ""  # what a server does to claim the profile (besides --profile)
    fixture_contract: int = 1  # the fixture contract version the run requires (--fixture-contract)
    sdk: str | None = None  # the SDK the server is built on (--sdk NAME@VERSION), named where it is the cause

    def explain(self, reason: str | None) -> str | None:
        """A failure's reason with the SDK named where what the profile needs is missing on the wire (sdk.py)."""
        from .sdk import explain

        return explain(self, reason, self.sdk)
