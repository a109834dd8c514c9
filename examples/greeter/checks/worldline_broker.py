"""A client of the worldline examiner broker, for examiners of private-evaluator-v1 checks.

Copy this file next to your examiner among the check's declared verifiers: it is staged from PRIME with
them and imported from /run/worldline-verifiers. Standard library only.

The broker starts candidate sessions: the candidate's code, as the candidate principal, in its own
namespaces over its own copy of the input. Every session must be torn down before the examiner exits,
or the whole run is refused. Any request the broker does not accept stops it and refuses the run too.
docs/private-evaluator-broker.md has the protocol.
"""
import base64
import json
import socket

SOCKET = "/run/worldline-examiner-broker.sock"


class BrokerError(Exception):
    """The broker refused a request (the run is then refused as well) or closed the connection."""


class Broker:
    def __init__(self, path=SOCKET):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.connect(path)
        self._file = self._sock.makefile("rwb")

    def close(self):
        self._file.close()
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def call(self, **request):
        self._file.write((json.dumps(request) + "\n").encode())
        self._file.flush()
        line = self._file.readline()
        if not line:
            raise BrokerError("the broker closed the connection")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise BrokerError("%s: %s" % (answer.get("error"), answer.get("message")))
        return answer

    def run(self, argv, cwd, timeout_ms=60000):
        """Runs one candidate command to its end; returns (exit, output bytes, truncated). Torn down already."""
        a = self.call(op="run", argv=list(argv), cwd=cwd, timeoutMs=timeout_ms)
        return a["exit"], base64.b64decode(a["output"]), a["truncated"]

    def start(self, argv, cwd, timeout_ms=60000):
        """Starts a candidate session; returns its id."""
        return self.call(op="start", argv=list(argv), cwd=cwd, timeoutMs=timeout_ms)["session"]

    def wait(self, session, wait_ms=2000):
        """None while it runs (after waiting at most wait_ms, at most 2000), else its exit."""
        a = self.call(op="wait", session=session, waitMs=wait_ms)
        return None if a["running"] else a["exit"]

    def output(self, session, offset=0, max_bytes=65536):
        """(bytes from offset, eof): its stdout and stderr, interleaved as written."""
        a = self.call(op="output", session=session, offset=offset, max=max_bytes)
        return base64.b64decode(a["data"]), a["eof"]

    def signal(self, session, sig="SIGTERM"):
        """SIGTERM or SIGKILL to the session's process group."""
        self.call(op="signal", session=session, signal=sig)

    def teardown(self, session):
        """Kills what is left of the session, waits for it and removes it; returns its exit."""
        return self.call(op="teardown", session=session)["exit"]
