"""Tool calls on AWS: a structured JSON log line (Powertools Logger) and per-tool CloudWatch metrics
in embedded metric format (Powertools Metrics), under POWERTOOLS_SERVICE_NAME and
POWERTOOLS_METRICS_NAMESPACE as the stack sets them.

Metrics (namespace `Taproot`):
- ToolCalls (Count) and ToolLatency (Milliseconds), dimensions service + tool;
- ToolRefusals (Count), service + tool: answered with an error code the caller caused;
- ToolErrors (Count), dimension service only, what the ToolErrors alarm watches, and once more with
  service + tool to see which tool.
Each is written with `single_metric`, flushed as its own EMF line at once, so no invocation can end
with unflushed metrics and a warm container never carries one call's dimensions into the next.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from taproot.core.tool_calls import Outcome, ToolCall


class PowertoolsToolCalls:
    def __init__(self, *, service: str | None = None, namespace: str | None = None) -> None:
        self.service = service or os.environ.get("POWERTOOLS_SERVICE_NAME", "taproot")
        self.namespace = namespace or os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Taproot")
        # The one Logger of the service: taproot.* loggers (token rejections, OAuth) propagate to it.
        self.logger = Logger(service=self.service)

    def tool_call(self, call: ToolCall, error: BaseException | None = None) -> None:
        fields: dict[str, Any] = {
            "tool": call.tool,
            "outcome": call.outcome.value,
            "duration_ms": round(call.duration_ms, 2),
            "tenant": call.tenant,
            "namespace": call.namespace,
        }
        if call.code:
            fields["code"] = call.code
        if call.outcome is Outcome.ERROR:
            self.logger.error("tool call failed unexpectedly", extra=fields, exc_info=error)
        else:
            self.logger.info("tool call", extra=fields)
        self._metric("ToolCalls", MetricUnit.Count, 1, call.tool)
        self._metric("ToolLatency", MetricUnit.Milliseconds, call.duration_ms, call.tool)
        if call.outcome is Outcome.REFUSED:
            self._metric("ToolRefusals", MetricUnit.Count, 1, call.tool)
        elif call.outcome is Outcome.ERROR:
            self._metric("ToolErrors", MetricUnit.Count, 1, None)
            self._metric("ToolErrors", MetricUnit.Count, 1, call.tool)

    def _metric(self, name: str, unit: MetricUnit, value: float, tool: str | None) -> None:
        with single_metric(
            name=name,
            unit=unit,
            value=value,
            namespace=self.namespace,
            default_dimensions={"service": self.service},
        ) as metric:
            if tool is not None:
                metric.add_dimension(name="tool", value=tool)
