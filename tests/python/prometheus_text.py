"""Reads a /metrics endpoint in the Prometheus text format (the tests'
own small parser: series name, labels, value)."""

import re
import urllib.request

SERIES = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(port, host="127.0.0.1"):
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as response:
        return response.read().decode("utf-8")


def series(text):
    """[(name, {label: value}, float value)] of every sample line."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = SERIES.match(line)
        if match is None:
            raise ValueError(f"not a Prometheus sample line: {line!r}")
        labels = dict(LABEL.findall(match.group(2) or ""))
        out.append((match.group(1), labels, float(match.group(3))))
    return out


def value(text, name, **labels):
    """The value of the one sample `name` whose labels include `labels`;
    AssertionError when there is none or more than one."""
    found = [v for n, l, v in series(text)
             if n == name and all(l.get(k) == str(w) for k, w in labels.items())]
    assert len(found) == 1, f"{len(found)} samples of {name}{labels}"
    return found[0]
