#!/usr/bin/env python3
"""Writes the ibnetdiscover fixtures of this directory.

The layout is infiniband-diags' ibnetdiscover (out_switch, out_ca,
out_switch_port, out_ca_port in ibnetdiscover.c): an id block, a node line,
one line per connected port, switches first, then channel adapters.
Run: python3 gen_ibnetdiscover.py (rewrites fattree.txt and oneswitch.txt).
"""

HEADER = """#
# Topology file: generated on Wed Nov 25 18:20:11 2026
#
# Initiated from node {init:016x} port {initp:016x}
"""


def name(kind, guid):
    return '"%s-%016x"' % (kind, guid)


def write(path, switches, cas, links, lids):
    """switches/cas: {guid: (desc, nports)}; links: [((a, pa), (b, pb))]."""
    peer = {}
    for a, b in links:
        peer[a] = b
        peer[b] = a
    kind = {g: "S" for g in switches}
    kind.update({g: "H" for g in cas})
    desc = {g: d for g, (d, _) in list(switches.items()) + list(cas.items())}
    first = sorted(cas)[0]
    out = [HEADER.format(init=first, initp=first + 1)]
    for g, (d, n) in switches.items():
        out.append("\nvendid=0x2c9\ndevid=0xd2f0\nsysimgguid=0x%x\n" % g)
        out.append("switchguid=0x%x(%x)\n" % (g, g))
        out.append('Switch\t%d %s\t\t# "%s" enhanced port 0 lid %d lmc 0\n' % (n, name("S", g), d, lids[g]))
        for p in range(1, n + 1):
            if (g, p) not in peer:
                continue
            rg, rp = peer[(g, p)]
            line = "[%d]\t%s[%d]" % (p, name(kind[rg], rg), rp)
            if kind[rg] != "S":
                line += "(%x) " % (rg + rp)
            line += '\t\t# "%s" lid %d 4xHDR\n' % (desc[rg], lids[rg])
            out.append(line)
    for g, (d, n) in cas.items():
        out.append("\nvendid=0x2c9\ndevid=0x101b\nsysimgguid=0x%x\ncaguid=0x%x\n" % (g, g))
        out.append('Ca\t%d %s\t\t# "%s"\n' % (n, name("H", g), d))
        for p in range(1, n + 1):
            if (g, p) not in peer:
                continue
            rg, rp = peer[(g, p)]
            line = "[%d](%x) \t%s[%d]" % (p, g + p, name(kind[rg], rg), rp)
            if kind[rg] != "S":
                line += " (%x) " % (rg + rp)
            line += '\t\t# lid %d lmc 0 "%s" lid %d 4xHDR\n' % (lids[g], desc[rg], lids[rg])
            out.append(line)
    out.append("\n")
    with open(path, "w") as f:
        f.write("".join(out))


def fattree():
    # Two spines, four leaves (leaf04 keeps its factory description), two
    # hosts per leaf; every leaf has two cables to each spine.
    spines = [0xb83fd203004a1e00, 0xb83fd203004a0f80]
    leaves = [0x1070fd0300c2a100 + 0x100 * i for i in range(4)]
    hosts = [0x0c42a10300b1c2d0 + 0x10 * i for i in range(8)]
    switches = {}
    switches[spines[0]] = ("MF0;spine01:MQM8700/U1", 40)
    switches[spines[1]] = ("MF0;spine02:MQM8700/U1", 40)
    for i, g in enumerate(leaves):
        d = "MF0;leaf%02d:MQM8700/U1" % (i + 1) if i < 3 else "Quantum Mellanox Technologies"
        switches[g] = (d, 40)
    cas = {g: ("n%02d mlx5_0" % (i + 1), 1) for i, g in enumerate(hosts)}
    links = []
    for li, l in enumerate(leaves):
        for si, s in enumerate(spines):
            for k in range(2):
                links.append(((l, 21 + 2 * si + k), (s, 1 + 2 * li + k)))
        for h in range(2):
            links.append(((l, 1 + h), (hosts[2 * li + h], 1)))
    lids = {}
    for i, g in enumerate(spines + leaves):
        lids[g] = i + 1
    for i, g in enumerate(hosts):
        lids[g] = 20 + i
    write("fattree.txt", switches, cas, links, lids)


def oneswitch():
    sw = 0x248a0703005a0c80
    hosts = [0x98039b0300f1a0b0 + 0x10 * i for i in range(3)]
    switches = {sw: ("MF0;ibsw1:MSB7800/U1", 36)}
    cas = {g: ("gpu%d mlx5_0" % (i + 1), 1) for i, g in enumerate(hosts)}
    links = [((sw, 1 + i), (h, 1)) for i, h in enumerate(hosts)]
    lids = {sw: 1}
    lids.update({h: 2 + i for i, h in enumerate(hosts)})
    write("oneswitch.txt", switches, cas, links, lids)


fattree()
oneswitch()
