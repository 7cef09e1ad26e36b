"""Reliability suite: crash safety, concurrency, hostile input, secrets, faults, untrusted data.

Shared helpers live in ``reliability_helpers.py`` next to this file (put on ``sys.path`` here).
At the end of the run the suite's counts are printed, so CI output shows how much was tried.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reliability_helpers import COUNTS, SUMMARY_KEYS


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed and "reliability" in report.nodeid:
        COUNTS["failures"] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not COUNTS:
        return
    terminalreporter.write_sep("-", "reliability suite counts")
    line = ", ".join(f"{key}: {COUNTS[key]}" for key in SUMMARY_KEYS)
    terminalreporter.write_line(line)
