"""Hand-made SIP over UDP on loopback: a trunk's side without a SIP stack, for what a real
phone will not do on purpose (a CANCEL right behind the INVITE, RTP that never comes,
codecs nobody speaks, floods)."""
import re
import socket
import time
import uuid


def sdp(port: int, formats: str = "8 0 101") -> str:
    lines = ["v=0", "o=- 1 1 IN IP4 127.0.0.1", "s=-", "c=IN IP4 127.0.0.1", "t=0 0",
             f"m=audio {port} RTP/AVP {formats}", "a=rtpmap:8 PCMA/8000", "a=rtpmap:0 PCMU/8000",
             "a=rtpmap:18 G729/8000", "a=rtpmap:101 telephone-event/8000", "a=sendrecv"]
    return "\r\n".join(lines) + "\r\n"


class Trunk:
    """A UDP socket that speaks to the agent at `port` as a static trunk would."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.local = self.sock.getsockname()[1]

    def close(self) -> None:
        self.sock.close()

    def request(self, method: str, user: str, call_id: str, *, body: str = "", cseq: int = 1, branch: str = "",
                to_tag: str = "") -> str:
        branch = branch or f"z9hG4bK{uuid.uuid4().hex[:12]}"
        to = f"<sip:{user}@127.0.0.1>" + (f";tag={to_tag}" if to_tag else "")
        text = (f"{method} sip:{user}@127.0.0.1:{self.port} SIP/2.0\r\n"
                f"Via: SIP/2.0/UDP 127.0.0.1:{self.local};branch={branch};rport\r\nMax-Forwards: 70\r\n"
                f"From: <sip:017612345678@127.0.0.1>;tag=trunk1\r\nTo: {to}\r\nCall-ID: {call_id}\r\n"
                f"CSeq: {cseq} {method}\r\nContact: <sip:trunk@127.0.0.1:{self.local}>\r\n"
                + ("Content-Type: application/sdp\r\n" if body else "")
                + f"Content-Length: {len(body.encode())}\r\n\r\n{body}")
        self.sock.sendto(text.encode(), ("127.0.0.1", self.port))
        return branch

    def invite(self, user: str, rtp_port: int, formats: str = "8 0 101") -> tuple[str, str]:
        call_id = f"{uuid.uuid4().hex}@trunk"
        return call_id, self.request("INVITE", user, call_id, body=sdp(rtp_port, formats))

    def receive(self, timeout: float, want=lambda text: True) -> str | None:
        """The next message `want` accepts (a final response, a BYE…), or None."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                text = self.sock.recv(65536).decode(errors="replace")
            except OSError:
                return None
            if want(text):
                return text
        return None

    def final(self, call_id: str, timeout: float = 10) -> int | None:
        """The status of the final response to the INVITE `call_id`."""
        text = self.receive(timeout, lambda t: call_id in t and re.match(r"SIP/2\.0 [2-6]\d\d", t) is not None
                            and "INVITE" in header(t, "CSeq"))
        return int(text.split(" ")[1]) if text else None


def header(text: str, name: str) -> str:
    match = re.search(rf"^{name}:\s*(.*?)\r?$", text, re.I | re.M)
    return match.group(1) if match else ""
