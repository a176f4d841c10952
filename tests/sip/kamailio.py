"""A carrier-like SIP registrar and proxy on loopback: Debian's `kamailio` with a config
this module writes. REGISTER demands digest authentication (401 with qop=auth, a wrong
password 403); an INVITE for a number is routed to the account that number belongs to
(its registered contact) with the dialled number kept in `To`, record-routed, so that
in-dialog requests (BYE, REFER, NOTIFY) pass through it. `sipdump` keeps every message,
which `messages()` reads back.

With `nodes` it is also the load balancer of docs/telephony.md ("Two nodes behind
Kamailio's dispatcher"): an INVITE for a number mapped to NODES goes to one of the
Stimmwerk nodes on those ports (the `dispatcher` module, round robin, probing them with
OPTIONS every second), the dialled number kept in the Request-URI; a node that does not
answer is marked down and the INVITE goes to the next one. The log says when probing
takes a node out or back in (`node down sip:… at <epoch seconds>`, `node up …`)."""
import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

MODULES = "/usr/lib/x86_64-linux-gnu/kamailio/modules"
REALM = "carrier.test"
NODES = "nodes"  # the account a number maps to when the dispatcher's nodes answer it


def free_port(kind: int = socket.SOCK_DGRAM) -> int:
    """A port free for both UDP and TCP on loopback."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, kind) as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if _free_for_both(port):
            return port
    raise RuntimeError("no free port")


def free_ports_among(ports: range, count: int) -> list[int]:
    """The first `count` of `ports` free for both UDP and TCP on loopback (a range of the
    suite's own below the kernel's ephemeral ports: tests/ports.py)."""
    free = [port for port in ports if _free_for_both(port)][:count]
    if len(free) < count:
        raise RuntimeError(f"no {count} free ports in {ports}")
    return free


def _free_for_both(port: int) -> bool:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp, \
                socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            tcp.bind(("127.0.0.1", port))
            udp.bind(("127.0.0.1", port))
    except OSError:
        return False
    return True


def options_ping(port: int, timeout: float = 0.5) -> int | None:
    """The status a SIP OPTIONS to 127.0.0.1:port is answered with, or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.settimeout(timeout)
        local = sock.getsockname()[1]
        sock.sendto((f"OPTIONS sip:127.0.0.1:{port} SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:{local};branch=z9hG4bKping"
                     f"{time.monotonic_ns()}\r\nFrom: <sip:ping@127.0.0.1>;tag=p\r\nTo: <sip:127.0.0.1>\r\n"
                     f"Call-ID: ping{time.monotonic_ns()}\r\nCSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\n"
                     "Content-Length: 0\r\n\r\n").encode(), ("127.0.0.1", port))
        try:
            data = sock.recv(4096)
        except OSError:
            return None
    match = re.match(rb"SIP/2\.0 (\d{3})", data)
    return int(match.group(1)) if match else None


@dataclass
class Message:
    direction: str  # "rcv" or "snd"
    text: str
    peer_port: int = 0  # where it came from ("rcv") or went to ("snd")
    at: float = 0.0  # when (the epoch's seconds)

    @property
    def first_line(self) -> str:
        return self.text.split("\r\n", 1)[0]

    def header(self, name: str) -> str:
        match = re.search(rf"^{name}:\s*(.*)$", self.text, re.I | re.M)
        return match.group(1).strip() if match else ""

    @property
    def method(self) -> str:
        return "" if self.first_line.startswith("SIP/2.0") else self.first_line.split(" ", 1)[0]

    @property
    def status(self) -> int:
        return int(self.first_line.split(" ")[1]) if self.first_line.startswith("SIP/2.0") else 0

    @property
    def cseq_method(self) -> str:
        return self.header("CSeq").split(" ")[-1]


class Kamailio:
    def __init__(self, directory: Path, accounts: dict[str, str], numbers: dict[str, str],
                 nodes: tuple[int, ...] = ()) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.accounts, self.numbers, self.nodes = accounts, numbers, nodes
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def config(self) -> str:
        init = [f'    $sht(pw=>{account}) = "{password}";' for account, password in self.accounts.items()]
        init += [f'    $sht(num=>{number.lstrip("+")}) = "{account}";' for number, account in self.numbers.items()]
        modules = "\n".join(f'loadmodule "{name}.so"' for name in (
            "kex", "corex", "tm", "tmx", "sl", "rr", "pv", "maxfwd", "usrloc", "registrar", "textops", "siputils",
            "xlog", "auth", "htable", "sipdump", *(["dispatcher"] if self.nodes else [])))
        dispatch = f'    if ($var(acc) == "{NODES}") {{ route(DISPATCH); exit; }}\n' if self.nodes else ""
        return f"""#!KAMAILIO
debug=2
log_stderror=yes
children=2
tcp_children=1
auto_aliases=no
listen=udp:127.0.0.1:{self.port}
listen=tcp:127.0.0.1:{self.port}
alias="127.0.0.1:{self.port}"
dns=no
rev_dns=no
mpath="{MODULES}/"
{modules}
modparam("tm", "fr_timer", 5000)
modparam("tm", "fr_inv_timer", 60000)
modparam("rr", "append_fromtag", 1)
modparam("usrloc", "db_mode", 0)
modparam("registrar", "default_expires", 600)
modparam("registrar", "min_expires", 30)
modparam("auth", "secret", "{os.urandom(8).hex()}")
modparam("htable", "htable", "pw=>size=6;")
modparam("htable", "htable", "num=>size=6;")
modparam("sipdump", "enable", 1)
modparam("sipdump", "mode", 1)
modparam("sipdump", "folder", "{self.dir}")
modparam("sipdump", "fprefix", "dump-")
modparam("sipdump", "wait", 2000)
{self.dispatcher() if self.nodes else ""}
event_route[htable:mod-init] {{
{chr(10).join(init)}
}}

request_route {{
    if (!mf_process_maxfwd_header("10")) {{ sl_send_reply("483", "Too Many Hops"); exit; }}
    if (is_method("CANCEL")) {{ if (t_check_trans()) {{ t_relay(); }} exit; }}
    if (!is_method("ACK")) {{ if (t_precheck_trans()) {{ t_check_trans(); exit; }} t_check_trans(); }}
    if (has_totag()) {{
        if (loose_route()) {{ t_relay(); exit; }}
        if (is_method("ACK")) {{ if (t_check_trans()) {{ t_relay(); }} exit; }}
        sl_send_reply("404", "Not here");
        exit;
    }}
    remove_hf("Route");
    if (is_method("REGISTER")) {{ route(REGISTRAR); exit; }}
    if (is_method("OPTIONS") && $rU == $null) {{ sl_send_reply("200", "OK"); exit; }}
    if ($rU == $null) {{ sl_send_reply("484", "Address Incomplete"); exit; }}
    if (is_method("INVITE|REFER")) {{ record_route(); }}
    $var(acc) = "";
    if ($sht(pw=>$rU) != $null) {{
        $var(acc) = $rU;
    }} else {{
        $var(n) = $rU;
        if ($(var(n){{s.substr,0,1}}) == "+") {{ $var(n) = $(var(n){{s.substr,1,0}}); }}
        else if ($(var(n){{s.substr,0,1}}) == "0") {{ $var(n) = "49" + $(var(n){{s.substr,1,0}}); }}
        if ($sht(num=>$var(n)) != $null) {{ $var(acc) = $sht(num=>$var(n)); }}
    }}
    if ($var(acc) == "") {{ sl_send_reply("404", "Not Found"); exit; }}
{dispatch}    $rU = $var(acc);
    if (!lookup("location")) {{ sl_send_reply("480", "Temporarily Unavailable"); exit; }}
    t_relay();
    exit;
}}

route[REGISTRAR] {{
    if (!is_present_hf("Authorization")) {{ www_challenge("{REALM}", "1"); exit; }}
    if ($au == $null || $sht(pw=>$au) == $null) {{ sl_send_reply("403", "Forbidden"); exit; }}
    if (!pv_www_authenticate("{REALM}", "$sht(pw=>$au)", "0")) {{
        if ($rc == -2) {{ sl_send_reply("403", "Forbidden"); exit; }}
        www_challenge("{REALM}", "1");
        exit;
    }}
    if ($au != $tU) {{ sl_send_reply("403", "Forbidden"); exit; }}
    consume_credentials();
    if (!save("location")) {{ sl_reply_error(); }}
    exit;
}}
"""

    def dispatcher(self) -> str:
        """The load balancer's part of the config: docs/telephony.md's excerpt, with the
        probing every second (the doc says 5) so that a test sees a node go down soon."""
        (self.dir / "dispatcher.list").write_text("".join(f"1 sip:127.0.0.1:{port}\n" for port in self.nodes))
        return f"""
modparam("dispatcher", "list_file", "{self.dir / 'dispatcher.list'}")
modparam("dispatcher", "ds_ping_interval", 1)
modparam("dispatcher", "ds_probing_mode", 1)
modparam("dispatcher", "flags", 2)

route[DISPATCH] {{
    if (!ds_select_dst("1", "4")) {{ sl_send_reply("503", "No node"); exit; }}
    t_on_failure("NEXT_NODE");
    t_relay();
}}

failure_route[NEXT_NODE] {{
    if (t_is_canceled()) {{ exit; }}
    if (t_branch_timeout() && !t_branch_replied()) {{
        ds_mark_dst("ip");
        if (ds_next_dst()) {{ t_on_failure("NEXT_NODE"); t_relay(); }}
    }}
}}

# The node: the failed branch's destination when the failure route marks it, the
# Request-URI of the dispatcher's own request when probing does.
event_route[dispatcher:dst-down] {{ if ($du == $null) {{ $du = $ru; }} xlog("L_WARN", "node down $du at $TV(Sn)\\n"); }}
event_route[dispatcher:dst-up] {{ if ($du == $null) {{ $du = $ru; }} xlog("L_WARN", "node up $du at $TV(Sn)\\n"); }}
"""

    def start(self) -> "Kamailio":
        cfg = self.dir / "kamailio.cfg"
        cfg.write_text(self.config())
        check = subprocess.run(["kamailio", "-c", "-f", str(cfg)], capture_output=True, text=True, timeout=30)
        assert check.returncode == 0, check.stdout + check.stderr
        log = open(self.dir / "kamailio.log", "wb")
        self.proc = subprocess.Popen(["kamailio", "-f", str(cfg), "-DD", "-E", "-Y", str(self.dir), "-m", "32",
                                      "-M", "4"], stdout=log, stderr=subprocess.STDOUT, cwd=self.dir,
                                     start_new_session=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if options_ping(self.port) == 200:
                return self
            assert self.proc.poll() is None, (self.dir / "kamailio.log").read_text()[-2000:]
        raise AssertionError("kamailio did not answer OPTIONS")

    def stop(self) -> None:
        if self.proc is not None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
            self.proc = None

    def messages(self) -> list[Message]:
        """Every SIP message kamailio received or sent so far (its sipdump records:
        meta lines, a `~` line, the message, a `|` line)."""
        found = []
        for path in sorted(self.dir.glob("dump-*.data")):
            for record in path.read_text(errors="replace").split("=" * 20 + "\n"):
                meta, _, rest = record.partition("~" * 20 + "\n")
                if "|" * 20 not in rest:
                    continue
                tag = re.search(r"^tag:\s*(\w+)", meta, re.M)
                direction = tag.group(1) if tag else "?"
                peer = re.search(rf"^{'dst' if direction == 'snd' else 'src'}port:\s*(\d+)", meta, re.M)
                at = re.search(r"^time:\s*([\d.]+)", meta, re.M)
                found.append(Message(direction, rest.split("|" * 20)[0], int(peer.group(1)) if peer else 0,
                                     float(at.group(1)) if at else 0.0))
        return found
