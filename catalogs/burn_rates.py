"""Multi-window, multi-burn-rate alerting on an SLO's error budget.

Source: Google, *The Site Reliability Workbook*, chapter "Alerting on SLOs", section 6 "Multiwindow, Multi-Burn-Rate
Alerts" (https://sre.google/workbook/alerting-on-slos/). Its recommended starting point, for a 30-day SLO window:

======== ============= ============ =========== =========
severity budget spent  long window  short window burn rate
======== ============= ============ =========== =========
page     2 %           1 hour       5 minutes   14.4
page     5 %           6 hours      30 minutes  6
ticket   10 %          3 days       6 hours     1
======== ============= ============ =========== =========

An alert fires when the error ratio over the long window *and* over the short window (1/12 of the long one, so the
alert stops soon after the burn stops) both exceed ``burn rate x error budget``. The burn rate is the budget share
spent in the long window scaled to the SLO window: ``share x SLO window / long window`` (2 % x 30 d / 1 h = 14.4).
The table's burn rates are that formula at 30 days; :func:`burn_rate` applies it to the SLO's own window, so each
alert still means "this share of the budget went in this long window" on a 28-day (or any) window.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class BurnRateWindow:
    severity: str
    """``page`` (someone acts now) or ``ticket`` (someone acts within working hours)."""
    budget_share: float
    """Share of the whole window's error budget spent within ``long`` that the alert reports."""
    long: str
    short: str


BURN_RATE_WINDOWS: tuple[BurnRateWindow, ...] = (
    BurnRateWindow("page", 0.02, "1h", "5m"),
    BurnRateWindow("page", 0.05, "6h", "30m"),
    BurnRateWindow("ticket", 0.10, "3d", "6h"),
)

WORKBOOK_URL = "https://sre.google/workbook/alerting-on-slos/"

BAD_MINUTE_STEP = "1m"
"""The SLI is judged once a minute: the recording rule group runs at this interval, subqueries step at it."""

SLI_WINDOW = BAD_MINUTE_STEP
"""The window the SLI reads each objective's metric over: the minute it judges. A rate read over the HPA's rule
window (often 30 s) once a minute would leave the rest of the minute unjudged."""

_PROMETHEUS_DURATION_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def prometheus_duration_seconds(text: str) -> float:
    """A Prometheus duration (``28d``, ``1h30m``; prometheus/common model.ParseDuration units ms s m h d w y)."""
    parts = re.findall(r"(\d+)(ms|s|m|h|d|w|y)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"'{text}' is not a duration; allowed: e.g. 28d, 30d, 4w, 72h")
    return sum(int(n) * _PROMETHEUS_DURATION_UNITS[u] for n, u in parts)


def burn_rate(window: BurnRateWindow, slo_window: str) -> float:
    """How many times faster than sustainable the budget burns when ``window.budget_share`` of it goes within
    ``window.long`` (a rate of 1 spends the budget exactly over the SLO window)."""
    return window.budget_share * prometheus_duration_seconds(slo_window) / prometheus_duration_seconds(window.long)
