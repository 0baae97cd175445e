#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""rawframe.py - hand-built frames for tests/cluster/test_routed.sh.

  rawframe.py send-raw IFACE DSTMAC ETHERTYPE COUNT     raw frames, ethertype e.g. 0x88B5
  rawframe.py send-ipudp IFACE DSTMAC SRCIP DSTIP PORT COUNT
                     Ethernet+IPv4+UDP built here (as link_dpdk does in udp framing)
  rawframe.py recv-raw IFACE ETHERTYPE SECONDS           prints how many frames arrived
  rawframe.py recv-udp PORT SECONDS                      prints how many datagrams arrived

Every receiver stops after SECONDS; nothing blocks longer.
"""
import socket
import struct
import sys
import time

PAYLOAD = b"ethermpi-routed-test" + bytes(20)


def mac_bytes(s):
    return bytes(int(x, 16) for x in s.split(":"))


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def raw_socket(iface, proto=0):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(proto))
    s.bind((iface, proto))
    return s


def send_raw(iface, dst, etype, count):
    s = raw_socket(iface)
    src = s.getsockname()[4]
    frame = mac_bytes(dst) + src + struct.pack("!H", int(etype, 0)) + PAYLOAD
    for _ in range(int(count)):
        s.send(frame)


def send_ipudp(iface, dst, srcip, dstip, port, count):
    s = raw_socket(iface)
    src = s.getsockname()[4]
    udp_len = 8 + len(PAYLOAD)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 1, 0x4000, 64, 17, 0,
                     socket.inet_aton(srcip), socket.inet_aton(dstip))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    pseudo = socket.inet_aton(srcip) + socket.inet_aton(dstip) + struct.pack("!BBH", 0, 17, udp_len)
    udp = struct.pack("!HHHH", int(port), int(port), udp_len, 0) + PAYLOAD
    c = csum(pseudo + udp) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", c) + udp[8:]
    frame = mac_bytes(dst) + src + struct.pack("!H", 0x0800) + ip + udp
    for _ in range(int(count)):
        s.send(frame)


def count_until(sock, seconds, match):
    n = 0
    end = time.monotonic() + float(seconds)
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return n
        sock.settimeout(left)
        try:
            data = sock.recv(65536)
        except socket.timeout:
            return n
        if match(data):
            n += 1


def recv_raw(iface, etype, seconds):
    e = int(etype, 0)
    s = raw_socket(iface, e)
    print(count_until(s, seconds, lambda d: len(d) >= 14 and struct.unpack("!H", d[12:14])[0] == e
                      and PAYLOAD in d))


def recv_udp(port, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", int(port)))
    print(count_until(s, seconds, lambda d: d == PAYLOAD))


def main():
    cmds = {"send-raw": (send_raw, 4), "send-ipudp": (send_ipudp, 6), "recv-raw": (recv_raw, 3),
            "recv-udp": (recv_udp, 2)}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds or len(sys.argv) - 2 != cmds[sys.argv[1]][1]:
        sys.stderr.write(__doc__)
        return 2
    cmds[sys.argv[1]][0](*sys.argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
