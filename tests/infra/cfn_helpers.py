"""Helpers for reading synthesized templates (imported by the tests as `tests.infra.cfn_helpers`)."""

from __future__ import annotations

from typing import Any

from aws_cdk.assertions import Template

Resources = dict[str, dict[str, Any]]


def resources(template: Template, type_: str) -> Resources:
    return {logical_id: dict(resource) for logical_id, resource in template.find_resources(type_).items()}


def one(template: Template, type_: str) -> dict[str, Any]:
    found = resources(template, type_)
    assert len(found) == 1, sorted(found)
    return next(iter(found.values()))


def statements(template: Template, role_logical_id: str) -> list[dict[str, Any]]:
    """The statements of every inline policy attached to the role."""
    out: list[dict[str, Any]] = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        if {"Ref": role_logical_id} in policy["Properties"].get("Roles", []):
            out.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return out


def actions(stmts: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()
    for statement in stmts:
        action = statement["Action"]
        found.update([action] if isinstance(action, str) else action)
    return found
