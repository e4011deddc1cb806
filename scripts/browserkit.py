"""What the browser tests share (scripts/sink-browser-test, scripts/api-browser-test): JSON over HTTP, a WebDriver
session on Debian's chromium under chromedriver, and waiting for a condition."""
import json
import shutil
import time
import urllib.error
import urllib.request

# The name failures are reported under (set by the script).
NAME = "browser-test"


def log(message):
    print(f"{NAME}: {message}", flush=True)


def fail(message):
    raise SystemExit(f"{NAME}: FAILED: {message}")


def http(method, url, body=None, timeout=60, headers=None):
    """(status, JSON answer or text); `body` is sent as JSON."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            text = answer.read()
            return answer.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as error:
        text = error.read()
        try:
            return error.code, json.loads(text)
        except ValueError:
            return error.code, text.decode(errors="replace")


def answers(url):
    """True once `url` answers, else why not."""
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError as error:
        return str(error)


def wait_until(what, check, timeout=30.0):
    """Waits until `check()` returns True; fails with its last answer after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except OSError as error:
            last = str(error)
        if last is True:
            return
        time.sleep(0.1)
    fail(f"{what}: {last}")


class Browser:
    """A headless chromium session through chromedriver at `driver` (its WebDriver URL)."""

    def __init__(self, driver, window="1500,2200"):
        self.driver = driver
        capabilities = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": shutil.which("chromium") or "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         f"--window-size={window}"],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        }}}
        self.session = self._webdriver("POST", "/session", capabilities)["sessionId"]

    def _webdriver(self, method, path, body=None):
        status, answer = http(method, self.driver + path, body)
        if status != 200:
            fail(f"WebDriver {method} {path}: {status} {answer}")
        return answer["value"]

    def call(self, method, path, body=None):
        return self._webdriver(method, f"/session/{self.session}{path}", body)

    def open(self, url):
        self.call("POST", "/url", {"url": url})

    def run(self, script, *args):
        return self.call("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find(self, css):
        return self.call("POST", "/element", {"using": "css selector", "value": css})

    def type_into(self, css, text):
        element = self.find(css)
        key = next(iter(element))
        self.call("POST", f"/element/{element[key]}/clear", {})
        self.call("POST", f"/element/{element[key]}/value", {"text": text})

    def click(self, css):
        element = self.find(css)
        self.call("POST", f"/element/{element[next(iter(element))]}/click", {})

    def screenshot(self):
        import base64
        return base64.b64decode(self.call("GET", "/screenshot"))

    def console(self):
        return self.call("POST", "/se/log", {"type": "browser"})

    def close(self):
        http("DELETE", f"{self.driver}/session/{self.session}")
