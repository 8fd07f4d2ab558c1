"""A fault-injecting TCP proxy for tests: it sits between mcuprof and a server (QEMU's gdbstub,
OpenOCD's Tcl port), forwards both ways, and spoils the traffic as a `Faults` plan says:

  delay         every chunk towards the client waits this long first
  corrupt_rsp   every Nth RSP packet from the server gets a wrong checksum (the client must
                NAK it with '-', and the server resends it; counted: faults, NAKs)
  drop          after this many bytes from the server, that many bytes vanish (once)
  cut_after     after this many bytes from the server, inside a frame (RSP packet or Tcl
                reply), both connections close: a disconnect mid-packet; the server is
                still there, later connections pass untouched
  refuse        the server is gone: connections are accepted and closed at once

Every fault injected is counted, so a test can say how many it survived. One client at a
time; the proxy runs in its own threads until close()."""
from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass


@dataclass
class Faults:
    delay: float = 0.0
    corrupt_rsp: int = 0          # every Nth server packet, 0: none
    corrupt_after_packets: int = 0  # leave the first packets alone (the handshake)
    drop: tuple[int, int] | None = None   # (after bytes, count)
    cut_after: int | None = None
    refuse: bool = False


class RspScanner:
    """Where RSP packets ('$' payload '#' two hex digits) are in a byte stream cut anywhere.
    Payloads cannot hold '#' or '$' (they are escaped), so '#' always ends one."""

    def __init__(self):
        self.state = "between"   # between, payload, checksum1, checksum2
        self.packets = 0

    def step(self, byte: int) -> str:
        """Advances over one byte; returns the state the byte belongs to."""
        if self.state == "between":
            if byte == ord("$"):
                self.state = "payload"
            return "between"
        if self.state == "payload":
            if byte == ord("#"):
                self.state = "checksum1"
            return "payload"
        if self.state == "checksum1":
            self.state = "checksum2"
            return "checksum1"
        self.state = "between"
        self.packets += 1
        return "checksum2"


class FaultProxy:
    def __init__(self, upstream_port: int, faults: Faults, upstream_host: str = "127.0.0.1"):
        self.upstream = (upstream_host, upstream_port)
        self.faults = faults
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.faults_injected = 0
        self.naks = 0               # '-' bytes from the client
        self.bytes_down = 0         # server -> client, forwarded or not
        self.connections = 0
        self.closed = False
        self.drop_done = False
        self.sockets: list[socket.socket] = []
        self.scanner = RspScanner()      # server -> client
        self.up_scanner = RspScanner()   # client -> server
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    # ------------------------------------------------------------------ public

    def close(self) -> None:
        self.closed = True
        try:
            self.listener.close()
        except OSError:
            pass
        self._close_all()
        self.thread.join(timeout=5)

    def __enter__(self) -> "FaultProxy":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ inside

    def _count(self) -> None:
        with self.lock:
            self.faults_injected += 1

    def _close_all(self) -> None:
        for s in self.sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        self.sockets = []

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            if self.faults.refuse:
                self._count()
                client.close()
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            for end in (client, server):   # small writes at once, as the peers themselves do
                end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server, self._up), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, self._down), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, pass_on) -> None:
        """Forwards source -> sink through pass_on(data) -> (bytes to send, disconnect after)."""
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                return
            if not data:
                self._shut(sink)
                return
            out, cut = pass_on(data)
            try:
                if out:
                    sink.sendall(out)
            except OSError:
                return
            if cut:   # the disconnect, once what came before it was sent
                self._close_all()
                return

    def _up(self, data: bytes) -> tuple[bytes, bool]:
        """Client -> server, unchanged; NAKs ('-' between packets) are counted."""
        with self.lock:
            for byte in data:
                if self.up_scanner.step(byte) == "between" and byte == ord("-"):
                    self.naks += 1
        return data, False

    def _down(self, data: bytes) -> tuple[bytes, bool]:
        """Server -> client, through the faults."""
        if self.faults.delay:
            time.sleep(self.faults.delay)
            self._count()
        out, cut = self._spoil(data)
        if cut:
            self._count()
            # The link is gone, not the server: later connections pass untouched.
            self.faults = Faults()
        return out, cut

    def _spoil(self, data: bytes) -> tuple[bytes, bool]:
        """The bytes to forward, and whether to disconnect after them."""
        f = self.faults
        out = bytearray()
        for byte in data:
            position = self.bytes_down
            self.bytes_down += 1
            where = self.scanner.step(byte)
            if f.drop and not self.drop_done and f.drop[0] <= position < f.drop[0] + f.drop[1]:
                if position == f.drop[0]:
                    self._count()
                if position == f.drop[0] + f.drop[1] - 1:
                    self.drop_done = True
                continue
            if (f.corrupt_rsp and where == "checksum2" and self.scanner.packets > f.corrupt_after_packets
                    and self.scanner.packets % f.corrupt_rsp == 0):
                byte = ord("0") if byte != ord("0") else ord("1")   # a different hex digit
                self._count()
            out.append(byte)
            # Mid-frame: inside an RSP payload, or (Tcl) before the 0x1a that ends a reply.
            if f.cut_after is not None and position >= f.cut_after and where in ("payload", "between") \
                    and byte not in (ord("$"), 0x1A, ord("+")):
                return bytes(out), True
        return bytes(out), False

    @staticmethod
    def _shut(s: socket.socket) -> None:
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
