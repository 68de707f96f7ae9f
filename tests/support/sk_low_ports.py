#!/usr/bin/env python3
"""sk_low_ports.py N: print N distinct free loopback ports, space-separated.

Picked below the kernel's ephemeral range (a port picked inside it can be taken by some
client's connection before a server binds it), and never a port of the shared servers or
of the topologies scripts/stack.sh starts: 3306, 6379, Kafka 9092-9093, Sentinel 6390-6392
and 26390-26392, Cluster 7000-7008 and its bus ports 17000-17008, Galera 3311-3313 with its
group, IST and SST ports (4444, 4454, 4464, 4567-4588).

Used by tests/support/ft.sh (ft_low_ports) and by bench/windows.sh before it sources ft.sh.
A port printed was free when checked; the caller binds it soon after (no reservation).
"""
import random
import socket
import sys

SHARED = ({3306, 6379, 9092, 9093, 3311, 3312, 3313, 4444, 4454, 4464}
          | set(range(6390, 6393)) | set(range(26390, 26393))
          | set(range(7000, 7009)) | set(range(17000, 17009)) | set(range(4567, 4589)))


def main():
    want = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    out = []
    while len(out) < want:
        p = random.randint(max(1024, lo - 12000), lo - 1)
        if p in out or p in SHARED:
            continue
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
        finally:
            s.close()
        out.append(p)
    print(" ".join(map(str, out)))


if __name__ == "__main__":
    main()
