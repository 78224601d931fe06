#!/usr/bin/env python3
"""scripts/fleet as a person runs it: two demos and Prometheus come up on
free loopback ports, Prometheus scrapes both (each its own
service.instance.id), the fleet's recording rules load, and SIGTERM (what
Ctrl-C's trap does too) stops every process it started.
Usage: fleet_script_test.py SOURCE_DIR BUILD_DIR"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

SOURCE, BUILD = sys.argv[1], sys.argv[2]


def wait_for(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)  # the processes come up on their own time
    raise AssertionError(f"timed out waiting for {what}")


class FleetScript(unittest.TestCase):
    def test_two_instances_scraped_then_all_stopped(self):
        with tempfile.TemporaryDirectory() as work:
            out_path = os.path.join(work, "out.txt")
            env = dict(os.environ, BUILD=BUILD, FLEET_DIR=os.path.join(work, "fleet"))
            with open(out_path, "w") as out:
                script = subprocess.Popen([os.path.join(SOURCE, "scripts", "fleet"), "2"], cwd=SOURCE, env=env,
                                          stdout=out, stderr=subprocess.STDOUT)
            try:
                read = lambda: open(out_path).read()
                wait_for(lambda: "fleet: running" in read() or script.poll() is not None, 60, "the fleet")
                text = read()
                self.assertIn("fleet: running", text)
                self.assertEqual(len(re.findall(r"service\.instance\.id=fleet-\d", text)), 2, text)
                web = re.search(r"prometheus: (http://127\.0\.0\.1:\d+)", text).group(1)

                def targets_up():
                    try:
                        with urllib.request.urlopen(web + "/api/v1/targets") as r:
                            active = json.load(r)["data"]["activeTargets"]
                    except urllib.error.URLError:  # 503 while Prometheus starts (seen under ASan's load)
                        return False
                    up = [t for t in active if t["health"] == "up" and t["labels"]["job"] == "glassbox"]
                    return len(up) == 2

                wait_for(targets_up, 30, "both demos scraped")
                with urllib.request.urlopen(web + "/api/v1/rules") as r:
                    names = {rule["name"] for g in json.load(r)["data"]["groups"] for rule in g["rules"]}
                self.assertIn("job:glassbox_host_memory_reserved_bytes:sum", names)
            finally:
                script.send_signal(signal.SIGTERM)
                self.assertEqual(script.wait(timeout=60), 0)
            self.assertIn("fleet: logs in", read())
            # Everything it started is gone: Prometheus's port no longer answers.
            with self.assertRaises(OSError):
                urllib.request.urlopen(web + "/-/healthy", timeout=2)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
