#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates a resourceMonitorReport export (JSON lines) for pmetrics
analyze tests and benchmarks: several versions, robots rebooting at random,
processes whose memory grows with uptime (a leak), stays flat or shrinks.

usage: analyze_gen.py EVENTS [SEED] > export.jsonl
"""
import json
import random
import sys

VERSIONS = ["8.2.0", "8.2.0-alpha.1", "8.2.0-alpha.0", "8.1.0"]
PROCESSES = [
    # name, base MB, MB per hour (leak), noise MB
    ("python3 -m uvicorn robot_server.app:app --uds /run/aiohttp.sock --ws wsproto --lifespan on", 190.0, 0.15, 8.0),
    ("/opt/opentrons-app/opentrons --type=renderer --enable-crash-reporter=abc --app-path=/opt/opentrons-app/resources/app.asar --no-sandbox --lang=en-US", 140.0, 1.2, 15.0),
    ("/opt/opentrons-app/opentrons --type=zygote --no-zygote-sandbox", 60.0, 0.0, 2.0),
    ("/opt/opentrons-app/opentrons --type=utility --utility-sub-type=network.mojom.NetworkService", 45.0, -0.01, 1.5),
    ("/opt/opentrons-app/opentrons", 95.0, 0.02, 3.0),
    ("nmcli monitor", 8.0, 0.0, 0.3),
    ("/usr/bin/python3 /usr/bin/update-server", 35.0, 0.0, 1.0),
    ("python3 -m opentrons.hardware_control.scripts.update_module_fw", 25.0, -0.05, 1.0),
]


def event(rng, version, uptime):
    procs = []
    avail = 1150.0
    for name, base, leak, noise in PROCESSES:
        mb = base + leak * uptime + rng.gauss(0, noise)
        avail -= max(leak, 0) * uptime * 0.8
        procs.append({"name": name[:100] + ("..." if len(name) > 100 else ""),
                      "memRssMb": "%.2f" % mb})
    avail += rng.gauss(0, 12)
    return {
        "event": "resourceMonitorReport",
        "properties": {
            "time": 1730000000 + int(uptime * 3600),
            "distinct_id": "robot-%d" % rng.randrange(40),
            "appVersion": version,
            "appMode": "ODD",
            "systemUptimeHrs": "%.2f" % uptime,
            "systemAvailMemMb": "%.2f" % avail,
            "processesDetails": procs,
        },
    }


def main():
    n = int(sys.argv[1])
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    out = sys.stdout
    uptime = 0.0
    for _ in range(n):
        if rng.random() < 0.01:
            uptime = 0.0  # a reboot
        uptime += rng.uniform(0.5, 1.5)
        if uptime > 300:
            uptime = 0.0
        version = VERSIONS[min(int(rng.expovariate(1.2)), len(VERSIONS) - 1)]
        out.write(json.dumps(event(rng, version, uptime), separators=(",", ":")))
        out.write("\n")


if __name__ == "__main__":
    main()
