"""A client of the worldline examiner broker, for examiners of private-evaluator-v1 checks.

Copy this file next to your examiner among the check's declared verifiers: it is staged from PRIME with
them and imported from /run/worldline-verifiers. Standard library only.

Broker (the examiner's) starts candidate sessions — the candidate's code, as the candidate principal, in
its own namespaces over its own copy of the input — and workers. WorkerBroker (a worker's) opens case
leases and starts candidates over a case's view. Every session, worker and lease must be ended before its
role exits, or the whole run is refused. Any request a broker does not accept stops it and refuses the
run too. docs/private-evaluator-broker.md has both protocols.
"""
import base64
import json
import socket

SOCKET = "/run/worldline-examiner-broker.sock"
WORKER_SOCKET = "/run/worldline-worker-broker.sock"


class BrokerError(Exception):
    """The broker refused a request (the run is then refused as well) or closed the connection."""


class _Connection:
    def __init__(self, path):
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


class Broker(_Connection):
    """The examiner's broker."""

    def __init__(self, path=SOCKET):
        super().__init__(path)

    def run(self, argv, cwd, timeout_ms=60000):
        """Runs one candidate command to its end; returns (exit, output bytes, truncated). Torn down already."""
        a = self.call(op="run", argv=list(argv), cwd=cwd, timeoutMs=timeout_ms)
        return a["exit"], base64.b64decode(a["output"]), a["truncated"]

    def start(self, argv, cwd, timeout_ms=60000):
        """Starts a candidate session; returns its id."""
        return self.call(op="start", argv=list(argv), cwd=cwd, timeoutMs=timeout_ms)["session"]

    def worker(self, argv, cwd, timeout_ms=60000):
        """Starts a worker (at most one at a time); returns its session id, for wait/output/signal/teardown."""
        return self.call(op="worker", argv=list(argv), cwd=cwd, timeoutMs=timeout_ms)["session"]


class Lease:
    """An open case lease: its handle and the generation every request must name."""

    def __init__(self, handle, generation):
        self.handle = handle
        self.generation = generation


class WorkerBroker(_Connection):
    """A worker's broker: case leases over directories of the worker's copy of the input."""

    def __init__(self, path=WORKER_SOCKET):
        super().__init__(path)

    def open(self, path):
        """Leases the directory `path` (strictly inside an input); its contents are copied into the case view."""
        a = self.call(op="open", path=path)
        return Lease(a["lease"], a["generation"])

    def start(self, lease, argv, cwd, timeout_ms=60000, stdin=None, env=None):
        """Starts a candidate over the lease's view (stdin: at most 2048 bytes; env: PYTHONHASHSEED, PYTHONDONTWRITEBYTECODE only)."""
        request = dict(op="start", lease=lease.handle, generation=lease.generation, argv=list(argv), cwd=cwd, timeoutMs=timeout_ms)
        if stdin is not None:
            request["stdin"] = base64.b64encode(stdin).decode()
        if env is not None:
            request["env"] = dict(env)
        return self.call(**request)["session"]

    def copy_in(self, lease):
        """The worker's edits into the view: no candidate live, no output uncopied."""
        lease.generation = self.call(op="copy-in", lease=lease.handle, generation=lease.generation)["generation"]

    def copy_out(self, lease):
        """The view back over the worker's directory, whole or not at all: every candidate torn down first."""
        lease.generation = self.call(op="copy-out", lease=lease.handle, generation=lease.generation)["generation"]

    def close_lease(self, lease):
        """Ends the lease and removes its view."""
        self.call(op="close", lease=lease.handle, generation=lease.generation)
