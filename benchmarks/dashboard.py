"""Does the dashboard slow decisions? A real ``jaxbandits serve`` driven over HTTP by a simulated
world (3 arms, conversion rates 0.10 / 0.07 / 0.04, geometric delays of mean 20 decisions, the
conversions posted back after every 10 decision requests), its decisions per second measured in
alternating phases without and with a headless Chromium showing ``/dashboard`` (which polls
``/series`` and ``/estimates`` every second), ``--reps`` times each; the medians and every phase's
number are written to ``benchmarks/results/dashboard-cpu.json``. ``--screenshot PATH`` saves the
page at the end (the picture in docs/online.md).

    python benchmarks/dashboard.py --seconds 15 --reps 4 --screenshot docs/img/dashboard.png
"""
import argparse
import base64
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Page:
    """Headless Chromium on one URL, with the DevTools protocol for a check and a screenshot."""

    def __init__(self, url, tmp):
        from websockets.sync.client import connect

        browser = next(p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p)
        prof = Path(tempfile.mkdtemp(dir=tmp))
        self.proc = subprocess.Popen([browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                      "--remote-debugging-port=0", f"--user-data-dir={prof}",
                                      "--window-size=1400,2000", url],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        f = prof / "DevToolsActivePort"
        while not (f.exists() and len(f.read_text().splitlines()) >= 2):
            time.sleep(0.1)
        port = int(f.read_text().splitlines()[0])
        while True:
            pages = [t for t in httpx.get(f"http://127.0.0.1:{port}/json/list").json() if t["type"] == "page"]
            if pages:
                break
            time.sleep(0.1)
        self.ws = connect(pages[0]["webSocketDebuggerUrl"], max_size=None).__enter__()
        self.n = 0

    def call(self, method, **params):
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.n:
                return m["result"]

    def updates(self):
        r = self.call("Runtime.evaluate", returnByValue=True,
                      expression="document.body ? Number(document.body.dataset.updates || 0) : 0")
        return r["result"].get("value", 0)

    def close(self):
        self.ws.close()
        self.proc.kill()
        self.proc.wait()


def drive(url, seconds, batch, rng, state):
    """Decisions for ``seconds``; returns decisions per second."""
    http = state["http"]
    made = 0
    t0 = time.perf_counter()
    k = 0
    while time.perf_counter() - t0 < seconds:
        out = http.post(url + "/decide", json={"n": batch}).json()
        made += len(out["ids"])
        for i, a in zip(out["ids"], out["arms"]):
            if rng.random() < state["rate"][a]:
                state["due"].setdefault(i + int(rng.geometric(1 / 21)) - 1, []).append(i)
        k += len(out["ids"])
        if k >= 10:  # the tracker posts back at least every 10 decisions (delays stay honest)
            k = 0
            last = out["ids"][-1]
            back = sorted(i for d in [d for d in state["due"] if d <= last] for i in state["due"].pop(d))
            for j in range(0, len(back), 1000):
                http.post(url + "/feedback", json={"events": [{"id": i} for i in back[j:j + 1000]]})
    return made / (time.perf_counter() - t0)


def server_cost(cfg, tmp, n_decisions=20_000, reps=50):
    """In process, the same config: the wall time of what one page update costs the server
    (``/series`` of a full series, ``/estimates``), of one sample (taken once a second whenever
    requests come, page or not) and of one decision request's work (``Service.decide(1)``: the
    learner and the SQLite commit), in ms; the memory a full series holds."""
    from jaxbandits.apps import dashboard, serve

    svc = serve.Service(serve.load_config(None, **cfg), str(tmp / "inproc.db"))
    try:
        rng = np.random.default_rng(1)
        for _ in range(n_decisions // 1000):
            out = svc.decide(1000)
            svc.feedback([{"id": i} for i in out["ids"] if rng.random() < 0.04])
        mon = dashboard.Monitor(svc)
        import gc
        import tracemalloc

        mon.sample()  # compiled, caches filled
        mon.samples = []
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(mon.capacity - 1):  # a full series: one sample short of a merge
            mon.sample()
        gc.collect()
        out = {"series_points": len(mon.samples),
               "series_memory_bytes_full": tracemalloc.get_traced_memory()[0] - base}  # what the samples hold
        tracemalloc.stop()
        out["series_json_bytes"] = len(json.dumps(mon.series()))
        full = list(mon.samples)
        for name, f in (("series", lambda: json.dumps(mon.series())),
                        ("estimates", lambda: json.dumps(mon.estimates())),
                        ("sample", mon.sample), ("decide_1", lambda: svc.decide(1))):
            f()
            ts = []
            for _ in range(reps):
                mon.samples = list(full)
                t0 = time.perf_counter()
                f()
                ts.append(1e3 * (time.perf_counter() - t0))
            out[name + "_ms"] = statistics.median(ts)
        return out
    finally:
        svc.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=15.0, help="length of one phase")
    ap.add_argument("--reps", type=int, default=4, help="phases without and with the browser, each (order ABBA)")
    ap.add_argument("--batches", default="1,20", help="decisions per request, comma-separated")
    ap.add_argument("--screenshot", default=None, help="save the page here at the end (PNG)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "dashboard-cpu.json"))
    a = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp())
    arms = ["banner-a", "banner-b", "banner-c"]
    cfg = {"arms": arms, "seed": 0, "max_batch": 1000,
           "policy": {"name": "delay_model_ts", "window": 100, "refresh": 10},
           "channel": {"kind": "conversions", "window": 100}}
    (tmp / "c.json").write_text(json.dumps(cfg))
    port = _port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    srv = subprocess.Popen([sys.executable, "-m", "jaxbandits.apps.cli", "serve", str(tmp / "c.json"), "--db",
                            str(tmp / "s.db"), "--port", str(port)], env=env, stdout=subprocess.DEVNULL)
    rng = np.random.default_rng(0)
    state = {"http": httpx.Client(timeout=60), "due": {}, "rate": dict(zip(arms, (0.10, 0.07, 0.04)))}
    page = None
    res = {"config": cfg, "seconds": a.seconds, "reps": a.reps, "cpus": os.cpu_count(),
           "load_start": os.getloadavg(), "phases": []}
    try:
        while True:
            try:
                if httpx.get(url + "/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        batches = [int(b) for b in a.batches.split(",")]
        for b in batches:  # compile every program the phases use
            drive(url, 3.0, b, rng, state)
        for b in batches:
            for rep in range(a.reps):
                for browser in ((False, True) if rep % 2 == 0 else (True, False)):  # ABBA: drifts cancel
                    if browser:
                        page = Page(url + "/dashboard", tmp)
                        while page.updates() < 1:
                            time.sleep(0.1)
                        u0 = page.updates()
                    rate = drive(url, a.seconds, b, rng, state)
                    polls = None
                    if browser:
                        polls = page.updates() - u0
                        page.close()
                        page = None
                    res["phases"].append({"batch": b, "rep": rep, "browser": browser, "decisions_per_s": rate,
                                          "page_updates": polls})
                    print(f"batch {b:4d} rep {rep} browser {'on ' if browser else 'off'}: {rate:9.1f} decisions/s"
                          + (f" ({polls} page updates)" if browser else ""), flush=True)
        if a.screenshot:
            page = Page(url + "/dashboard", tmp)
            while page.updates() < 2:
                time.sleep(0.1)
            shot = page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
            png = base64.b64decode(shot["data"])
            Path(a.screenshot).write_bytes(png)
        res["load_end"] = os.getloadavg()
        res["server_cost"] = server_cost(cfg, tmp)
        print(json.dumps(res["server_cost"]), flush=True)
        summary = {}
        for b in batches:
            for browser in (False, True):
                xs = [p["decisions_per_s"] for p in res["phases"] if p["batch"] == b and p["browser"] == browser]
                summary[f"batch {b}, browser {'on' if browser else 'off'}"] = {
                    "median": statistics.median(xs), "min": min(xs), "max": max(xs)}
        res["summary"] = summary
        print(json.dumps(summary, indent=1))
        Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    finally:
        if page is not None:
            page.close()
        srv.kill()
        srv.wait()


if __name__ == "__main__":
    main()
