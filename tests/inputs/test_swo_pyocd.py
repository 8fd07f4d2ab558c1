#!/usr/bin/env python3
"""Cross-check of mcuprof's ITM/DWT parser against another parser on the same synthetic
SWO streams, and against the streams' own record of what was put in.

    test_swo_pyocd.py --mcuprof build/mcuprof --elf FIXTURE.elf --peer pyocd [--pyocd-src DIR]
    test_swo_pyocd.py --mcuprof build/mcuprof --elf FIXTURE.elf --peer seed

Peers: pyOCD's SWOParser (pyocd/trace/swo.py; Debian's python3-pyocd 0.13 has no trace
package, so a pyOCD source tree is taken from --pyocd-src or $MCUPROF_PYOCD_SRC, else an
importable pyocd.trace), and the seed's itm75a.py (shared/peers). Exit code 77 (skipped)
when the peer is not there.

Each peer has quirks the streams steer around, so that a disagreement is a real one:
- pyOCD reads 0x30 (local timestamp 3) as reserved and does not take a global timestamp's
  payload: no 0x30, and the global timestamps' payload bytes are ones pyOCD reads as
  reserved one-byte headers; it merges adjacent data-trace packets and holds events until
  a timestamp or an overflow: data-trace packets are never adjacent and the stream ends
  with an overflow; it reads an extension's continuation bytes most significant first:
  page extensions are one byte.
- the seed ignores the stimulus port page: no page extensions; it does not keep a data
  value's size: compared without it.
"""
import argparse
import collections
import importlib.util
import json
import os
import random
import socket
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "peers", "itm75a.py"))
SKIP = 77
SYNC = bytes([0, 0, 0, 0, 0, 0x80])
FUNCTIONS = (0x08000000, 0x08000030)   # the symbols fixture's code: func_a .. asm_tail

failures = []
checks = [0]


def check(condition, what):
    checks[0] += 1
    if not condition:
        failures.append(what)
        print("FAIL:", what)


# ---- the streams -------------------------------------------------------------------------

def build_stream(rng, samples, peer):
    """Returns (bytes, events, counts): the events a correct parser must give, in order, and
    the counts of the kinds that give no event (timestamps, extensions, syncs)."""
    out = bytearray(SYNC)
    events = []
    counts = collections.Counter(sync=1)
    page = 0
    last_was_data_trace = False

    def gts_payload(length):
        # Continuation bytes then a last byte that pyOCD reads as reserved headers (see above).
        more = [0x80, 0x84, 0xA4, 0xC4, 0xE4, 0xF4, 0xB0]
        last = [0x04, 0x14, 0x24, 0x34, 0x44, 0x54, 0x64, 0x74, 0x30]
        return bytes(rng.choice(more) for _ in range(length - 1)) + bytes([rng.choice(last)])

    for _ in range(samples):
        pc = rng.randrange(FUNCTIONS[0], FUNCTIONS[1], 2)
        out += bytes([0x17]) + pc.to_bytes(4, "little")
        events.append(("pc", pc))
        last_was_data_trace = False
        r = rng.random()
        if r < 0.05:
            out += bytes([0x15, 0x00])
            events.append(("sleep",))
        elif r < 0.20:
            size = rng.choice((1, 2, 4))
            port = rng.randrange(32)
            value = rng.randrange(1 << (8 * size))
            out += bytes([port << 3 | {1: 1, 2: 2, 4: 3}[size]]) + value.to_bytes(size, "little")
            events.append(("itm", page * 32 + port, value, size))
        elif r < 0.25:
            ts = rng.choice((1, 2, 4, 5, 6) if peer == "pyocd" else (1, 2, 3, 4, 5, 6))
            out += bytes([ts << 4])
            counts["local-ts"] += 1
        elif r < 0.30:
            tc = rng.randrange(4)
            length = rng.randrange(1, 5)
            body = [0x80 | rng.randrange(128) for _ in range(length - 1)] + [rng.randrange(128)]
            out += bytes([0xC0 | tc << 4] + body)
            counts["local-ts"] += 1
        elif r < 0.32:
            out += bytes([0x94]) + gts_payload(rng.randrange(1, 5))
            counts["global-ts1"] += 1
        elif r < 0.34:
            out += bytes([0xB4]) + gts_payload(rng.choice((4, 6)))
            counts["global-ts2"] += 1
        elif r < 0.36 and peer == "pyocd":
            page = rng.choice((0, 0, 1, 2, 7))
            out += bytes([page << 4 | 0x08])
            counts["extension"] += 1
        elif r < 0.37:
            out += bytes([rng.randrange(8) << 4 | 0x0C])   # SH 1: no page change
            counts["extension"] += 1
        elif r < 0.41:
            number = rng.randrange(1, 512)
            fn = rng.randrange(1, 4)
            out += bytes([0x0E, number & 0xFF, (number >> 8) | fn << 4])
            events.append(("exc", number, fn))
        elif r < 0.42:
            flags = rng.randrange(1, 64)
            out += bytes([0x05, flags])
            events.append(("cnt", flags))
        elif r < 0.46 and not last_was_data_trace:
            cmp = rng.randrange(4)
            what = rng.randrange(3)
            if what == 0:
                value = rng.randrange(FUNCTIONS[0], FUNCTIONS[1], 2)
                out += bytes([(8 + 2 * cmp) << 3 | 0x07]) + value.to_bytes(4, "little")
                events.append(("data-pc", cmp, value))
            elif what == 1:
                value = rng.randrange(1 << 16)
                out += bytes([(9 + 2 * cmp) << 3 | 0x06]) + value.to_bytes(2, "little")
                events.append(("data-address", cmp, value))
            else:
                write = rng.randrange(2)
                size = rng.choice((1, 2, 4))
                value = rng.randrange(1 << (8 * size))
                out += bytes([(16 + 2 * cmp + write) << 3 | 0x04 | {1: 1, 2: 2, 4: 3}[size]])
                out += value.to_bytes(size, "little")
                events.append(("data-value", cmp, write, value, size))
            last_was_data_trace = True
        elif r < 0.465:
            out += bytes([0x70])
            events.append(("overflow",))
        elif r < 0.467:
            out += SYNC
            counts["sync"] += 1
            page = 0
    out += bytes([0x70])   # pyOCD hands its events over at an overflow or a timestamp
    events.append(("overflow",))
    return bytes(out), events, counts


# ---- mcuprof -------------------------------------------------------------------------------

def parse_listing(text):
    """mcuprof report --packets: events in the tuple forms above, and counts of the rest."""
    events, counts = [], collections.Counter()
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        words = line.split()[1:]
        kind = words[0]
        if kind == "pc":
            events.append(("pc", int(words[1], 16)))
        elif kind in ("sleep", "overflow"):
            events.append((kind,))
        elif kind == "itm":   # itm port P 0xV (S bytes)
            events.append(("itm", int(words[2]), int(words[3], 16), int(words[4].strip("("))))
        elif kind == "exception":   # exception N entered
            events.append(("exc", int(words[1]), {"entered": 1, "exited": 2, "returned": 3}[words[2]]))
        elif kind == "event-counter":
            events.append(("cnt", int(words[1], 16)))
        elif kind in ("data-pc", "data-address"):   # data-pc comparator C 0xV
            events.append((kind, int(words[2]), int(words[3], 16)))
        elif kind == "data-value":   # data-value comparator C write 0xV (S bytes)
            events.append((kind, int(words[2]), 1 if words[3] == "write" else 0, int(words[4], 16),
                           int(words[5].strip("("))))
        else:
            counts[kind] += 1
    return events, counts


def mcuprof_listing(mcuprof, path, sync=False):
    command = [mcuprof, "report", path, "--packets"] + (["--sync"] if sync else [])
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("mcuprof failed: %s" % result.stderr.strip())
    return result.stdout


def mcuprof_profile(mcuprof, path, elf):
    result = subprocess.run([mcuprof, "report", path, "--elf", elf, "--by", "address", "--format", "json"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("mcuprof failed: %s" % result.stderr.strip())
    return {row["name"]: row["samples"] for row in json.loads(result.stdout)["functions"]}


def listing_over_tcp(mcuprof, stream, rng):
    """The stream served on a loopback port in uneven pieces, as a probe's USB packets come."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    pieces = []
    at = 0
    while at < len(stream):
        n = rng.randrange(1, 700)
        pieces.append(stream[at:at + n])
        at += n

    def serve():
        peer, _ = server.accept()
        for piece in pieces:
            peer.sendall(piece)
        peer.close()
        server.close()

    thread = threading.Thread(target=serve)
    thread.start()
    result = subprocess.run([mcuprof, "report", "tcp:127.0.0.1:%d" % port, "--packets"],
                            capture_output=True, text=True, timeout=60)
    thread.join()
    if result.returncode != 0:
        sys.exit("mcuprof over TCP failed: %s" % result.stderr.strip())
    return result.stdout


def listing_over_stdin(mcuprof, stream, rng):
    process = subprocess.Popen([mcuprof, "report", "-", "--packets"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    reader = threading.Thread(target=lambda: setattr(process, "captured", process.stdout.read()))
    reader.start()
    at = 0
    while at < len(stream):
        n = rng.randrange(1, 5000)
        process.stdin.write(stream[at:at + n])
        process.stdin.flush()
        at += n
    process.stdin.close()
    reader.join()
    process.wait(timeout=60)
    if process.returncode != 0:
        sys.exit("mcuprof from stdin failed: %s" % process.stderr.read().decode())
    return process.captured.decode()


# ---- the peers -----------------------------------------------------------------------------

def load_pyocd(source_dir):
    """pyOCD's SWOParser and events module, from a source tree or an installed pyOCD."""
    if source_dir:
        trace = os.path.join(source_dir, "pyocd", "trace")
        if not os.path.exists(os.path.join(trace, "swo.py")):
            return None
        # Load only pyocd/trace as a package of its own: pyocd/__init__.py pulls in the
        # whole debugger and its dependencies.
        spec = importlib.util.spec_from_file_location("_pyocd_trace", os.path.join(trace, "__init__.py"),
                                                      submodule_search_locations=[trace])
        package = importlib.util.module_from_spec(spec)
        sys.modules["_pyocd_trace"] = package
        spec.loader.exec_module(package)
        import importlib as il
        return il.import_module("_pyocd_trace.swo"), il.import_module("_pyocd_trace.events")
    try:
        from pyocd.trace import events, swo   # a pyOCD with the trace package (0.14 and later)
        return swo, events
    except ImportError:
        return None


def pyocd_events(modules, data):
    swo, ev = modules

    class Core:   # SWOParser names exceptions through the target; the names are not compared
        def exception_number_to_name(self, number):
            return None

    class Sink:
        def __init__(self):
            self.events = []

        def receive(self, event):
            self.events.append(event)

    sink = Sink()
    parser = swo.SWOParser(Core(), sink)
    timestamps = [0]
    send = parser._send_event

    def counting_send(event):   # timestamps never reach the sink: count them on the way
        if isinstance(event, ev.TraceTimestamp):
            timestamps[0] += 1
        send(event)

    parser._send_event = counting_send
    parser.parse(data)
    out = []
    for e in sink.events:
        if isinstance(e, ev.TracePeriodicPC):
            out.append(("pc", e.pc) if e.pc != 0 else ("sleep",))   # pyOCD: PC 0 is the sleep packet
        elif isinstance(e, ev.TraceITMEvent):
            out.append(("itm", e.port, e.data, e.width))
        elif isinstance(e, ev.TraceExceptionEvent):
            out.append(("exc", e.exception_number, e.action))
        elif isinstance(e, ev.TraceEventCounter):
            out.append(("cnt", e.counter_mask))
        elif isinstance(e, ev.TraceDataTraceEvent):
            if e.pc is not None:
                out.append(("data-pc", e.comparator, e.pc))
            elif e.address is not None:
                out.append(("data-address", e.comparator, e.address))
            else:
                out.append(("data-value", e.comparator, 0 if e.is_read else 1, e.value, e.transfer_size))
        elif isinstance(e, ev.TraceOverflow):
            out.append(("overflow",))
    return out, collections.Counter({"local-ts": timestamps[0]})


def seed_form(event):
    """An event as the seed's parser can tell it: data trace by discriminator, no size."""
    kind = event[0]
    if kind == "data-pc":
        return ("dwt", 8 + 2 * event[1], event[2])
    if kind == "data-address":
        return ("dwt", 9 + 2 * event[1], event[2])
    if kind == "data-value":
        return ("dwt", 16 + 2 * event[1] + event[2], event[3])
    return event


def seed_events(module, data, wait_sync=False):
    out, counts = [], collections.Counter()
    for e in module.parse(data, wait_sync):
        kind = e[0]
        if kind == "pc":
            out.append(("pc", e[1]))
        elif kind == "sleep":
            out.append(("sleep",))
        elif kind == "itm":
            out.append(("itm", e[1], e[2], e[3]))
        elif kind == "exc":
            out.append(("exc", e[1] & 0x1FF, (e[1] >> 12) & 3))
        elif kind == "cnt":
            out.append(("cnt", e[1]))
        elif kind == "dwt":
            out.append(("dwt", e[1], e[2]))
        elif kind == "ovf":
            out.append(("overflow",))
        else:
            counts[kind] += 1
    return out, counts


# ---- the checks ----------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mcuprof", required=True)
    parser.add_argument("--elf", required=True, help="the symbols fixture (code at 0x08000000..0x0800002f)")
    parser.add_argument("--peer", choices=("pyocd", "seed"), required=True)
    parser.add_argument("--pyocd-src", default=os.environ.get("MCUPROF_PYOCD_SRC", ""),
                        help="a pyOCD source tree (the folder holding pyocd/trace/swo.py)")
    parser.add_argument("--work", default=os.environ.get("TMPDIR", "/tmp"))
    parser.add_argument("--samples", type=int, default=20000)
    args = parser.parse_args()

    if args.peer == "pyocd":
        modules = load_pyocd(args.pyocd_src)
        if modules is None:
            print("skipped: no pyOCD with pyocd/trace/swo.py (Debian's python3-pyocd 0.13 has none); "
                  "set MCUPROF_PYOCD_SRC to a pyOCD source tree")
            return SKIP
        peer = lambda data: pyocd_events(modules, data)
        project = lambda events: events
    else:
        if not os.path.exists(SEED):
            print("skipped: the seed's parser is not at %s" % SEED)
            return SKIP
        spec = importlib.util.spec_from_file_location("itm75a", SEED)
        seed = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(seed)
        peer = lambda data, wait=False: seed_events(seed, data, wait)
        project = lambda events: [seed_form(e) for e in events]

    path = os.path.join(args.work, "mcuprof-swo-crosscheck-%d-%s.bin" % (os.getpid(), args.peer))
    compared = 0
    try:
        for seed_value in (1, 2, 3):
            rng = random.Random(seed_value)
            stream, truth, truth_counts = build_stream(rng, args.samples, args.peer)
            with open(path, "wb") as f:
                f.write(stream)
            name = "stream %d (%d bytes)" % (seed_value, len(stream))

            ours, our_counts = parse_listing(mcuprof_listing(args.mcuprof, path))
            check(ours == truth, "%s: mcuprof's events differ from what was put in" % name)
            for kind, n in truth_counts.items():
                check(our_counts[kind] == n, "%s: mcuprof counts %d %s, %d put in" % (name, our_counts[kind], kind, n))
            check(our_counts["bad"] == 0, "%s: mcuprof found %d bad packets" % (name, our_counts["bad"]))

            theirs, their_counts = peer(stream)
            check(project(ours) == theirs, "%s: mcuprof and %s disagree on the events" % (name, args.peer))
            if args.peer == "pyocd":
                check(their_counts["local-ts"] == our_counts["local-ts"],
                      "%s: local timestamps: pyOCD %d, mcuprof %d" % (name, their_counts["local-ts"],
                                                                     our_counts["local-ts"]))
            else:
                # The seed calls every timestamp and extension packet "ts".
                ours_ts = sum(our_counts[k] for k in ("local-ts", "global-ts1", "global-ts2", "extension"))
                check(their_counts["ts"] == ours_ts, "%s: timestamps: seed %d, mcuprof %d" %
                      (name, their_counts["ts"], ours_ts))
                check(their_counts["sync"] == our_counts["sync"], "%s: sync packets differ" % name)
            pcs = [e[1] for e in theirs if e[0] == "pc"]
            sleeps = sum(1 for e in theirs if e[0] == "sleep")
            print("%s: %d events, %d PCs, %d sleep, %s; mcuprof = %s: %s" %
                  (name, len(ours), len(pcs), sleeps, dict(sorted(our_counts.items())), args.peer,
                   "yes" if project(ours) == theirs else "NO"))

            # The profile: per-address counts of the peer's PCs, and the sleep row.
            rows = mcuprof_profile(args.mcuprof, path, args.elf)
            expected = collections.Counter("0x%08x" % pc for pc in pcs)
            if sleeps:
                expected["(sleep)"] = sleeps
            check({k: round(v) for k, v in rows.items()} == dict(expected),
                  "%s: mcuprof report --by address differs from the peer's PC counts" % name)

            # Cut in the middle of a packet: --sync against the peer from the first sync.
            cut = stream[5005:]
            with open(path, "wb") as f:
                f.write(cut)
            synced, _ = parse_listing(mcuprof_listing(args.mcuprof, path, sync=True))
            start = cut.find(SYNC)
            if args.peer == "pyocd":
                theirs_cut, _ = peer(cut[start:])
            else:
                theirs_cut, _ = peer(cut, True)
            check(project(synced) == theirs_cut, "%s cut at 5005: mcuprof --sync and %s differ" % (name, args.peer))
            tail = [e for e in truth if e[0] == "pc"]
            synced_pcs = [e[1] for e in synced if e[0] == "pc"]
            check(0 < len(synced_pcs) < len(tail) and synced_pcs == [e[1] for e in tail[-len(synced_pcs):]],
                  "%s cut at 5005: the PCs after the sync are not the tail of the source" % name)

            # The same stream over TCP and standard input, in uneven pieces.
            check(parse_listing(listing_over_tcp(args.mcuprof, stream, rng))[0] == truth,
                  "%s: over TCP in pieces, the events differ" % name)
            check(parse_listing(listing_over_stdin(args.mcuprof, stream, rng))[0] == truth,
                  "%s: from standard input in pieces, the events differ" % name)
            compared += 1
    finally:
        if os.path.exists(path):
            os.remove(path)

    print("checked %d streams against %s" % (compared, args.peer))
    print("%d passed, %d failed" % (checks[0] - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
