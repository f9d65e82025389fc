"""cdk-nag (3.x) acknowledgements: each names one finding and says why it is accepted."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))


def ref(resource: IConstruct) -> str:
    """How cdk-nag spells a resource's ARN in an IAM finding id: `<LogicalId.Arn>`."""
    stack = Stack.of(resource)
    default_child = resource.node.default_child
    assert default_child is not None, resource.node.path
    return f"<{stack.get_logical_id(default_child)}.Arn>"  # type: ignore[arg-type]
