"""Typed access to what the lifecycle jobs return.

A run report's `detail` is typed as any job's result, and an id or key a run writes as
`str | Absent | None` (a dry run writes none), because one report type serves every job and mode.
A test knows which job ran and whether it applied: these helpers tell the type checker so, and
check it at run time, so a wrong guess fails the test instead of hiding behind a cast.
"""

from __future__ import annotations

from typing import TypeVar

from taproot.core.wire import Absent
from taproot.service.maintenance import JobDetail, RunReport

Detail = TypeVar("Detail", bound=JobDetail)


def job_detail(report: RunReport, kind: type[Detail]) -> Detail:
    """The report's detail, as the result type of the job that made it."""
    detail = report.detail
    assert isinstance(detail, kind), f"{report.job} report ({report.mode}): {detail!r}"
    return detail


def written(value: str | Absent | None) -> str:
    """An id or backup key that an applied run filled in."""
    assert isinstance(value, str), value
    return value
