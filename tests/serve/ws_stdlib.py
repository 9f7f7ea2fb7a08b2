"""A WebSocket client from Python's standard library alone (RFC 6455), for e2e-serve-realtime:
an implementation independent of the websocketpp the server and `rtf load --duplex` use.

    c = Conn(port)             # handshake; checks 101 and Sec-WebSocket-Accept (RFC 6455 4.2.2)
    op, payload = c.recv()     # one frame: server frames must be whole (FIN) and unmasked
    c.send(1, b'{"type": ...}')  # client frames are masked, as the RFC requires
    c.close(1000)

Conn(port, busy_retries=N) retries a handshake answered 429 (a full server) N times, 250 ms apart.
"""
import base64, hashlib, os, socket, struct, time

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Busy(Exception):
    pass


class Conn:
    def __init__(self, port, path="/v1/realtime", timeout=30, busy_retries=0):
        for attempt in range(busy_retries + 1):
            try:
                self._open(port, path, timeout)
                return
            except Busy:
                if attempt == busy_retries:
                    raise
                time.sleep(0.25)

    def _open(self, port, path, timeout):
        key = base64.b64encode(os.urandom(16)).decode()
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.s.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = self.s.recv(4096)
            if not chunk:
                raise EOFError("connection closed during the handshake")
            buf += chunk
        head, self.rest = buf.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        if lines[0].startswith("HTTP/1.1 429"):
            self.s.close()
            raise Busy(lines[0])
        assert lines[0].startswith("HTTP/1.1 101"), lines[0]
        hdr = {l.split(":", 1)[0].strip().lower(): l.split(":", 1)[1].strip() for l in lines[1:]}
        want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        assert hdr["sec-websocket-accept"] == want, (hdr, want)

    def _need(self, n):
        while len(self.rest) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("connection closed")
            self.rest += chunk
        out, self.rest = self.rest[:n], self.rest[n:]
        return out

    def recv(self):
        b0, b1 = self._need(2)
        assert b0 & 0x80 and not (b1 & 0x80), (b0, b1)  # FIN set, server frames unmasked
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", self._need(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self._need(8))[0]
        return b0 & 0x0F, self._need(n)

    def send(self, op, payload):
        mask, n = os.urandom(4), len(payload)
        if n < 126:
            hdr = bytes([0x80 | op, 0x80 | n])
        elif n < 65536:
            hdr = bytes([0x80 | op, 0x80 | 126]) + struct.pack(">H", n)
        else:
            hdr = bytes([0x80 | op, 0x80 | 127]) + struct.pack(">Q", n)
        self.s.sendall(hdr + mask + bytes(p ^ mask[i % 4] for i, p in enumerate(payload)))

    def close(self, code=1000):
        self.send(8, struct.pack(">H", code))
        self.s.close()
