# SPDX-License-Identifier: MIT
# Writes N resourceMonitorReport events, uptime START + i*STEP hours, with
# memory a linear function of uptime, so every statistic can be checked by
# hand. Usage: gen_reports.py N STEP [START]
import json, sys
n = int(sys.argv[1]); step = float(sys.argv[2]); start = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
for i in range(n):
    u = start + i * step
    procs = [
        {"name": "python3 -m uvicorn robot_server.app:app --port 31950", "memRssMb": "%.2f" % (100 + u)},
        {"name": "/opt/opentrons-app/opentrons --type=renderer --lang=en", "memRssMb": 50 - 0.2 * u},
        {"name": "otherproc", "memRssMb": "%.2f" % (200 - u)},
        {"name": "/usr/bin/python3 -m something", "memRssMb": "%.2f" % (10 + u)},
        {"name": "nmcli monitor", "memRssMb": "%.2f" % (3 + u)},
    ]
    print(json.dumps({"event": "resourceMonitorReport", "properties": {"appVersion": "8.2.0", "appMode": "ODD",
        "systemUptimeHrs": "%.2f" % u, "systemAvailMemMb": "%.2f" % (1000 - 2 * u), "processesDetails": procs}}))
