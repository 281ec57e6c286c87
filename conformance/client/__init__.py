"""The suite as an MCP client, for every role that talks to its target as one: the server role (the target is
the server) and the gateway role (the target is a gateway in front of the suite's own upstream).

`session.py` is the client on one connection and the engine that records each profile's requests;
`recording.py` what a connection's recording keeps (each role extends it: `server/recording.py`,
`gateway/recording.py`); `content.py` the content blocks the suite sends; `fixtures.py` what the fixture
contract's gated tools declare; `judges.py` the wire judge both roles register under their own check ids.
Nothing here imports a role package (server, host, gateway).
"""
