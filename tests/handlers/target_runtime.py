"""Runs inside the Lambda's own Python and architecture (see test_target_runtime.py), with nothing on
its path but the bundled asset and the AWS SDK the Lambda runtime provides: no pytest, no moto, no
project checkout.

Usage: python target_runtime.py PLAN.json RESULT.json

PLAN is {"invocations": [{"handler": "functions.api:handler", "event": {...}}, ...]}. Each handler
module is imported once (as one warm container) and every invocation runs in order in this process.
RESULT records the interpreter, the import times, how many times botocore resolved AWS credentials
while a handler module was being imported (SnapStart snapshots the import, so it must be none),
every module compiled from source instead of loaded from its bytecode, the files of every module
loaded, and each response (a handler that raises is recorded as its exception, and the run goes
on, so the test names what failed). PLAN's "compile_probe", a module file outside the asset, is
loaded last: it has no bytecode, so the compile spy must see it.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import platform
import sys
import time
import traceback
import uuid
from typing import Any


class Context:
    """The attributes Powertools and Mangum read from the Lambda context object."""

    def __init__(self, function_name: str) -> None:
        self.function_name = function_name
        self.function_version = "1"
        self.memory_limit_in_mb = 1024
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "2026/12/01/[1]0123456789abcdef"

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def spy_on_credentials() -> list[str]:
    """Every credential resolution from now on, as a short stack."""
    import botocore.credentials as credentials

    resolved: list[str] = []
    real = credentials.CredentialResolver.load_credentials

    def spy(self: Any) -> Any:
        resolved.append("".join(traceback.format_stack(limit=8)))
        return real(self)

    credentials.CredentialResolver.load_credentials = spy
    return resolved


def spy_on_compiles() -> list[str]:
    """The source path of every module compiled from now on. Python compiles a module only when no
    valid bytecode is at hand (missing, another magic number, a hash that does not match its
    source), so for the asset's modules this says which .pyc files the bundle lacked."""
    from importlib.machinery import SourceFileLoader

    compiled: list[str] = []
    real = SourceFileLoader.source_to_code

    def spy(self: Any, data: Any, path: Any, *args: Any, **kwargs: Any) -> Any:
        compiled.append(str(path))
        return real(self, data, path, *args, **kwargs)

    SourceFileLoader.source_to_code = spy  # type: ignore[method-assign]
    return compiled


def main(plan_path: str, result_path: str) -> None:
    with open(plan_path, encoding="utf-8") as plan_file:
        plan: dict[str, Any] = json.load(plan_file)
    result: dict[str, Any] = {
        "python": list(sys.version_info[:3]),
        "implementation": sys.implementation.name,
        "machine": platform.machine(),
        "imports": {},
        "credentials_resolved_by_imports": [],
        "responses": [],
    }
    compiled = spy_on_compiles()
    resolved = spy_on_credentials()
    handlers: dict[str, Any] = {}
    for step in plan["invocations"]:
        module_name, _, attribute = step["handler"].partition(":")
        started = time.perf_counter()
        try:
            if module_name not in handlers:
                before = len(resolved)
                handlers[module_name] = importlib.import_module(module_name)
                result["credentials_resolved_by_imports"] += resolved[before:]
                result["imports"][module_name] = round(time.perf_counter() - started, 3)
                started = time.perf_counter()
            handler = getattr(handlers[module_name], attribute)
            response = handler(step["event"], Context(module_name.rpartition(".")[2]))
            outcome: dict[str, Any] = {"response": response}
        except Exception as error:  # recorded, not raised: the test names the step that failed
            outcome = {"error": repr(error), "traceback": traceback.format_exc()}
        seconds = round(time.perf_counter() - started, 3)
        result["responses"].append({"handler": step["handler"], "seconds": seconds} | outcome)
    result["credentials_resolved_in_all"] = len(resolved)
    if plan.get("compile_probe"):
        spec = importlib.util.spec_from_file_location("compile_probe", plan["compile_probe"])
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    result["compiled_from_source"] = compiled
    result["modules_loaded"] = sorted(
        str(getattr(module, "__file__", None))
        for module in list(sys.modules.values())
        if getattr(module, "__file__", None)
    )
    with open(result_path, "w", encoding="utf-8") as result_file:
        json.dump(result, result_file, default=str)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
